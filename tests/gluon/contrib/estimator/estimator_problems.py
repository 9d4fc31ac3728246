"""Small real problems for the Estimator tests."""
import numpy as np

from minigluon import gluon, nd


def regression_data(samples=10, batch_size=4):
    """MXNet's estimator test data: 3 features to 4 targets, uniform."""
    x = nd.random.uniform(shape=(samples, 3))
    y = nd.random.uniform(shape=(samples, 4))
    return gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=batch_size)


def blob_dataset(samples=64, classes=3, seed=0):
    """Three well separated clusters in 10 dimensions, labels 0..2: learnable in an epoch.

    The clusters are always the same; ``seed`` draws the samples around them.
    """
    centres = np.random.RandomState(0).normal(0, 3, size=(classes, 10))
    rng = np.random.RandomState(seed + 1)
    labels = np.arange(samples) % classes
    x = centres[labels] + rng.normal(0, 0.5, size=(samples, 10))
    return gluon.data.ArrayDataset(nd.array(x), nd.array(labels))


def blobs(samples=64, batch_size=8, seed=0, shuffle=False):
    """A DataLoader of ``blob_dataset``."""
    return gluon.data.DataLoader(blob_dataset(samples, seed=seed), batch_size=batch_size,
                                 shuffle=shuffle)


def mlp(classes=3):
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(16, activation='relu'), gluon.nn.Dense(classes))
    return net


def regression_net():
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(4, activation='relu', flatten=False))
    return net
