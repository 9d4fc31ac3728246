"""Optimizer updates: the one formula of each, and MXNet's update ops over them.

Each ``*_step`` function updates a weight and its state arrays in place, on raw arrays
(numpy or cupy). The optimizer classes of ``mx.optimizer`` call them on their parameters
(workers and parameter servers alike); the ops (``nd.sgd_update``, ``nd.adam_update``,
...) call them on a copy of the weight: as MXNet's ops, they update the states in place
and return the new weight, which ``out=weight`` writes back. The maths is MXNet's kernels
(``src/operator/optimizer_op-inl.h``); what an optimizer works out per step (the learning
rate with its multiplier and schedule, Adam's bias correction folded into it, the step
count) stays in its class, as in MXNet.

Gradient clipping follows MXNet's ops everywhere: ``clip_gradient >= 0`` clips the
rescaled gradient to ``[-clip_gradient, clip_gradient]``; a negative value (``-1``, the
default) turns it off. ``rescaled_grad`` is that rule.
"""
import functools

import numpy as np

from ... import backend
from ..registry import register
from . import compiled, host_threads, updates_cpu

NO_CLIP = -1.0


def rescaled_grad(xp, grad, rescale_grad, clip_gradient, weight=None, wd=0.0):
    """``rescale_grad * grad`` (plus ``wd * weight`` when ``wd``), clipped to
    ``[-clip_gradient, clip_gradient]`` when ``clip_gradient >= 0``, as a new array."""
    g = grad * rescale_grad
    if wd:
        g += wd * weight
    if clip_gradient >= 0:
        xp.clip(g, -clip_gradient, clip_gradient, out=g)
    return g


def _clip_weights(xp, weight, clip_weights):
    if clip_weights >= 0:
        xp.clip(weight, -clip_weights, clip_weights, out=weight)


# ---- SGD, NAG -----------------------------------------------------------------------
# The SGD formula step for step in the same order and dtype, as one CUDA kernel.
_CLIPPED = ('T g = grad * rescale; '
            'if (bound >= 0) g = g > bound ? bound : (g < -bound ? (T)(-bound) : g);')


@functools.lru_cache(maxsize=None)
def _momentum_kernel():
    return backend.cupy.ElementwiseKernel(
        'T grad, T lr, T lrwd, T momentum, T rescale, T bound', 'T weight, T mom',
        _CLIPPED + 'mom = mom * momentum; mom = mom - lrwd * weight; mom = mom - lr * g; '
        'weight = weight + mom;', 'minigluon_sgd_mom_update')


@functools.lru_cache(maxsize=None)
def _plain_kernel():
    return backend.cupy.ElementwiseKernel(
        'T grad, T lr, T wd, T rescale, T bound', 'T weight',
        _CLIPPED + 'g = g + wd * weight; weight = weight - lr * g;', 'minigluon_sgd_update')


def sgd_step(xp, weight, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient):
    """With ``g = clip(rescale_grad * grad)``: ``mom = momentum*mom - lr*wd*w - lr*g;
    w += mom``, or ``w -= lr * (g + wd*w)`` when ``mom`` is None. Unlike Adam's, MXNet's
    SGD kernels clip the gradient before weight decay is added."""
    if backend.is_device_array(weight):  # one kernel instead of seven
        if mom is None:
            _plain_kernel()(grad, lr, wd, rescale_grad, clip_gradient, weight)
        else:
            _momentum_kernel()(grad, lr, lr * wd, momentum, rescale_grad, clip_gradient,
                               weight, mom)
        return
    if mom is not None and _compiled_sgd(xp, weight, grad, mom, lr, wd, momentum,
                                          rescale_grad, clip_gradient):
        return
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    if mom is None:
        g += wd * weight
        weight -= lr * g
    else:
        mom *= momentum
        mom -= lr * wd * weight
        mom -= lr * g
        weight += mom


def warm_up():
    """Compile the SGD kernel for float32 now (or load it from numba's cache), when the
    compiled kernels are on. A parameter server applies updates on its I/O thread, which
    also sends its heartbeats: a first compile there took seconds on a loaded machine,
    long enough for the scheduler to declare the server dead."""
    if compiled.enabled():
        weight = np.zeros(1, np.float32)
        updates_cpu.sgd_momentum(weight, weight.copy(), weight.copy(),
                                 *(np.float32(0),) * 5)


def _compiled_sgd(xp, weight, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient):
    """SGD with momentum by the compiled kernel (``updates_cpu.py``), its elements split
    over the host threads; False (nothing done) when it does not apply."""
    arrays = (weight, grad, mom)
    if not compiled.applies(xp, *arrays) or \
            any(a.dtype != weight.dtype or not a.flags.c_contiguous for a in arrays):
        return False
    w, g, m = (a.reshape(-1) for a in arrays)
    scalar = weight.dtype.type
    # the numpy path's scalars: Python floats, rounded to the weight's dtype at each step
    args = (scalar(lr), scalar(lr * wd), scalar(momentum), scalar(rescale_grad),
            scalar(clip_gradient))
    host_threads.each_run(lambda lo, hi: updates_cpu.sgd_momentum(
        w[lo:hi], g[lo:hi], m[lo:hi], *args), w.shape[0], w.shape[0])
    return True


