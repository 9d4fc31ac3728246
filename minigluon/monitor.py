"""``mx.monitor.Monitor``: statistics of the arrays an executor computes, for debugging.

An installed executor reports every node's outputs as its forward runs (``fc1_output``;
with ``monitor_all`` also each node's inputs first), and the gradients each node's
backward produces (``fc1_backward_output0``...), named as MXNet names them. ``tic()``
starts collecting for a batch (every ``interval`` batches), ``toc()`` adds the
arguments and auxiliary states and returns the statistics.
"""
import logging
import re
from math import sqrt

from . import ndarray
from .ndarray import NDArray

__all__ = ['Monitor']


def _norm_stat(x):
    """``norm(x) / sqrt(size)``, MXNet's default statistic."""
    return ndarray.norm(x) / sqrt(x.size)


class Monitor:
    """Collect statistics of the inputs, outputs, weights and gradients of executors.

    Parameters
    ----------
    interval : int
        Batches between collections (``tic`` collects on every ``interval``-th call).
    stat_func : callable, optional
        NDArray -> NDArray (or a list of them): the statistic; ``norm(x)/sqrt(x.size)``
        by default.
    pattern : str
        A regular expression; only arrays whose names match it from the start are
        collected (``'.*weight|.*output'``, ``'.*backward.*'`` for the gradients).
    sort : bool
        Sort the results by name.
    monitor_all : bool
        Also report each node's inputs, not only its outputs.
    """

    def __init__(self, interval, stat_func=None, pattern='.*', sort=False, monitor_all=False):
        self.stat_func = _norm_stat if stat_func is None else stat_func
        self.interval = interval
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name, array):
        """The executor's callback: record ``stat_func(array)`` while collecting."""
        if not self.activated or not self.re_prog.match(name):
            return
        self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe):
        """Report ``exe``'s arrays (an Executor of ``Symbol.bind``) to this monitor; a
        monitor may watch several executors."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Start collecting for the coming batch when it is an ``interval``-th one; call
        before forward."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Stop collecting and return the results as ``(step, name, values)`` triples
        (``values``: the statistics as text, each followed by a tab); the arguments and
        auxiliary states of the executors come after what forward and backward
        reported. Call after the batch's computation."""
        if not self.activated:
            return []
        for exe in self.exes:
            for name, array in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda entry: entry[1])
        res = []
        for step, name, stats in self.queue:
            if isinstance(stats, NDArray):
                stats = [stats]
            if not isinstance(stats, (list, tuple)) or \
                    not all(isinstance(v, NDArray) for v in stats):
                raise TypeError('Monitor: stat_func must return an NDArray or a list of '
                                'NDArrays; for %r it returned %s'
                                % (name, type(stats).__name__))
            text = ''
            for value in stats:
                text += (str(value.asscalar()) if value.shape == (1,)
                         else str(value.asnumpy())) + '\t'
            res.append((step, name, text))
        self.queue = []
        return res

    def toc_print(self):
        """``toc()``, logging each result as ``Batch: <step> <name> <values>``."""
        for step, name, text in self.toc():
            logging.info('Batch: {:7d} {:30s} {:s}'.format(step, name, text))
