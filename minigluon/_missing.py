"""What minigluon offers instead of the modules of MXNet 1.x it leaves out: a clear
error for ``mx.engine`` and the like (see README's "Coming from MXNet"), and the
``__getattr__`` of the placeholder modules (``mx.np``, ``mx.npx``, ``mx.nd.sparse``)
that load but refuse every name."""
from .base import MXNetAttributeError, MXNetError

# MXNet 1.x module -> what to do in minigluon
MODULES = {
    'engine': 'minigluon runs every op at once, so there is no engine to tune (bulking, '
              'set_bulk_size): drop the call',
    'executor_manager': 'the old FeedForward executor manager is gone; use mx.mod.Module or '
                        'Gluon (mx.gluon.Trainer)',
    'rtc': 'write the CUDA kernel with CuPy (cupy.RawKernel) inside an '
           'mx.operator.CustomOp',
    'library': 'C++ operator libraries cannot be loaded; write the op in Python with '
               'mx.operator.CustomOp',
    'tvmop': 'TVM operators are not part of minigluon; use mx.nd',
    'onnx': 'ONNX export/import is not part of minigluon; HybridBlock.export writes MXNet '
            "1.x's -symbol.json and .params, which MXNet's own mx.onnx converts",
    'torch': 'the Torch bridge is not part of minigluon; move arrays with mx.nd.from_dlpack '
             '/ to_dlpack_for_read',
    'th': 'the Torch bridge is not part of minigluon; move arrays with mx.nd.from_dlpack / '
          'to_dlpack_for_read',
    'notebook': 'the notebook callbacks are not part of minigluon; use mx.callback.Speedometer '
                'or mx.gluon.contrib.estimator',
    'log': 'use the standard logging module (logging.getLogger)',
    'libinfo': 'there is no native library: mx.runtime.Features() lists what this build offers',
    'executor': "executors come from mx.sym: Symbol.bind / simple_bind return one "
                "(mx.symbol.Executor)",
    'error': 'the error types are in mx.base: MXNetError and its ValueError/TypeError/'
             'IndexError subclasses',
    'space': 'search spaces are not part of minigluon',
    'api': 'the FFI layer is not part of minigluon; use mx.nd and mx.sym',
    'cython': 'there is no Cython layer in minigluon',
    'symbol_doc': 'the docstrings are on the mx.sym functions themselves',
    'ndarray_doc': 'the docstrings are on the mx.nd functions themselves',
    'misc': 'use mx.lr_scheduler for learning-rate schedules',
}

CONTRIB = {
    'quantization': 'INT8 quantization is not part of minigluon; keep float32 (or cast with '
                    "net.cast('float16'))",
    'quant': 'INT8 quantization is not part of minigluon; keep float32 (or cast with '
             "net.cast('float16'))",
    'amp': "automatic mixed precision is not part of minigluon; cast with net.cast('float16')",
    'onnx': MODULES['onnx'],
    'tensorboard': 'the TensorBoard callback is not part of minigluon; log metric.get() values '
                   'with your own writer',
    'text': 'mx.contrib.text is not part of minigluon (GluonNLP replaced it)',
    'svrg_optimization': 'SVRG is not part of minigluon; use mx.optimizer or mx.gluon.Trainer',
    'autograd': 'mx.contrib.autograd was replaced by mx.autograd: use it',
    'tensorrt': 'TensorRT is not part of minigluon',
}


def missing(package, table, name):
    """The error for ``package.name`` (an AttributeError that says what to do instead)."""
    if name in table:
        return MXNetAttributeError('%s.%s: MXNet 1.x has it, minigluon does not; %s'
                                   % (package.replace('minigluon', 'mx'), name, table[name]))
    return AttributeError('module %r has no attribute %r' % (package, name))


def refuse_every_name(module, advice):
    """A module ``__getattr__`` that raises, for any public ``name``, the MXNetError
    ``'<module>.<name>: <advice>'`` (dunder lookups stay plain AttributeErrors)."""
    def __getattr__(name):  # pylint: disable=invalid-name
        if name.startswith('__'):
            raise AttributeError(name)
        raise MXNetError('%s.%s: %s' % (module, name, advice))
    return __getattr__
