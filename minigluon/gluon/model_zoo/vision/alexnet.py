"""AlexNet ("One weird trick for parallelizing convolutional neural networks"), laid out
as MXNet's model zoo so parameter paths and counts match it."""
from ... import nn
from ..model_store import load_pretrained
from .classifier import Classifier

__all__ = ['AlexNet', 'alexnet']

MODELS = {}  # registry name -> constructor, filled below


class AlexNet(Classifier):
    """AlexNet: five convolutions and three max-pools in ``features``, then two 4096-unit
    Dense layers with Dropout, and the ``output`` Dense.

    Parameters
    ----------
    classes : int, default 1000
        Number of output classes.

    Inputs: ``(N, 3, 224, 224)`` images. Outputs: ``(N, classes)``.
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.Conv2D(64, kernel_size=11, strides=4, padding=2,
                                        activation='relu'),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              nn.Conv2D(192, kernel_size=5, padding=2, activation='relu'),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              nn.Conv2D(384, kernel_size=3, padding=1, activation='relu'),
                              nn.Conv2D(256, kernel_size=3, padding=1, activation='relu'),
                              nn.Conv2D(256, kernel_size=3, padding=1, activation='relu'),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              nn.Flatten(),
                              nn.Dense(4096, activation='relu'), nn.Dropout(0.5),
                              nn.Dense(4096, activation='relu'), nn.Dropout(0.5))
            self.output = nn.Dense(classes)


def alexnet(pretrained=False, ctx=None, root=None, **kwargs):
    """AlexNet; ``kwargs`` go to ``AlexNet`` (``classes``).

    Parameters
    ----------
    pretrained : bool, default False
        Load MXNet's published ImageNet weights (see ``model_store.get_model_file``).
    ctx : Context, optional
        Where to load the pretrained weights.
    root : str, optional
        Folder of the weight files; ``model_store.default_root()`` by default.
    """
    net = AlexNet(**kwargs)
    return load_pretrained(net, 'alexnet', pretrained, ctx, root)


MODELS['alexnet'] = alexnet
