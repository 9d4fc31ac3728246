"""The symbol op table: every op of ``ndarray``'s table under the names MXNet 1.x's
graphs use, with what a graph needs to know that an NDArray call does not.

An ``OpSpec`` says under which name a node is written (``Flatten`` for ``flatten``,
``broadcast_add`` for ``add``, ``_plus_scalar`` for ``x + 1``), which inputs the op
lists given its attributes (``bias`` only without ``no_bias``), which of them are
auxiliary states (BatchNorm's moving statistics), how many outputs it has and what
they are called, and how to run it: through ``dispatch.invoke`` on the op's one
kernel. No op is implemented twice; this module only translates names and
attributes.
"""
import inspect

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..ndarray import creation, tape
from ..ndarray.ndarray import NDArray
from ..ndarray.dispatch import invoke
from ..ndarray.functions import add_n
from ..ndarray.registry import all_ops, get_op
from ..util import is_np_shape
from .attrs import from_string, is_hidden

# Arguments MXNet accepts for speed or device tuning, which change no value.
_TUNING_ONLY = frozenset(['workspace', 'cudnn_tune', 'cudnn_off', 'num_args'])

# Ops with more outputs than a graph shows (MXNet counts them in node_row_ptr).
_TOTAL_OUTPUTS = {'BatchNorm': 3, 'BatchNorm_v1': 3, '_contrib_SyncBatchNorm': 3,
                  'LayerNorm': 3, 'GroupNorm': 3, 'InstanceNorm': 3, 'Dropout': 2, 'CTCLoss': 2,
                  '_contrib_box_nms': 2,
                  '_linalg_det': 3, '_linalg_slogdet': 4, 'ROIPooling': 2, 'LRN': 2,
                  'L2Normalization': 2, 'GridGenerator': 2, 'BilinearSampler': 2,
                  'SpatialTransformer': 3, 'Correlation': 3, '_contrib_Proposal': 2,
                  '_contrib_MultiProposal': 2}
# The batch normalisations: moving statistics as auxiliary states, updated by the op.
BATCH_NORMS = ('BatchNorm', 'BatchNorm_v1', '_contrib_SyncBatchNorm')
# Ops whose outputs a graph shows are fixed in number, and their names' suffixes.
_OUTPUT_NAMES = {'_contrib_bipartite_matching': ['output0', 'output1'],
                 '_contrib_box_encode': ['output0', 'output1'],
                 '_contrib_box_nms': ['output0'],
                 '_contrib_MultiBoxTarget': ['loc_target', 'loc_mask', 'cls_target'],
                 '_linalg_gelqf': ['output0', 'output1'], '_linalg_syevd': ['output0', 'output1'],
                 '_linalg_slogdet': ['output0', 'output1'], '_linalg_det': ['output0'],
                 'moments': ['output0', 'output1'], '_histogram': ['output0', 'output1'],
                 '_contrib_quantize': ['output0', 'output1', 'output2']}

# Variadic ops whose count of inputs is an attribute other than ``num_args``.
_COUNT_ATTRS = {'multi_all_finite': 'num_arrays', 'amp_multicast': 'num_outputs'}

# Ops whose output has the shape of their first input.
_SAME_SHAPE = frozenset([
    'Activation', 'BatchNorm', 'Dropout', 'LeakyReLU', 'InstanceNorm', 'LayerNorm',
    'GroupNorm', 'softmax', 'log_softmax', 'softmin', 'relu', 'sigmoid', 'tanh', 'softrelu',
    'softsign', 'abs', 'sign', 'sqrt', 'rsqrt', 'cbrt', 'rcbrt', 'exp', 'expm1', 'log',
    'log10', 'log2', 'log1p', 'square', 'reciprocal', 'negative', 'clip', 'round', 'rint',
    'fix', 'floor', 'ceil', 'trunc', 'sin', 'cos', 'tan', 'arcsin', 'arccos', 'arctan',
    'sinh', 'cosh', 'tanh', 'arcsinh', 'arccosh', 'arctanh', 'degrees', 'radians', 'copy',
    'zeros_like', 'ones_like', 'cast', 'amp_cast', 'sgd_update', 'sgd_mom_update', 'nag_mom_update',
    'adam_update', 'rmsprop_update', 'rmspropalex_update', 'ftml_update', 'ftrl_update',
    'signsgd_update', 'signum_update', 'BlockGrad', 'SoftmaxOutput', 'SVMOutput',
    'LinearRegressionOutput', 'LogisticRegressionOutput', 'MAERegressionOutput', 'MakeLoss',
    'make_loss', '_identity_with_attr_like_rhs', '_linalg_potrf', '_linalg_potri',
    '_linalg_inverse'])

