"""``gluon.data.vision``: image data sets and transforms."""
from . import transforms
from .datasets import (CIFAR10, CIFAR100, MNIST, DatasetNotFoundError, FashionMNIST,
                       ImageFolderDataset, ImageListDataset, ImageRecordDataset)
