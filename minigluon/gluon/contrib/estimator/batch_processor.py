"""What the Estimator does with one batch: forward, loss and backward."""
from .... import autograd
from ...utils import split_and_load

__all__ = ['BatchProcessor']


class BatchProcessor:
    """The Estimator's work on one batch, in training and in validation.

    Subclass it and override ``fit_batch`` or ``evaluate_batch`` for models whose
    batches are not ``(data, label)`` pairs or whose step is not forward, loss,
    backward; pass the instance as ``Estimator(..., batch_processor=...)``.
    """

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        """Split a ``(data, label)`` batch over the devices ``ctx``."""
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis, even_split=False)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis, even_split=False)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Evaluate ``estimator.val_net`` on a batch of validation data.

        Parameters
        ----------
        estimator : Estimator
            The Estimator running the evaluation.
        val_batch : tuple
            ``(data, label)`` from the validation DataLoader.
        batch_axis : int, default 0
            The axis of the samples, along which the batch is split over the devices.

        Returns
        -------
        data, label, pred, loss : lists of NDArray
            One entry per device: its slice of the data and labels, the predictions and
            the per-sample losses (``estimator.val_loss``).
        """
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Forward and backward on a batch of training data (the update is a handler's).

        Parameters
        ----------
        estimator : Estimator
            The Estimator running the training.
        train_batch : tuple
            ``(data, label)`` from the training DataLoader.
        batch_axis : int, default 0
            The axis of the samples, along which the batch is split over the devices.

        Returns
        -------
        data, label, pred, loss : lists of NDArray
            One entry per device: its slice of the data and labels, the predictions and
            the per-sample losses, whose gradients have been computed.
        """
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        autograd.backward(loss)
        return data, label, pred, loss