# Ops whose output shape does not depend on the batch size (the first axis of data):
# their shapes are worked out on one sample.
_PER_SAMPLE = frozenset(['Convolution', 'Deconvolution', 'Pooling', 'FullyConnected'])


class OpSpec:
    """One op as graphs see it.

    Parameters
    ----------
    mx_name : str
        The name written into graph files (MXNet's registered name).
    op : OpDef or None
        The kernel in the op table; None for ops made of a ``run`` function.
    hint : str
        The stem of automatic node names (``fullyconnected`` -> ``fullyconnected0``).
    run : callable, optional
        ``run(inputs, params, ctx)`` -> list of NDArray, for ops that are not one call
        of ``op`` with the node's arguments (scalar forms, creation ops).
    fixed : dict, optional
        Arguments the name implies (``softrelu`` is ``Activation(act_type='softrelu')``).
    scalar_first : bool, optional
        For a scalar form run by ``run``: True when ``op`` takes the scalar first.
    """

    def __init__(self, mx_name, op=None, hint=None, run=None, fixed=None, inputs=None,
                 variadic=None, accepted=None, same_shape=False, scalar_first=None):
        self.mx_name = mx_name
        # a scalar form (``_plus_scalar``): whether the scalar is the kernel's first input
        self.scalar_first = scalar_first
        self.op = op
        self.hint = hint or mx_name.lower()
        self._run = run
        self._same_shape = same_shape
        self.fixed = dict(fixed or {})
        self.variadic = (op is not None and op.num_inputs is None) if variadic is None \
            else variadic
        self.count_attr = _COUNT_ATTRS.get(mx_name, 'num_args')  # a variadic op's inputs
        if inputs is None:
            inputs = () if op is None or self.variadic else tuple(op.input_names)
        self._inputs = tuple(inputs)
        self.aux_names = frozenset(['moving_mean', 'moving_var']) \
            if mx_name in BATCH_NORMS else frozenset()
        if accepted is None and op is not None:
            signature = inspect.signature(op.forward)
            accepted = [p.name for p in list(signature.parameters.values())[1:]
                        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                        and p.name not in self._inputs and p.name != 'needs_grad']
        self.accepted = frozenset(accepted or ())

    def __repr__(self):
        return '<OpSpec %s>' % self.mx_name

    # True for ops that infer their own shapes and dtypes (``infer_shapes``,
    # ``infer_types``, as control-flow ops do through their subgraphs): Python custom ops
    own_inference = False

    def aux_input_names(self, attrs):
        """The names of the inputs that are auxiliary states, for a node with ``attrs``."""
        return self.aux_names

    @property
    def run_is_op(self):
        """True when a node runs ``op`` with its own inputs and arguments (so the op's
        shape rule applies to the node)."""
        return self._run is None and self.op is not None

    @property
    def keeps_shape(self):
        """True when the output has the first input's shape."""
        return self._same_shape or (self.run_is_op and self.op.name in _SAME_SHAPE)

    @property
    def per_sample(self):
        """True when the output shape does not depend on the batch size."""
        return self.mx_name in _PER_SAMPLE

    @property
    def differentiable(self):
        """True when gradients flow through the op to its inputs."""
        return self.op.differentiable if self.op is not None else self.mx_name == 'add_n'

    @property
    def doc(self):
        """The kernel's documentation (None for ops made of a ``run`` function)."""
        return self.op.doc if self.op is not None else None

    # ---- inputs and outputs ----

    def input_names(self, attrs, count=None):
        """The names of the op's inputs given its (string) attributes; ``count`` inputs
        for a variadic op (``arg0``, ``arg1`` ... as MXNet lists them)."""
        if self.mx_name == 'UpSampling' and attrs.get('sample_type') == 'bilinear':
            return ['data', 'weight']
        if self.variadic:
            n = count if count is not None else int(attrs.get(self.count_attr, 0))
            return ['arg%d' % i for i in range(n)]
        names = list(self._inputs)
        if self.mx_name == '_contrib_BilinearResize2D' and attrs.get('mode') != 'like':
            names.remove('like')
        # no_bias defaults to True for Deconvolution alone, as in MXNet
        if self.mx_name in ('FullyConnected', 'Convolution', 'Deconvolution',
                            '_contrib_DeformableConvolution',
                            '_contrib_ModulatedDeformableConvolution') and \
                from_string(attrs.get('no_bias', str(self.mx_name == 'Deconvolution'))):
            names.remove('bias')
        elif self.mx_name == 'LeakyReLU' and attrs.get('act_type', 'leaky') != 'prelu':
            names.remove('gamma')
        elif self.mx_name == 'CTCLoss':
            names = ['data', 'label'] + [
                n for n in ('data_lengths', 'label_lengths')
                if from_string(attrs.get('use_' + n, 'False'))]
        elif self.mx_name in ('SequenceMask', 'SequenceLast', 'SequenceReverse') and \
                not from_string(attrs.get('use_sequence_length', 'False')):
            names.remove('sequence_length')
        elif self.mx_name == 'RNN':
            names = ['data', 'parameters', 'state'] + \
                (['state_cell'] if attrs.get('mode') == 'lstm' else []) + \
                (['sequence_length'] if from_string(attrs.get('use_sequence_length', 'False'))
                 else [])
        elif self.mx_name == 'softmax' and not from_string(attrs.get('use_length', 'False')):
            names.remove('length')
        elif self.mx_name == '_histogram' and 'bin_cnt' in attrs:
            names.remove('bins')  # equal bins: the edges are no input
        return names

    def num_outputs(self, attrs):
        """How many outputs a graph shows."""
        name = self.mx_name
        if name in _OUTPUT_NAMES:
            return len(_OUTPUT_NAMES[name])
        if name in ('SliceChannel', 'amp_multicast'):
            return int(from_string(attrs.get('num_outputs', 1)))
        if name in BATCH_NORMS + ('LayerNorm', 'GroupNorm') and \
                from_string(attrs.get('output_mean_var', 'False')):
            return 3
        if name == 'topk' and attrs.get('ret_typ', 'indices') == 'both':
            return 2
        if name in ('_contrib_Proposal', '_contrib_MultiProposal') and \
                from_string(attrs.get('output_score', 'False')):
            return 2
        if name == 'RNN' and from_string(attrs.get('state_outputs', 'False')):
            return 3 if attrs.get('mode') == 'lstm' else 2
        if name == 'split_v2':
            spec = from_string(attrs.get('indices_or_sections', 1))
            return len(spec) + 1 if isinstance(spec, tuple) else int(spec)
        return 1

    def total_outputs(self, attrs):
        """Outputs counted by MXNet's ``node_row_ptr``, hidden ones included."""
        return max(self.num_outputs(attrs), _TOTAL_OUTPUTS.get(self.mx_name, 1))

    def output_names(self, attrs):
        """The suffixes of the outputs' names (``output``; BatchNorm's ``mean``, ``var``)."""
        n = self.num_outputs(attrs)
        if self.mx_name in _OUTPUT_NAMES:
            return list(_OUTPUT_NAMES[self.mx_name])
        if n == 1:
            return ['loss'] if self.mx_name == 'make_loss' else ['output']
        if self.mx_name in BATCH_NORMS:
            return ['output', 'mean', 'var']
        if self.mx_name in ('LayerNorm', 'GroupNorm'):
            return ['output', 'mean', 'std']
        if self.mx_name == 'RNN':
            return ['output', 'state_output', 'statecell_output'][:n]
        if self.mx_name in ('_contrib_Proposal', '_contrib_MultiProposal'):
            return ['output', 'score']
        return ['output%d' % i for i in range(n)]

    # ---- running ----

    def params(self, attrs):
        """The keyword arguments of the kernel for a node's string attributes."""
        params = dict(self.fixed)
        for key, text in attrs.items():
            if is_hidden(key):
                continue
            if key not in self.accepted:
                if key in _TUNING_ONLY:
                    continue
                raise MXNetError(
                    'op %s: attribute %r is not supported (it takes %s); remove it from the '
                    'graph or the call' % (self.mx_name, key,
                                            ', '.join(sorted(self.accepted)) or 'none'))
            params[key] = from_string(text)
        return params

    def runner(self, attrs, subgraphs=()):
        """``run(inputs, ctx)`` -> list of output NDArrays for a node with ``attrs``
        (and ``subgraphs``, which only control-flow ops have)."""
        if self._run is not None:
            params, run = self.params(attrs), self._run
            return lambda inputs, ctx: run(inputs, params, ctx)
        op, params, fill = self.kernel(attrs)

        def run_op(inputs, ctx):
            out = invoke(op, kernel_inputs(fill, inputs), params)
            return out if isinstance(out, list) else [out]
        return run_op

    def kernel(self, attrs):
        """``(op, params, fill)`` when a node with ``attrs`` is one call of a kernel of
        the op table, so it can run on raw arrays; None for ops made of a ``run``
        function. ``fill`` is None when the node's inputs are the kernel's, else
        ``(template, positions)``: the kernel's inputs are ``template`` (a list holding
        None, or a scalar form's scalar) with the node's inputs put at ``positions``."""
        if self.scalar_first is not None:
            scalar = self.params(attrs)['scalar']
            return self.op, {}, (([scalar, None], [1]) if self.scalar_first
                                 else ([None, scalar], [0]))
        if not self.run_is_op:
            return None
        slots = self._input_slots(attrs)
        return self.op, self.params(attrs), \
            None if slots is None else ([None] * len(self._inputs), slots)

    def _input_slots(self, attrs):
        """Where a node's inputs go among the kernel's, when the node leaves some out
        (``no_bias``: Convolution's bias), so the kernel gets None there as imperative
        calls pass it; None when the node has them all."""
        if self.variadic:
            return None
        names = self.input_names(attrs)
        if len(names) == len(self._inputs) or not set(names) <= set(self._inputs):
            return None
        return [self._inputs.index(n) for n in names]

    def output_shapes(self, in_shapes, attrs, dtypes):
        """The output shapes for known input shapes: from a rule for common ops and the
        op table's output rules, else by running the kernel on zeros (on one sample where
        the batch does not matter)."""
        if self.keeps_shape and in_shapes and self.num_outputs(attrs) == 1:
            return [in_shapes[0]]
        if self.run_is_op and self.op.output_shapes is not None:
            slots = self._input_slots(attrs)
            if slots is not None:
                full = [None] * len(self._inputs)
                for slot, shape in zip(slots, in_shapes):
                    full[slot] = shape
                in_shapes = full
            return [tuple(s) for s in self.op.output_shapes(*in_shapes, **self.params(attrs))]
        if self.per_sample and in_shapes and in_shapes[0]:
            batch = in_shapes[0][0]
            one = [(1,) + tuple(in_shapes[0][1:])] + list(in_shapes[1:])
            return [(batch,) + tuple(s[1:]) for s in self._run_on_zeros(one, attrs, dtypes)]
        return self._run_on_zeros(in_shapes, attrs, dtypes)

    def _run_on_zeros(self, in_shapes, attrs, dtypes):
        # a graph is inferred several times (bind, each new input shape) and repeats its
        # nodes (a cell unrolled over time): each case runs once
        key = (self, tuple(tuple(s) for s in in_shapes), tuple(sorted(attrs.items())),
               tuple(dtypes), is_np_shape())
        try:
            shapes = _ZEROS_RUNS.get(key)
        except TypeError:  # an attribute value that is no string
            key, shapes = None, None
        if shapes is None:
            inputs = [NDArray(np.zeros(s, dtype=d or np.float32), cpu())
                      for s, d in zip(in_shapes, dtypes)]
            with tape.Scope(recording=False, training=False):
                outs = self.runner(attrs)(inputs, cpu())
            shapes = tuple(o.shape for o in outs)
            if key is not None:
                if len(_ZEROS_RUNS) >= 4096:
                    _ZEROS_RUNS.clear()
                _ZEROS_RUNS[key] = shapes
        return list(shapes)