def nag_step(xp, weight, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient):
    """Nesterov momentum in MXNet's form: with ``s = lr * (clip(rescale_grad * grad) +
    wd*w)``, ``mom = momentum*mom; w = w - mom + (momentum+1) * (mom - s); mom -= s``.

    The momentum holds learning-rate-scaled steps; without momentum (``mom`` None) this
    is plain SGD, as MXNet's NAG calls ``sgd_update`` then.
    """
    if mom is None:
        sgd_step(xp, weight, grad, None, lr, wd, 0.0, rescale_grad, clip_gradient)
        return
    step = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    step += wd * weight
    step *= lr
    mom *= momentum
    ahead = mom - step
    ahead *= momentum + 1
    weight -= mom
    weight += ahead
    mom -= step


@register('sgd_update', num_inputs=2, differentiable=False)
def sgd_update(xp, weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=NO_CLIP,
               lazy_update=True):
    """``weight - lr * (clip(rescale_grad * grad) + wd * weight)``."""
    out = weight.copy()
    sgd_step(xp, out, grad, None, lr, wd, 0.0, rescale_grad, clip_gradient)
    return out


@register('sgd_mom_update', num_inputs=3, differentiable=False)
def sgd_mom_update(xp, weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=NO_CLIP, lazy_update=True):
    """``mom = momentum * mom - lr * wd * weight - lr * clip(rescale_grad * grad)``, then
    ``weight + mom``."""
    out = weight.copy()
    sgd_step(xp, out, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient)
    return out


@register('nag_mom_update', num_inputs=3, differentiable=False)
def nag_mom_update(xp, weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=NO_CLIP):
    """Nesterov momentum: with ``s = lr * (clip(rescale_grad * grad) + wd * weight)``,
    ``mom = momentum * mom``, the new weight is ``weight - mom + (momentum + 1) * (mom - s)``
    and ``mom -= s``."""
    out = weight.copy()
    nag_step(xp, out, grad, mom, lr, wd, momentum, rescale_grad, clip_gradient)
    return out


# ---- Signum / signSGD ---------------------------------------------------------------
def signum_step(xp, weight, grad, mom, lr, wd, momentum, wd_lh, rescale_grad, clip_gradient):
    """``mom = momentum*mom - (1-momentum) * (clip(rescale_grad*grad) + wd*w);
    w = (1-lr*wd_lh)*w + lr*sign(mom)``; without ``mom`` (signSGD) ``w = (1-lr*(wd+wd_lh))*w
    - lr*sign(grad)``, the raw gradient's sign."""
    if mom is None:
        sign = xp.sign(grad)
        weight *= 1 - lr * (wd + wd_lh)
        weight -= lr * sign
        return
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    g += wd * weight
    mom *= momentum
    mom -= (1 - momentum) * g
    if wd_lh:
        weight *= 1 - lr * wd_lh
    weight += lr * xp.sign(mom)


@register('signsgd_update', num_inputs=2, differentiable=False)
def signsgd_update(xp, weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=NO_CLIP):
    """``(1 - lr * wd) * weight - lr * sign(grad)``."""
    out = weight.copy()
    signum_step(xp, out, grad, None, lr, wd, 0.0, 0.0, rescale_grad, clip_gradient)
    return out


@register('signum_update', num_inputs=3, differentiable=False)
def signum_update(xp, weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                  clip_gradient=NO_CLIP, wd_lh=0.0):
    """``mom = momentum * mom - (1 - momentum) * (g + wd * weight)``, then
    ``(1 - lr * wd_lh) * weight + lr * sign(mom)``."""
    out = weight.copy()
    signum_step(xp, out, grad, mom, lr, wd, momentum, wd_lh, rescale_grad, clip_gradient)
    return out


