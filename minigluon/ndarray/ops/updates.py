"""MXNet's fused optimizer update ops: ``nd.sgd_update``, ``nd.adam_update``, ...

Each takes the weight, the gradient and the optimizer's state arrays, updates the states
in place (as MXNet's ops mutate them) and returns the new weight; call it with
``out=weight`` to update the weight in place too. The maths is MXNet's kernels
(``src/operator/optimizer_op-inl.h``): ``rescale_grad`` scales the gradient and a
``clip_gradient`` of 0 or more clips it.
"""
from ..registry import register


def _grad(xp, grad, rescale_grad, clip_gradient, weight=None, wd=0.0):
    """``rescale_grad * grad`` (plus ``wd * weight`` when given), clipped if asked."""
    g = rescale_grad * grad
    if weight is not None and wd:
        g = g + wd * weight
    if clip_gradient >= 0:
        g = xp.clip(g, -clip_gradient, clip_gradient)
    return g


@register('sgd_update', num_inputs=2, differentiable=False)
def sgd_update(xp, weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               lazy_update=True):
    """``weight - lr * (clip(rescale_grad * grad) + wd * weight)``."""
    return (1 - lr * wd) * weight - lr * _grad(xp, grad, rescale_grad, clip_gradient)


@register('sgd_mom_update', num_inputs=3, differentiable=False)
def sgd_mom_update(xp, weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, lazy_update=True):
    """``mom = momentum * mom - lr * (g + wd * weight)``, then ``weight + mom``."""
    mom *= momentum
    mom -= lr * wd * weight + lr * _grad(xp, grad, rescale_grad, clip_gradient)
    return weight + mom


@register('nag_mom_update', num_inputs=3, differentiable=False)
def nag_mom_update(xp, weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0):
    """Nesterov momentum: ``mom = momentum * mom - lr * (g + wd * weight)``, and the weight
    moves by ``momentum * mom_new - lr * (g + wd * weight)``."""
    step = lr * (_grad(xp, grad, rescale_grad, clip_gradient) + wd * weight)
    mom *= momentum
    out = weight - mom + (momentum + 1) * (mom - step)
    mom -= step
    return out


@register('signsgd_update', num_inputs=2, differentiable=False)
def signsgd_update(xp, weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    """``(1 - lr * wd) * weight - lr * sign(grad)``."""
    return (1 - lr * wd) * weight - lr * xp.sign(grad)


@register('signum_update', num_inputs=3, differentiable=False)
def signum_update(xp, weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                  clip_gradient=-1.0, wd_lh=0.0):
    """``mom = momentum * mom - (1 - momentum) * (g + wd * weight)``, then
    ``(1 - lr * wd_lh) * weight + lr * sign(mom)``."""
    mom *= momentum
    mom -= (1 - momentum) * (wd * weight + _grad(xp, grad, rescale_grad, clip_gradient))
    return (1 - lr * wd_lh) * weight + lr * xp.sign(mom)


@register('adam_update', num_inputs=4, differentiable=False)
def adam_update(xp, weight, grad, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True):
    """Adam without bias correction (the Python optimizer folds it into ``lr``)."""
    g = _grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    mean *= beta1
    mean += (1 - beta1) * g
    var *= beta2
    var += (1 - beta2) * g * g
    return weight - lr * mean / (xp.sqrt(var) + epsilon)


@register('ftml_update', num_inputs=5, differentiable=False)
def ftml_update(xp, weight, grad, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_grad=-1.0):
    """Follow the Moving Leader (Zheng & Kwok, 2017) at step ``t``."""
    g = _grad(xp, grad, rescale_grad, clip_grad, weight, wd)
    v *= beta2
    v += (1 - beta2) * g * g
    d_t = (1 - beta1 ** t) / lr * (xp.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z *= beta1
    z += (1 - beta1) * g - (d_t - beta1 * d) * weight
    d[...] = d_t
    return -z / d_t


@register('ftrl_update', num_inputs=4, differentiable=False)
def ftrl_update(xp, weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0,
                clip_gradient=-1.0):
    """Follow the Regularized Leader (McMahan et al., 2013) with L1 strength ``lamda1``."""
    g = _grad(xp, grad, rescale_grad, clip_gradient)
    z += g - (xp.sqrt(n + g * g) - xp.sqrt(n)) * weight / lr
    n += g * g
    return (xp.sign(z) * lamda1 - z) / ((beta + xp.sqrt(n)) / lr + wd) * (xp.abs(z) > lamda1)


@register('rmsprop_update', num_inputs=3, differentiable=False)
def rmsprop_update(xp, weight, grad, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, clip_weights=-1.0):
    """RMSProp (Tieleman & Hinton): ``n = gamma1 n + (1 - gamma1) g^2``,
    ``weight - lr g / sqrt(n + epsilon)``."""
    g = _grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    n *= gamma1
    n += (1 - gamma1) * g * g
    out = weight - lr * g / xp.sqrt(n + epsilon)
    return xp.clip(out, -clip_weights, clip_weights) if clip_weights >= 0 else out


@register('rmspropalex_update', num_inputs=5, differentiable=False)
def rmspropalex_update(xp, weight, grad, n, g, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8,
                       wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0):
    """RMSProp as in Graves (2013), with the running mean ``g`` of the gradient and the
    momentum ``delta``."""
    gr = _grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    n *= gamma1
    n += (1 - gamma1) * gr * gr
    g *= gamma1
    g += (1 - gamma1) * gr
    delta *= gamma2
    delta -= lr * gr / xp.sqrt(n - g * g + epsilon)
    out = weight + delta
    return xp.clip(out, -clip_weights, clip_weights) if clip_weights >= 0 else out