# The output shapes ``OpSpec._run_on_zeros`` has seen, by op, input shapes, attributes,
# dtypes and shape semantics.
_ZEROS_RUNS = {}


# ---- the table ----

_SPECS = {}
_CANONICAL = {}  # function name -> spec, for ``mx.sym.<name>``


def spec_of(mx_name):
    """The spec of the op a graph names ``mx_name``.

    Raises
    ------
    MXNetError
        If no op of that name exists; the message says where the name came from.
    """
    spec = _SPECS.get(mx_name)
    if spec is None:
        raise MXNetError('operator %r is not supported by minigluon: the graph cannot be '
                         'run. Supported operators are listed by '
                         'minigluon.symbol.op_specs.names()' % mx_name)
    return spec


def names():
    """Every op name graphs may use."""
    return sorted(_SPECS)


def functions():
    """``{name: spec}`` for the ``mx.sym.<name>`` functions."""
    return dict(_CANONICAL)


def _add(spec, *aliases, public=True):
    _SPECS.setdefault(spec.mx_name, spec)
    for name in aliases:
        _SPECS.setdefault(name, spec)
    if public:
        for name in (spec.mx_name,) + aliases:
            if not name.startswith('_'):
                _CANONICAL.setdefault(name, spec)


# MXNet's registered name for ops the table keeps under another name.
_MX_NAME = {
    'add': 'broadcast_add', 'subtract': 'broadcast_sub', 'multiply': 'broadcast_mul',
    'divide': 'broadcast_div', 'mod': 'broadcast_mod', 'power': 'broadcast_power',
    'maximum': 'broadcast_maximum', 'minimum': 'broadcast_minimum',
    'hypot': 'broadcast_hypot', 'equal': 'broadcast_equal',
    'not_equal': 'broadcast_not_equal', 'greater': 'broadcast_greater',
    'greater_equal': 'broadcast_greater_equal', 'lesser': 'broadcast_lesser',
    'lesser_equal': 'broadcast_lesser_equal', 'logical_and': 'broadcast_logical_and',
    'logical_or': 'broadcast_logical_or', 'logical_xor': 'broadcast_logical_xor',
    'flatten': 'Flatten', 'concat': 'Concat', 'split': 'SliceChannel', 'reshape': 'Reshape',
    'cast': 'Cast', 'pad': 'Pad', 'swapaxes': 'SwapAxis', 'flip': 'reverse', 'copy': '_copy',
    'pick': 'pick', 'cumsum': '_np_cumsum', 'ravel_multi_index': '_ravel_multi_index',
    'unravel_index': '_unravel_index',
}
# Further names of the same ops in MXNet (functions and graph files).
_ALIASES = {
    'add': ['elemwise_add', '_plus', '_Plus', 'broadcast_plus', '_add'],
    'subtract': ['elemwise_sub', '_minus', '_Minus', 'broadcast_minus', '_sub'],
    'multiply': ['elemwise_mul', '_mul', '_Mul'],
    'divide': ['elemwise_div', '_div', '_Div', 'true_divide'],
    'mod': ['_mod', '_Mod'], 'power': ['_power', '_Power', 'pow'],
    'maximum': ['_maximum', '_Maximum'], 'minimum': ['_minimum', '_Minimum'],
    'hypot': ['_hypot', '_Hypot'], 'equal': ['_equal', '_Equal'],
    'not_equal': ['_not_equal', '_Not_Equal'], 'greater': ['_greater', '_Greater'],
    'greater_equal': ['_greater_equal', '_Greater_Equal'], 'lesser': ['_lesser', '_Lesser'],
    'lesser_equal': ['_lesser_equal', '_Lesser_Equal'],
    'logical_and': ['_logical_and'], 'logical_or': ['_logical_or'],
    'logical_xor': ['_logical_xor'], 'max': ['max_axis'], 'min': ['min_axis'],
    'sum': ['sum_axis'],
    'flatten': ['flatten'], 'concat': ['concat'], 'split': ['split'],
    'reshape': ['reshape'], 'cast': ['cast'], 'pad': ['pad'], 'swapaxes': ['swapaxes'],
    'flip': ['flip'], 'copy': ['copy', 'identity', '_identity'],
    'broadcast_axis': ['broadcast_axes'], 'slice': ['crop'], 'pick': ['choose_element_0index'],
    'CTCLoss': ['ctc_loss', '_contrib_CTCLoss', '_contrib_ctc_loss'],
    'BlockGrad': ['stop_gradient'], 'SoftmaxOutput': ['Softmax'],
}