# ---- Adam, FTML ---------------------------------------------------------------------
def adam_step(xp, weight, grad, mean, var, lr, wd, beta1, beta2, epsilon, rescale_grad,
              clip_gradient):
    """``g = clip(rescale_grad*grad + wd*w)``; ``mean, var`` its moving averages and
    ``w -= lr * mean / (sqrt(var) + epsilon)``: no bias correction (the class folds it
    into ``lr``, as MXNet's)."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    mean *= beta1
    mean += (1 - beta1) * g
    var *= beta2
    var += (1 - beta2) * g * g
    weight -= lr * mean / (xp.sqrt(var) + epsilon)


@register('adam_update', num_inputs=4, differentiable=False)
def adam_update(xp, weight, grad, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_gradient=NO_CLIP, lazy_update=True):
    """Adam without bias correction (the optimizer folds it into ``lr``)."""
    out = weight.copy()
    adam_step(xp, out, grad, mean, var, lr, wd, beta1, beta2, epsilon, rescale_grad,
              clip_gradient)
    return out


def ftml_step(xp, weight, grad, d_prev, v, z, lr, wd, t, beta1, beta2, epsilon, rescale_grad,
              clip_gradient):
    """Follow the Moving Leader (Zheng & Kwok, 2017) at step ``t``, with
    ``g = clip(rescale_grad*grad + wd*w)``: ``v = b2*v + (1-b2)*g^2;
    d = (1-b1^t)/lr * (sqrt(v/(1-b2^t)) + eps); z = b1*z + (1-b1)*g - (d - b1*d_prev)*w;
    w = -z/d``."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    v *= beta2
    v += (1 - beta2) * g * g
    d = (1 - beta1 ** t) / lr * (xp.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z *= beta1
    z += (1 - beta1) * g - (d - beta1 * d_prev) * weight
    d_prev[...] = d
    weight[...] = -z / d


@register('ftml_update', num_inputs=5, differentiable=False)
def ftml_update(xp, weight, grad, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_grad=NO_CLIP):
    """Follow the Moving Leader (Zheng & Kwok, 2017) at step ``t``."""
    out = weight.copy()
    ftml_step(xp, out, grad, d, v, z, lr, wd, t, beta1, beta2, epsilon, rescale_grad, clip_grad)
    return out


# ---- FTRL ---------------------------------------------------------------------------
def ftrl_step(xp, weight, grad, z, n, lr, wd, lamda1, beta, rescale_grad, clip_gradient):
    """With ``g = clip(rescale_grad*grad)``: ``z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr;
    n += g^2; w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1)``."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient)
    z += g - (xp.sqrt(n + g * g) - xp.sqrt(n)) * weight / lr
    n += g * g
    weight[...] = ((xp.sign(z) * lamda1 - z) / ((beta + xp.sqrt(n)) / lr + wd)
                   * (xp.abs(z) > lamda1))


@register('ftrl_update', num_inputs=4, differentiable=False)
def ftrl_update(xp, weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0,
                clip_gradient=NO_CLIP):
    """Follow the Regularized Leader (McMahan et al., 2013) with L1 strength ``lamda1``."""
    out = weight.copy()
    ftrl_step(xp, out, grad, z, n, lr, wd, lamda1, beta, rescale_grad, clip_gradient)
    return out


# ---- RMSProp ------------------------------------------------------------------------
def rmsprop_step(xp, weight, grad, n, lr, wd, gamma1, epsilon, rescale_grad, clip_gradient,
                 clip_weights=NO_CLIP):
    """With ``g = clip(rescale_grad*grad + wd*w)``: ``n = gamma1*n + (1-gamma1)*g^2;
    w -= lr * g / sqrt(n + epsilon)``, then ``w`` clipped when ``clip_weights >= 0``."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    n *= gamma1
    n += (1 - gamma1) * g * g
    weight -= lr * g / xp.sqrt(n + epsilon)
    _clip_weights(xp, weight, clip_weights)


def rmspropalex_step(xp, weight, grad, n, g_avg, delta, lr, wd, gamma1, gamma2, epsilon,
                     rescale_grad, clip_gradient, clip_weights=NO_CLIP):
    """Centered RMSProp (Graves, 2013): ``n`` and ``g_avg`` are running means of ``g^2``
    and ``g``; ``delta = gamma2*delta - lr * g / sqrt(n - g_avg^2 + epsilon); w += delta``."""
    g = rescaled_grad(xp, grad, rescale_grad, clip_gradient, weight, wd)
    n *= gamma1
    n += (1 - gamma1) * g * g
    g_avg *= gamma1
    g_avg += (1 - gamma1) * g
    delta *= gamma2
    delta -= lr * g / xp.sqrt(n - g_avg * g_avg + epsilon)
    weight += delta
    _clip_weights(xp, weight, clip_weights)


@register('rmsprop_update', num_inputs=3, differentiable=False)
def rmsprop_update(xp, weight, grad, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
                   clip_gradient=NO_CLIP, clip_weights=NO_CLIP):
    """RMSProp (Tieleman & Hinton): ``n = gamma1 n + (1 - gamma1) g^2``,
    ``weight - lr g / sqrt(n + epsilon)``."""
    out = weight.copy()
    rmsprop_step(xp, out, grad, n, lr, wd, gamma1, epsilon, rescale_grad, clip_gradient,
                 clip_weights)
    return out


@register('rmspropalex_update', num_inputs=5, differentiable=False)
def rmspropalex_update(xp, weight, grad, n, g, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8,
                       wd=0.0, rescale_grad=1.0, clip_gradient=NO_CLIP, clip_weights=NO_CLIP):
    """RMSProp as in Graves (2013), with the running mean ``g`` of the gradient and the
    momentum ``delta``."""
    out = weight.copy()
    rmspropalex_step(xp, out, grad, n, g, delta, lr, wd, gamma1, gamma2, epsilon, rescale_grad,
                     clip_gradient, clip_weights)
    return out
