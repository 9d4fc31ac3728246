"""``mx.nd``: NDArray, creation functions and one function per op in the table."""
from . import contrib, image, linalg, random
from . import sparse  # importable as in MXNet; using it explains what to do instead
from . import utils
from . import _internal
from .. import backend as _backend
from .creation import arange, array, empty, eye, full, linspace, ones, zeros
from .dtypes import SUPPORTED_DTYPES
from .functions import add_n, concatenate, histogram, moveaxis, onehot_encode, reset_arrays
from .functions import all_finite as _all_finite, multi_all_finite as _multi_all_finite
from .custom import Custom
from .interop import from_dlpack, from_numpy, to_dlpack_for_read, to_dlpack_for_write
from .ndarray import NDArray, op_function as _op_function
from .registry import all_ops as _all_ops
from .sample import (sample_exponential, sample_gamma,
                     sample_generalized_negative_binomial, sample_negative_binomial,
                     sample_normal, sample_poisson, sample_uniform)
from .serialization import load, load_frombuffer, save


for _name, _op in _all_ops().items():
    if not _name.startswith('_'):
        globals()[_name] = _op_function(_op)

# MXNet's other spellings of the same ops.
for _alias, _target in [('broadcast_add', 'add'), ('elemwise_add', 'add'), ('plus', 'add'),
                        ('broadcast_sub', 'subtract'), ('elemwise_sub', 'subtract'),
                        ('minus', 'subtract'), ('broadcast_minus', 'subtract'),
                        ('broadcast_mul', 'multiply'), ('elemwise_mul', 'multiply'),
                        ('broadcast_div', 'divide'), ('elemwise_div', 'divide'),
                        ('true_divide', 'divide'), ('broadcast_mod', 'mod'),
                        ('broadcast_power', 'power'), ('broadcast_maximum', 'maximum'),
                        ('broadcast_minimum', 'minimum'), ('broadcast_equal', 'equal'),
                        ('broadcast_not_equal', 'not_equal'), ('broadcast_greater', 'greater'),
                        ('broadcast_greater_equal', 'greater_equal'),
                        ('broadcast_lesser', 'lesser'), ('broadcast_lesser_equal', 'lesser_equal'),
                        ('broadcast_hypot', 'hypot'), ('Flatten', 'flatten'),
                        ('Concat', 'concat'), ('SliceChannel', 'split'),
                        ('broadcast_axes', 'broadcast_axis'), ('Reshape', 'reshape'),
                        ('SwapAxis', 'swapaxes'), ('Cast', 'cast'), ('Pad', 'pad'),
                        ('crop', 'slice'), ('reverse', 'flip'), ('ctc_loss', 'CTCLoss'),
                        ('choose_element_0index', 'pick'), ('stop_gradient', 'BlockGrad'),
                        ('Softmax', 'SoftmaxOutput'), ('identity', 'copy'),
                        ('broadcast_plus', 'add'), ('modulo', 'mod'), ('max_axis', 'max'),
                        ('min_axis', 'min'), ('sum_axis', 'sum'),
                        ('broadcast_logical_and', 'logical_and'),
                        ('broadcast_logical_or', 'logical_or'),
                        ('broadcast_logical_xor', 'logical_xor')]:
    globals()[_alias] = globals()[_target]

# ops whose ``out=`` is read as well as written (``init_output=False``)
all_finite, multi_all_finite = _all_finite, _multi_all_finite
ElementWiseSum = add_n
globals().update(linalg.TOP_LEVEL)  # linalg_gemm, ...


def waitall():
    """Wait for all pending device work (a no-op on numpy; synchronises CuPy)."""
    _backend.synchronize()


# The samplers under their names in MXNet's nd namespace.
uniform = random_uniform = random.uniform
normal = random_normal = random.normal
random_randint = random.randint
random_gamma = random.gamma
random_exponential = random.exponential
random_poisson = random.poisson
random_negative_binomial = random.negative_binomial
random_generalized_negative_binomial = random.generalized_negative_binomial
sample_multinomial = random.multinomial
shuffle = random.shuffle