# The same-shape elementwise forms of the broadcasting ops, separate ops in MXNet (one
# kernel here): a node made under one of these names is written under the name it maps to.
ELEMENTWISE_NODES = dict(
    [(n, 'elemwise_add') for n in ('elemwise_add', '_plus', '_add', '_Plus')]
    + [(n, 'elemwise_sub') for n in ('elemwise_sub', '_minus', '_sub', '_Minus')]
    + [(n, 'elemwise_mul') for n in ('elemwise_mul', '_mul', '_Mul')]
    + [(n, 'elemwise_div') for n in ('elemwise_div', '_div', '_Div')]
    + [(n, n) for n in ('_maximum', '_minimum', '_power', '_mod', '_hypot', '_equal',
                        '_not_equal', '_greater', '_greater_equal', '_lesser',
                        '_lesser_equal', '_logical_and', '_logical_or', '_logical_xor')])


def _table_specs():
    for name, op in sorted(all_ops().items()):
        if name.startswith('_'):
            continue
        mx_name = _MX_NAME.get(name, name)
        # a node's name stem is the function's name (``split0``), as in MXNet
        _add(OpSpec(mx_name, op, hint=name.lower()), name, *_ALIASES.get(name, ()))


_table_specs()
# MXNet's contrib and image ops (``_contrib_box_nms``, ``_image_normalize``):
# ``mx.sym.contrib.<name>``, ``mx.sym.image.<name>`` and ``_internal``.
for _name, _op in sorted(all_ops().items()):
    for _prefix in ('_contrib_', '_image_'):
        if _name.startswith(_prefix):
            _add(OpSpec(_name, _op, hint=_name[len(_prefix):].lower()), public=False)
