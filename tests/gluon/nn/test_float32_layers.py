"""A small network of every layer type in ``gluon.nn``, trained in float32 and float64
from the same weights and inputs: every parameter's gradient agrees to 1e-3 of its
largest entry. A layer type added to ``gluon.nn`` without a place in the network fails
``test_every_layer_type_is_in_the_network``.
"""
import numpy as np

import minigluon as mx
from minigluon import nd
from minigluon.gluon import nn

BOUND = 1e-3


class EveryLayer(nn.HybridBlock):
    """Images ``(N, 3, 16, 16)`` through 2-D layers, their row means through 1-D layers,
    the images as one-channel volumes ``(N, 1, 3, 16, 16)`` through 3-D layers, tokens
    ``(N, 5)`` through an embedding; the four joined by a small classifier."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.image = nn.HybridSequential()
        self.image.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation('relu'),
                       nn.MaxPool2D(2), nn.Conv2DTranspose(8, 2, strides=2),
                       nn.InstanceNorm(), nn.LeakyReLU(0.1), nn.AvgPool2D(2),
                       nn.ReflectionPad2D(1), nn.Conv2D(8, 3), nn.BatchNormReLU(),
                       nn.HybridConcurrent(axis=1).add(
                           nn.Identity(), nn.Conv2D(8, 3, padding=1, use_bias=False)),
                       nn.PReLU())
        self.image_avg = nn.GlobalAvgPool2D()
        self.image_max = nn.GlobalMaxPool2D()
        self.rows = nn.HybridSequential()
        self.rows.add(nn.Conv1D(8, 3, padding=1), nn.ELU(), nn.MaxPool1D(2),
                      nn.Conv1DTranspose(8, 2, strides=2), nn.SELU(), nn.AvgPool1D(2),
                      nn.HybridLambda(lambda F, x: F.tanh(x)))
        self.volumes = nn.HybridSequential()
        self.volumes.add(nn.Conv3D(4, 3, padding=1), nn.GroupNorm(2), nn.MaxPool3D((1, 2, 2)),
                         nn.Conv3DTranspose(4, (1, 2, 2), strides=(1, 2, 2)),
                         nn.AvgPool3D((1, 2, 2)))
        self.volumes_avg = nn.GlobalAvgPool3D()
        self.volumes_max = nn.GlobalMaxPool3D()
        self.rows_avg = nn.GlobalAvgPool1D()
        self.rows_max = nn.GlobalMaxPool1D()
        self.tokens = nn.HybridSequential()
        self.tokens.add(nn.Embedding(20, 8), nn.LayerNorm(), nn.GELU(), nn.Flatten())
        self.head = nn.Sequential()
        self.head.add(nn.Concurrent(axis=1).add(nn.Dense(16), nn.Dense(16)), nn.Swish(),
                      nn.Dropout(0.3), nn.Lambda(lambda x: x * 0.5), nn.Dense(10))

    def hybrid_forward(self, F, images, tokens):
        feats = self.image(images)
        rows = self.rows(images.mean(axis=2))
        volumes = self.volumes(images.expand_dims(1))
        parts = [F.Flatten(self.image_avg(feats)), F.Flatten(self.image_max(feats)),
                 F.Flatten(self.rows_avg(rows)), F.Flatten(self.rows_max(rows)),
                 F.Flatten(self.volumes_avg(volumes)), F.Flatten(self.volumes_max(volumes)),
                 self.tokens(tokens)]
        return self.head(F.concat(*parts, dim=1))


def _layer_types(block, seen):
    seen.add(type(block))
    for child in block._children.values():
        _layer_types(child, seen)
    return seen


def test_every_layer_type_is_in_the_network():
    public = {getattr(nn, name) for name in dir(nn)
              if not name.startswith("_") and isinstance(getattr(nn, name), type)}
    layers = {cls for cls in public if issubclass(cls, nn.Block)
              and cls not in (nn.Block, nn.HybridBlock, nn.SymbolBlock)}
    missing = layers - _layer_types(EveryLayer(), set())
    assert not missing, 'gluon.nn layers without a float32 check: %s' % sorted(
        cls.__name__ for cls in missing)


def test_every_layer_float32_gradients_match_float64(float32_vs_float64, gradients_of):
    rng = np.random.RandomState(0)
    images = rng.standard_normal((8, 3, 16, 16)).astype(np.float32)
    tokens = rng.randint(0, 20, size=(8, 5)).astype(np.float32)
    labels = np.arange(8) % 10
    mx.random.seed(0)
    net = EveryLayer()
    net.initialize(mx.init.Xavier())
    net(nd.array(images), nd.array(tokens))  # deferred initialization draws random numbers

    def gradients(dtype):
        mx.random.seed(1)  # the same dropout mask in both passes
        return gradients_of(net, [images, tokens], labels, dtype)
    errors, kinks = float32_vs_float64(net, gradients)
    assert len(errors) == len([p for p in net.collect_params().values()
                               if p.grad_req != 'null'])
    worst = max(errors, key=errors.get)
    assert errors[worst] <= BOUND, 'float32 gradient of %s off by %.2e' % (worst, errors[worst])
    assert kinks.flipped == 0
