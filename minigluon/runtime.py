"""``mx.runtime``: which optional features this installation has (MXNet's ``Features``)."""
import collections

from . import backend


class Feature:
    """One feature: ``name`` and whether it is ``enabled`` here."""

    def __init__(self, name, enabled):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self):
        return '%s %s' % ('\u2714' if self.enabled else '\u2716', self.name)


def _cupy_has(module_name):
    if backend.cupy is None:
        return False
    try:
        __import__('cupy.' + module_name)
    except Exception:
        return False
    return True


def feature_list():
    """Every feature MXNet reports, enabled where minigluon provides it.

    Returns
    -------
    list of Feature
    """
    cuda = backend.num_gpus() > 0
    enabled = {
        'CUDA': cuda, 'CUDNN': cuda and _cupy_has('cuda.cudnn'),
        'NCCL': cuda and _cupy_has('cuda.nccl'), 'CUDA_RTC': cuda,
        'BLAS_OPEN': True, 'LAPACK': True,   # through numpy / CuPy
        'DIST_KVSTORE': True,                # the ZeroMQ parameter server
        'INT64_TENSOR_SIZE': True,           # numpy and CuPy index with int64
        'SIGNAL_HANDLER': False, 'DEBUG': False,
    }
    names = ['CUDA', 'CUDNN', 'NCCL', 'CUDA_RTC', 'TENSORRT', 'CPU_SSE', 'CPU_SSE2',
             'CPU_SSE3', 'CPU_SSE4_1', 'CPU_SSE4_2', 'CPU_SSE4A', 'CPU_AVX', 'CPU_AVX2',
             'OPENMP', 'SSE', 'F16C', 'JEMALLOC', 'BLAS_OPEN', 'BLAS_ATLAS', 'BLAS_MKL',
             'BLAS_APPLE', 'LAPACK', 'MKLDNN', 'OPENCV', 'CAFFE', 'PROFILER', 'DIST_KVSTORE',
             'CXX14', 'INT64_TENSOR_SIZE', 'SIGNAL_HANDLER', 'DEBUG', 'TVM_OP']
    return [Feature(name, enabled.get(name, False)) for name in names]


class Features(collections.OrderedDict):
    """Feature name -> :class:`Feature`, e.g. ``Features().is_enabled('CUDA')``."""

    def __init__(self):
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether ``feature_name`` (case-insensitive) is available.

        Raises
        ------
        RuntimeError
            For a name that is not a feature (as MXNet does).
        """
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError('Feature %r is unknown, known features are: %s'
                               % (feature_name, ', '.join(self)))
        return self[name].enabled