# MXNet's linalg ops (``_linalg_gemm``), also named ``linalg_gemm`` (but syevd); the
# ``mx.sym.linalg`` functions are made in ``symbol/linalg.py``.
for _name, _op in sorted(all_ops().items()):
    if _name.startswith('_linalg_'):
        _add(OpSpec(_name, _op, hint=_name[1:]),
             *([] if _name == '_linalg_syevd' else [_name[1:]]))
# the op table's ops that graphs name as MXNet does but ``mx.sym`` keeps in ``_internal``
_add(OpSpec('_identity_with_attr_like_rhs', get_op('_identity_with_attr_like_rhs')),
     public=False)
_add(OpSpec('_rnn_param_concat', get_op('_rnn_param_concat')), public=False)
_add(OpSpec('_histogram', get_op('_histogram')), '_npi_histogram', public=False)
_add(OpSpec('_backward_gather_nd', get_op('_backward_gather_nd')), public=False)

# Activation functions MXNet has only as ``Activation(act_type=...)``.
_add(OpSpec('Activation', get_op('Activation'), hint='softrelu',
            fixed={'act_type': 'softrelu'}), public=False)
_CANONICAL['softrelu'] = OpSpec('Activation', get_op('Activation'), hint='softrelu',
                                fixed={'act_type': 'softrelu'})


