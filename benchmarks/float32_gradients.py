"""Float32 gradients of ResNet-18 (CIFAR stem) against float64 and against PyTorch.

Usage:
    python benchmarks/float32_gradients.py [--seeds 10] [--batch-size 8] [--smoke]

For each seed: Xavier weights and a batch of normal images, the gradients of every
parameter for the summed softmax cross-entropy in minigluon float32 and float64, and
in a PyTorch twin of the network holding the same weights (float32 and float64). Each
column is the worst parameter's ``max |a - b| / max |b|``; ``flips`` counts the ReLU
inputs whose sign differs between float32 and float64 forward passes, in each framework.

A ReLU input within float32 rounding of zero lands on either side of it, in either
framework; its gradient then changes by that element's whole output gradient, which
moves the parameters' gradients by 1e-3 to 1e-1 of their largest entry. So both
frameworks show such seeds; between them the two agree to about 1e-5. PyTorch is for
the comparison only (``pip install -r benchmarks/requirements.txt``). ``--smoke`` runs
one seed of batch 2 (the test suite's check that the script still works).

Parameters are matched by their structural names (``features.1.0.body.0.weight``, as
``save_parameters`` writes them), not by ``collect_params()``'s prefixed names
(``resnetv10_stage1_conv0_weight``), which follow Gluon's block counters; the run stops
if the twin leaves a trainable parameter out.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def by_structural_name(net):
    """{structural name: Parameter}: the path of each parameter from the root block,
    which the twin below is written in; collect_params() keys the same Parameters by
    prefixed names that depend on how many blocks were made before."""
    paths = {id(p): path for path, p in net._collect_params_with_prefix().items()}
    return {paths[id(p)]: p for p in net.collect_params().values()}


def minigluon_gradients(net, x, y, dtype, relu_inputs):
    from minigluon import autograd, gluon, nd
    net.cast(dtype)
    relu_inputs.clear()
    with autograd.record():
        loss = gluon.loss.SoftmaxCrossEntropyLoss()(net(nd.array(x, dtype=dtype)),
                                                     nd.array(y, dtype=dtype))
    loss.backward()
    return {k: p.grad().asnumpy().astype(np.float64)
            for k, p in by_structural_name(net).items() if p.grad_req != 'null'}


def torch_gradients(weights, x, y, dtype, relu_inputs):
    """The same network written with torch.nn.functional, parameters by structural name."""
    import torch
    import torch.nn.functional as F
    P = {k: torch.tensor(v, dtype=dtype, requires_grad=True) for k, v in weights.items()}
    relu_inputs.clear()

    def relu(h):
        relu_inputs.append(h.detach().numpy().astype(np.float64))
        return F.relu(h)

    def conv_bn(h, conv, bn, stride, pad):
        h = F.conv2d(h, P[conv + '.weight'], stride=stride, padding=pad)
        return F.batch_norm(h, None, None, P[bn + '.gamma'], P[bn + '.beta'], training=True,
                            eps=1e-5)
    h = F.conv2d(torch.tensor(x, dtype=dtype), P['features.0.weight'], padding=1)
    for stage in range(1, 5):
        for block in range(2):
            pre = 'features.%d.%d.' % (stage, block)
            stride = 2 if stage > 1 and block == 0 else 1
            shortcut = h
            if pre + 'downsample.0.weight' in P:
                shortcut = conv_bn(h, pre + 'downsample.0', pre + 'downsample.1', stride, 0)
            out = relu(conv_bn(h, pre + 'body.0', pre + 'body.1', stride, 1))
            h = relu(conv_bn(out, pre + 'body.3', pre + 'body.4', 1, 1) + shortcut)
    logits = h.mean(dim=(2, 3)) @ P['output.weight'].T + P['output.bias']
    F.cross_entropy(logits, torch.tensor(y), reduction='sum').backward()
    return {k: v.grad.numpy().astype(np.float64) for k, v in P.items() if v.grad is not None}


def worst(a, b):
    return max(np.abs(a[k] - b[k]).max() / np.abs(b[k]).max() for k in b)


def sign_changes(single, double):
    return sum(int(((a > 0) != (b > 0)).sum()) for a, b in zip(single, double))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, default=10)
    parser.add_argument('--batch-size', type=int, default=8)
    parser.add_argument('--smoke', action='store_true',
                        help='one seed of batch 2: does it run?')
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.batch_size = 1, 2
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.exit('PyTorch is not installed: pip install -r benchmarks/requirements.txt')
    import minigluon as mx
    from minigluon import nd
    from minigluon.gluon.model_zoo import vision
    from minigluon.ndarray.registry import all_ops

    relu_inputs = []
    activation = all_ops()['Activation']
    forward = activation.forward

    def recording(xp, data, **kwargs):
        if kwargs.get('act_type') == 'relu':
            relu_inputs.append(data.astype(np.float64))
        return forward(xp, data, **kwargs)
    activation.forward = recording

    print('%d images of 32x32 per seed; each column: the worst of the trainable parameters'
          % args.batch_size)
    compared = 0
    print('seed  mg32/mg64  torch32/torch64  mg32/torch32  mg64/torch64  flips mg  flips torch')
    for seed in range(args.seeds):
        mx.random.seed(seed)
        net = vision.resnet18_v1(classes=10, thumbnail=True)
        net.initialize(mx.init.Xavier())
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((args.batch_size, 3, 32, 32)).astype(np.float32)
        y = np.arange(args.batch_size) % 10
        net(nd.array(x))
        weights = {k: p.data().asnumpy() for k, p in by_structural_name(net).items()}
        m32 = minigluon_gradients(net, x, y, 'float32', relu_inputs)
        r32 = list(relu_inputs)
        m64 = minigluon_gradients(net, x, y, 'float64', relu_inputs)
        flips = sign_changes(r32, relu_inputs)
        t32 = torch_gradients(weights, x, y, torch.float32, relu_inputs)
        r32 = list(relu_inputs)
        t64 = torch_gradients(weights, x, y, torch.float64, relu_inputs)
        if set(t32) != set(m32):  # worst() would skip what the twin left out
            sys.exit('the PyTorch twin does not use the same trainable parameters: only '
                     'minigluon has %s, only the twin %s'
                     % (sorted(set(m32) - set(t32)), sorted(set(t32) - set(m32))))
        print('%4d  %9.1e  %15.1e  %12.1e  %12.1e  %8d  %11d' % (
            seed, worst(m32, m64), worst(t32, t64), worst(m32, t32), worst(m64, t64), flips,
            sign_changes(r32, relu_inputs)))
        compared = len(t32)
    activation.forward = forward
    print('trainable parameters compared per seed: %d, all of them' % compared)


if __name__ == '__main__':
    main()
