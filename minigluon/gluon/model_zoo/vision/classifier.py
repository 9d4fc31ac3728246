"""The shape every vision model of the zoo shares: a ``features`` block, then an
``output`` block; subclasses build the two in their constructors."""
from ...block import HybridBlock


class Classifier(HybridBlock):
    """``output(features(x))``: the base of the zoo's vision models.

    Subclasses set ``self.features`` (the convolutional trunk, with its pooling) and
    ``self.output`` (the classifier head, usually one Dense layer), so that a
    pretrained trunk can be reused with a new ``output``.

    Inputs:
        - **data**: input tensor with shape `(batch_size, 3, height, width)`.

    Outputs:
        - **out**: output tensor with shape `(batch_size, classes)`, unnormalized scores.
    """

    def hybrid_forward(self, F, x):
        """``self.output(self.features(x))``.

        Parameters
        ----------
        F : module
            ``minigluon.ndarray``, the operator namespace.
        x : NDArray
            Images of shape `(batch_size, 3, height, width)`.

        Returns
        -------
        NDArray
            Scores of shape `(batch_size, classes)`.
        """
        return self.output(self.features(x))