# ---- scalar forms: ``x + 1`` is ``_plus_scalar(x, scalar=1)`` ----

def kernel_inputs(fill, inputs):
    """A node's ``inputs`` as its kernel takes them, for ``fill`` from ``OpSpec.kernel``
    (the kernel takes None for inputs a node leaves out, a scalar form's scalar)."""
    if fill is None:
        return inputs
    template, positions = fill
    full = list(template)
    for position, value in zip(positions, inputs):
        full[position] = value
    return full


def _scalar_runner(op, reverse):
    def run(inputs, params, ctx):
        scalar = params['scalar']
        args = (scalar, inputs[0]) if reverse else (inputs[0], scalar)
        return [invoke(op, args, {})]
    return run


# (op, its scalar form, the scalar form with the scalar on the left)
SCALAR_FORMS = {
    'add': ('_plus_scalar', '_plus_scalar'), 'subtract': ('_minus_scalar', '_rminus_scalar'),
    'multiply': ('_mul_scalar', '_mul_scalar'), 'divide': ('_div_scalar', '_rdiv_scalar'),
    'mod': ('_mod_scalar', '_rmod_scalar'), 'power': ('_power_scalar', '_rpower_scalar'),
    'maximum': ('_maximum_scalar', '_maximum_scalar'),
    'minimum': ('_minimum_scalar', '_minimum_scalar'),
    'hypot': ('_hypot_scalar', '_hypot_scalar'),
    'equal': ('_equal_scalar', '_equal_scalar'),
    'not_equal': ('_not_equal_scalar', '_not_equal_scalar'),
    'greater': ('_greater_scalar', '_lesser_scalar'),
    'greater_equal': ('_greater_equal_scalar', '_lesser_equal_scalar'),
    'lesser': ('_lesser_scalar', '_greater_scalar'),
    'lesser_equal': ('_lesser_equal_scalar', '_greater_equal_scalar'),
    'logical_and': ('_logical_and_scalar', '_logical_and_scalar'),
    'logical_or': ('_logical_or_scalar', '_logical_or_scalar'),
    'logical_xor': ('_logical_xor_scalar', '_logical_xor_scalar'),
}
# Every plain form first: a comparison's flipped name is another comparison's plain
# form (``2 >= x`` is ``_lesser_equal_scalar(x)``), which must run that comparison.
for _pass in ('plain', 'flipped'):
    for _op_name, (_plain, _flipped) in SCALAR_FORMS.items():
        _mx = _plain if _pass == 'plain' else _flipped
        _reverse = _pass == 'flipped' and _op_name in ('subtract', 'divide', 'mod', 'power')
        if _mx not in _SPECS:
            _camel = ''.join(w.capitalize() for w in _mx.strip('_').split('_'))
            _add(OpSpec(_mx, get_op(_op_name), hint='_' + _mx.strip('_').replace('_', ''),
                        run=_scalar_runner(get_op(_op_name), _reverse), inputs=('data',),
                        accepted=('scalar',), same_shape=True, scalar_first=_reverse),
             '_' + _camel, public=False)


