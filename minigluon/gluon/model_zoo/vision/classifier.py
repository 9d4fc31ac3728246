"""The shape every vision model of the zoo shares: a ``features`` block, then an
``output`` block; subclasses build the two in their constructors."""
from ...block import HybridBlock


class Classifier(HybridBlock):
    """``output(features(x))``."""

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))