# ---- ops made of several kernel calls, and creation ops ----

def _add_n(inputs, params, ctx):
    return [add_n(*inputs)]


_add(OpSpec('add_n', hint='elementwisesum', run=_add_n, variadic=True), 'ElementWiseSum',
     '_ElementWiseSum')


def _dtype(params):
    return params.get('dtype') or 'float32'


def _zeros(inputs, params, ctx):
    return [creation.zeros(params['shape'], ctx=ctx, dtype=_dtype(params))]


def _ones(inputs, params, ctx):
    return [creation.ones(params['shape'], ctx=ctx, dtype=_dtype(params))]


def _full(inputs, params, ctx):
    return [creation.full(params['shape'], params['value'], ctx=ctx, dtype=_dtype(params))]


def _arange(inputs, params, ctx):
    start, stop, step = params.get('start', 0), params.get('stop'), params.get('step', 1.0)
    if params.get('infer_range') and stop is None:
        # the length the graph gave it (see shape_inference.open_source_shape)
        length = from_string(params['shape'])[0] // params.get('repeat', 1)
        start, stop = start, start + step * length
    return [creation.arange(start, stop, step,
                            repeat=params.get('repeat', 1), ctx=ctx, dtype=_dtype(params))]


def _eye(inputs, params, ctx):
    return [creation.eye(params['N'], params.get('M', 0), params.get('k', 0), ctx=ctx,
                         dtype=_dtype(params))]


for _mx, _fn, _accepted in (('_zeros', _zeros, ('shape', 'dtype', 'ctx')),
                            ('_ones', _ones, ('shape', 'dtype', 'ctx')),
                            ('_full', _full, ('shape', 'dtype', 'ctx', 'value')),
                            ('_arange', _arange, ('start', 'stop', 'step', 'repeat', 'dtype',
                                                  'ctx', 'infer_range', 'shape')),
                            ('_eye', _eye, ('N', 'M', 'k', 'dtype', 'ctx'))):
    _add(OpSpec(_mx, hint=_mx[1:], run=_fn, accepted=_accepted), public=False)
