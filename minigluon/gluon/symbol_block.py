"""``SymbolBlock``: a graph (``mx.sym``) run as a Gluon Block, and the way models that
MXNet or minigluon exported (``-symbol.json`` + ``-NNNN.params``) come back.

As in Gluon 1.x, every variable of the graph that is not an input becomes a Parameter
named by the variable (``resnetv10_conv0_weight``; auxiliary states such as BatchNorm's
moving statistics get ``grad_req='null'``), and ``forward`` runs the graph's ops
through the op table, inside the caller's autograd state, so a Trainer fine-tunes an
imported model as it would any other.

Two graph attributes, which MXNet reads and ignores, go beyond MXNet:

- ``minigluon_formats``, JSON ``{"in": fmt, "out": fmt}`` with Gluon's nesting formats
  (``[0, [0, 0]]``): the imported block takes and returns the nested lists the
  exported block did (MXNet issue 17488), and still accepts flat inputs as MXNet does.
- ``minigluon_structure``, JSON ``{parameter name: "features.0.weight"}``: the
  imported block rebuilds the exported block's hierarchy as parts that hold the
  parameters (``net.features[0].weight``, ``net.output.collect_params()``), so layers
  can be frozen or given their own learning rates, and ``save_parameters`` /
  ``load_parameters`` use the structural names of the original model (MXNet issue
  15103). ``collect_params()`` stays keyed by variable names, as in MXNet; a
  ``select`` pattern matches either the name or the structural name
  (``collect_params('features\\.0\\.')``).
"""
import json
import os
import re
import warnings
import weakref

import numpy as np

from ..base import MXNetError
from ..context import cpu
from ..ndarray import load as nd_load, save as nd_save
from ..symbol import Symbol, Group, var
from ..symbol.graph import from_json, to_json
from ..symbol.symbol import total_outputs
from .block import Block, HybridBlock
from .cached_graph import (FORMATS_ATTR, STRUCTURE_ATTR, flatten as _flatten,
                           formats_compatible, graph_attrs, regroup as _regroup)
from .parameter import ParameterDict, _load_checked
from .utils import shape_is_known

__all__ = ['SymbolBlock']


# ops whose parameters after the data stay float32 when a block is cast to float16
_NORMALIZATIONS = ('BatchNorm', 'BatchNorm_v1', 'SyncBatchNorm', '_contrib_SyncBatchNorm')


def _count(fmt):
    """How many arrays (Nones left out) a format holds."""
    if isinstance(fmt, int):
        return 0 if fmt == -1 else max(fmt, 1)
    return sum(_count(f) for f in fmt)


def _valid_format(fmt):
    if isinstance(fmt, bool):
        return False
    if isinstance(fmt, int):
        return fmt >= -1
    return isinstance(fmt, list) and all(_valid_format(f) for f in fmt)


class _Part(Block):
    """One block of an exported model's hierarchy inside an imported SymbolBlock: it
    holds the parameters and parts under their attribute names (``part.weight``,
    ``part[0]``), so they can be collected, frozen or saved by structural name. The
    computation stays the SymbolBlock's graph: a part is not called itself."""

    def __init__(self):
        super().__init__(prefix='')

    def _alias(self):
        return 'part'

    def __getitem__(self, key):
        try:
            return self._children[str(key)]
        except KeyError:
            raise KeyError('no part %r here; the parts are %s'
                           % (key, list(self._children))) from None

    def __len__(self):
        return len(self._children)

    def forward(self, *args):
        raise MXNetError('this is a part of an imported SymbolBlock (it holds parameters of '
                         'the exported model\'s hierarchy); call the SymbolBlock itself')

    def __repr__(self):
        names = ', '.join(self._reg_params)
        if not self._children:
            return 'Part(%s)' % names
        lines = ['  (%s): %s' % (k, repr(c).replace('\n', '\n  '))
                 for k, c in self._children.items()]
        return 'Part(%s\n%s\n)' % (names, '\n'.join(lines))


def _common_prefix(names):
    """The longest prefix of every name, which MXNet strips from the names
    ``save_parameters`` writes for a SymbolBlock (``resnetv10_``); nothing where that
    would leave a name empty."""
    if not names:
        return ''
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    return '' if prefix in names else prefix


class SymbolBlock(HybridBlock):
    """A Block that runs a symbolic graph: MXNet's exported models, features taken from
    the inside of a network (``out.get_internals()['..._output']``), graphs built with
    ``mx.sym``.

    Parameters
    ----------
    outputs : Symbol or (nested) list of Symbol
        What the block returns, in this nesting.
    inputs : Symbol or (nested) list of Symbol
        The variables of ``outputs``' graph that are inputs, in the order (and nesting)
        ``forward`` takes them.
    params : ParameterDict, optional
        Parameters to use for the graph's variables of the same names instead of new
        ones (e.g. ``net.collect_params()`` of the network the graph came from).

    Inputs
    ------
    The arrays for ``inputs`` (NDArrays: the graph runs; Symbols: the graph is composed
    onto them and returned).

    Examples
    --------
    >>> net = gluon.SymbolBlock.imports('resnet-symbol.json', ['data'], 'resnet-0000.params')
    >>> out = net(mx.nd.ones((1, 3, 32, 32)))
    """

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ''
        self._params = ParameterDict('', params)
        if isinstance(inputs, Symbol) and len(inputs) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, 'input')
        outs, self._out_format = _flatten(outputs, 'output')
        for sym in syms:
            if not isinstance(sym, Symbol) or len(sym) != 1 or \
                    not sym._outputs[0][0].is_variable:  # pylint: disable=protected-access
                raise MXNetError('SymbolBlock: inputs must be variables (mx.sym.var), got %r'
                                 % (sym,))
        out = Group(outs) if len(outs) > 1 else outs[0]
        if not isinstance(out, Symbol):
            raise MXNetError('SymbolBlock: outputs must be Symbols, got %s'
                             % type(out).__name__)
        self._input_names = [s.name for s in syms]
        graph_inputs = set(out.list_inputs())
        for name in self._input_names:
            if name not in graph_inputs:
                warnings.warn('SymbolBlock: input %r is not used by the graph (its variables '
                              'are %s)' % (name, _brief(out.list_inputs())), stacklevel=2)
        arg_names = out.list_arguments()
        aux_names = out.list_auxiliary_states()
        arg_types, aux_types = _param_types(syms, out, arg_names, aux_names)
        inputs_set = set(self._input_names)
        variables = {n.name: n for n in out._order() if n.is_variable}  # pylint: disable=W0212
        for names, types, req in ((arg_names, arg_types, 'write'),
                                  (aux_names, aux_types, 'null')):
            for name, dtype in zip(names, types):
                if name in inputs_set:
                    continue
                shared = params is not None and name in params
                param = self._params.get(name, grad_req=req, allow_deferred_init=True,
                                         dtype=dtype)
                if not shared:
                    _take_variable_attrs(param, variables[name].attrs)
        self._cached_graph = syms, out
        self._set_structure(None)

    # ---- hierarchy ---------------------------------------------------------------
    def _set_structure(self, structure):
        """Hold the parameters as ``structure`` ({name: "features.0.weight"}) says, in
        parts under this block; those it does not name (all without one) are held here
        under their names less the common prefix, as MXNet holds them."""
        for name in list(self._children):
            if isinstance(self._children[name], _Part):
                del self._children[name]
                if isinstance(self.__dict__.get(name), _Part):
                    object.__delattr__(self, name)
        mine = {id(p) for p in self._params.values()}
        for key in list(self._reg_params):
            if key in self.__dict__ and self.__dict__[key] is self._reg_params[key]:
                object.__delattr__(self, key)
        self._reg_params = {}
        structure = structure or {}
        loose = [n for n in self._params if n not in structure]
        strip = len(_common_prefix(loose))
        for name, param in self._params.items():
            path = structure.get(name, name[strip:]).split('.')
            holder = self
            for part in path[:-1]:
                child = holder._children.get(part)
                if not isinstance(child, _Part):
                    child = _Part()
                    holder.register_child(child, part)
                    _expose(holder, part, child)
                holder = child
            holder._reg_params[path[-1]] = param
            if len(path) > 1:
                _expose(holder, path[-1], param)
            owner = param._owner() if param._owner is not None else None
            if id(param) in mine and (owner is None or owner is self
                                      or isinstance(owner, _Part)):
                param._owner = weakref.ref(holder)
                param._attr = path[-1]

    def __getitem__(self, key):
        """The part ``key`` of the exported block's hierarchy (``net[0]`` of an exported
        Sequential; ``net.features`` is an attribute)."""
        part = self._children.get(str(key))
        if not isinstance(part, _Part):
            raise KeyError('SymbolBlock has no part %r (its parts come from the '
                           'minigluon_structure attribute of an exported graph): %s'
                           % (key, list(self._children)))
        return part

    def collect_params(self, select=None):
        """The parameters of this block by name (the graph's variable names).

        Parameters
        ----------
        select : str, optional
            A regular expression; a parameter is kept when it matches (``re.match``)
            its name or its structural name (``features.0.weight``).
        """
        if select is None:
            return super().collect_params()
        match = re.compile(select).match
        out = ParameterDict(self._params.prefix)
        for _, param in super().collect_params().items():
            if match(param.name):
                dict.__setitem__(out, param.name, param)
        for path, param in self._collect_params_with_prefix().items():
            if match(path):
                dict.__setitem__(out, param.name, param)
        return out

    # ---- files -------------------------------------------------------------------
    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """A SymbolBlock of a model that ``HybridBlock.export`` (MXNet's or minigluon's)
        or ``Module.save_checkpoint`` wrote.

        Parameters
        ----------
        symbol_file : str
            The ``-symbol.json`` file.
        input_names : str or list of str
            The graph's input variables (``'data'``; ``['data0', 'data1']`` for a block
            exported with two inputs).
        param_file : str, optional
            The ``.params`` file (names with ``arg:``/``aux:`` in front); without one
            the block is left uninitialized.
        ctx : Context or list of Context, optional
            Where the parameters go.
        allow_missing : bool
            Leave parameters the file lacks uninitialized instead of raising.
        ignore_extra : bool
            Skip entries of the file the graph has no variable for instead of raising.

        Returns
        -------
        SymbolBlock
        """
        try:
            with open(symbol_file) as f:
                text = f.read()
        except OSError as exc:
            raise MXNetError('cannot read symbol file %r: %s' % (symbol_file, exc)) from None
        try:
            heads, attrs = from_json(text)
        except MXNetError as exc:
            raise MXNetError('cannot import %s: %s' % (symbol_file, exc)) from None
        sym = Symbol(heads)
        if isinstance(input_names, str):
            input_names = [input_names]
        input_names = list(input_names)
        variables = sym.list_inputs()
        wrong = [n for n in input_names if n not in variables]
        if wrong:
            # An input the exported block did not use is left out of its graph (MXNet
            # takes it and ignores it); a misspelt one leaves a variable without a value.
            loaded = _param_names(param_file) if param_file is not None else set()
            candidates = [n for n in sym.list_arguments()
                          if n not in loaded and n not in input_names]
            if param_file is None or candidates:
                raise MXNetError('cannot import %s: input %s is not a variable of the graph; '
                                 'the variables that are not parameters are %s (exported '
                                 'blocks name their inputs data, or data0, data1, ...)'
                                 % (symbol_file, ', '.join(repr(n) for n in wrong),
                                    candidates))
        # With a parameter file the parameters take the file's dtypes (as in MXNet).
        inputs = [var(n) if param_file is not None else var(n, dtype='float32')
                  for n in input_names]
        block = SymbolBlock(sym, inputs)
        block._apply_graph_attrs(attrs, symbol_file)
        if param_file is not None:
            block.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                        cast_dtype=True, dtype_source='saved')
        return block

    def _apply_graph_attrs(self, attrs, where):
        formats = _graph_attr(attrs, FORMATS_ATTR, where)
        if isinstance(formats, dict):
            fmt_in, fmt_out = formats.get('in'), formats.get('out')
            if _valid_format(fmt_in) and isinstance(fmt_in, list) and \
                    _count(fmt_in) == len(self._input_names):
                self._in_format = fmt_in
            if _valid_format(fmt_out) and _count(fmt_out) == len(self._cached_graph[1]):
                self._out_format = fmt_out
        structure = _graph_attr(attrs, STRUCTURE_ATTR, where)
        if isinstance(structure, dict):
            self._set_structure({str(k): str(v) for k, v in structure.items()
                                 if k in self._params and str(v)})

    def graph_attrs(self):
        """The graph attributes ``export`` writes (``cached_graph.graph_attrs``): this
        block's nesting and each parameter's structural name."""
        structure = {p.name: path for path, p in self._collect_params_with_prefix().items()}
        return graph_attrs(self._in_format, self._out_format, structure)

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``path-symbol.json`` and ``path-%04d.params`` (``arg:``/``aux:`` names)
        that ``SymbolBlock.imports`` reads back, MXNet's included.

        The graph file carries ``graph_attrs``: the nesting and hierarchy come back
        with the model. Returns the two file names."""
        out = self._cached_graph[1]
        symbol_file = '%s-symbol.json' % path
        param_file = '%s-%04d.params' % (path, epoch)
        text = to_json(out._outputs, total_outputs,  # pylint: disable=protected-access
                       self.graph_attrs())
        tmp = '%s.tmp%d' % (symbol_file, os.getpid())
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, symbol_file)
        args = set(out.list_arguments())
        nd_save(param_file, {('arg:' if name in args else 'aux:') + name: param._reduce()
                             for name, param in self._params.items()})
        return symbol_file, param_file

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source='current'):
        """Load a file of this block's parameters: by structural name (what
        ``save_parameters`` writes), or by variable name (``arg:``/``aux:`` in front
        or not, as ``export`` writes)."""
        loaded = nd_load(filename, ctx=cpu())
        if not isinstance(loaded, dict):
            raise MXNetError('%s holds a list of arrays, not named parameters' % (filename,))
        names = {(k[4:] if k.startswith(('arg:', 'aux:')) else k) for k in loaded}
        paths = self._collect_params_with_prefix()
        if names & set(self._params) and not set(loaded) & set(paths):
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        _load_checked([(k, p, loaded.get(k)) for k, p in paths.items()], loaded, paths,
                      filename, ctx, allow_missing, ignore_extra, cast_dtype, dtype_source)

    # ---- running -----------------------------------------------------------------
    def forward(self, x, *args):
        """Run the graph on NDArrays (in the nesting of ``inputs``, or flat), or compose
        it onto Symbols."""
        flat, fmt = _flatten([x] + list(args), 'input')
        if isinstance(x, Symbol) or any(isinstance(a, Symbol) for a in flat):
            return self._compose(flat, fmt)
        self._check_format(fmt)
        values = [a for a in flat if a is not None]
        if len(values) != len(self._input_names):
            raise MXNetError('SymbolBlock takes %d inputs (%s), got %d'
                             % (len(self._input_names), ', '.join(self._input_names),
                                len(values)))
        ctx = values[0].context
        if any(p._deferred_init for p in self._params.values()):
            self._finish_deferred(values)
        if self._cached_op is None:
            self._cached_op = self._bind(values)
        outs = self._cached_op.run(values, ctx, self._callback, self._monitor_all)
        return _regroup(outs, self._out_format)

    def _bind(self, values):
        """The graph with this block's inputs and parameters' variables in place of
        its own, planned to run on arrays like ``values`` with the block's flags
        (``hybridize(static_alloc=True)``; ``register_op_hook`` callbacks included)."""
        syms = [var(name) for name in self._input_names]
        out = self._compose_onto(syms)
        return self._cached_graph_for(syms, out, list(self._params.values()), values)

    def _compose_onto(self, syms):
        # The parameters enter as their own variables (``param.var()``), which is how
        # a hybridized parent tracing this block finds them.
        feeds = {name: param.var() for name, param in self._params.items()}
        feeds.update(zip(self._input_names, syms))
        out = self._cached_graph[1].copy()
        out._compose(**feeds)  # pylint: disable=protected-access
        return out

    def _check_format(self, fmt):
        if formats_compatible(self._in_format, fmt):
            return
        flat_call = all(f == 0 for f in fmt)
        if flat_call and len(fmt) == _count(self._in_format):
            return  # flat inputs, as MXNet's imported blocks take them
        raise ValueError('The argument structure of SymbolBlock does not match its inputs: '
                         'expected format %s (or %d flat arrays), got %s'
                         % (self._in_format, _count(self._in_format), fmt))

    def _compose(self, flat, fmt):
        syms = [s for s in flat if s is not None]
        if fmt != self._in_format and len(syms) != len(self._input_names):
            raise ValueError('SymbolBlock: invalid input format %s, expected %s'
                             % (fmt, self._in_format))
        return _regroup(list(self._compose_onto(syms)), self._out_format)

    def _finish_deferred(self, values):
        """Complete the shapes of parameters waiting for them from the inputs' shapes,
        then their initialization."""
        if any(not shape_is_known(p.shape) for p in self._params.values()):
            self.infer_shape(*values)
        for param in self._params.values():
            param._finish_deferred_init()

    def infer_shape(self, *args):
        """Set the shapes of the parameters from the inputs' shapes (graph shape
        inference)."""
        flat = [a for a in _flatten(list(args), 'input')[0] if a is not None]
        self._infer_attrs('infer_shape', 'shape', flat)

    def infer_type(self, *args):
        """Set the dtypes of the parameters from the inputs' dtypes."""
        flat = [a for a in _flatten(list(args), 'input')[0] if a is not None]
        self._infer_attrs('infer_type', 'dtype', flat)

    def _infer_attrs(self, method, attr, values):
        out = self._cached_graph[1]
        given = {n: getattr(v, attr) for n, v in zip(self._input_names, values)}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            arg_values, _, aux_values = getattr(out, method)(**given)
        if arg_values is None:
            detail = str(caught[0].message) if caught else ''
            raise MXNetError('SymbolBlock: cannot infer the %ss of its parameters from inputs '
                             'of %ss %s: %s' % (attr, attr, list(given.values()), detail))
        found = dict(zip(out.list_arguments(), arg_values))
        found.update(zip(out.list_auxiliary_states(), aux_values))
        for name, param in self._params.items():
            if name in found:
                setattr(param, attr, found[name])

    def cast(self, dtype):
        """Cast the parameters to ``dtype``. For float16, the inputs of the graph's
        BatchNorm nodes after the data (gamma, beta and the running statistics) stay
        float32, as ``nn.BatchNorm.cast`` keeps them and as MXNet's SymbolBlock does."""
        super().cast(dtype)
        if np.dtype(dtype) != np.float16:
            return
        for node in self._cached_graph[1]._order():  # pylint: disable=protected-access
            if node.op in _NORMALIZATIONS:
                for source, _ in node.inputs[1:5]:
                    if source.is_variable and source.name in self._params:
                        self._params[source.name].cast('float32')

    def _clear_cached_op(self):
        # the graph is this block's definition, not a trace: it stays
        self._cached_op = None

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError('a SymbolBlock runs its graph; call the block itself')

    def __repr__(self):
        out = self._cached_graph[1]
        return '%s(\n%s : %d -> %d\n)' % (type(self).__name__, out, len(self._input_names),
                                          len(out.list_outputs()))


def _take_variable_attrs(param, attrs):
    """A new parameter's initializer and multipliers from its variable's attributes
    (``mx.sym.var(init=..., lr_mult=...)``; BatchNorm's moving variance starts at one)."""
    if '__init__' in attrs:
        param.init = attrs['__init__']
    for key in ('lr_mult', 'wd_mult'):
        text = attrs.get('__%s__' % key)
        if text is not None:
            try:
                setattr(param, key, float(text))
            except ValueError:
                raise MXNetError('variable %r: __%s__ must be a number, got %r'
                                 % (param.name, key, text)) from None


def _expose(holder, name, value):
    """Make ``value`` an attribute of ``holder`` when the name is free (``net.features``;
    ``net.features[0]`` reaches the others)."""
    if name.isidentifier() and not hasattr(type(holder), name) and name not in holder.__dict__:
        object.__setattr__(holder, name, value)


def _brief(names, limit=8):
    names = list(names)
    return ', '.join(names[:limit]) + (', ...' if len(names) > limit else '')


def _graph_attr(graph_attrs, key, where):
    """The JSON value of the graph attribute ``key`` (``["str", text]`` in the file), or
    None."""
    value = graph_attrs.get(key)
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 2:
        value = value[1]
    try:
        return json.loads(value) if isinstance(value, str) else None
    except ValueError:
        warnings.warn('%s: graph attribute %s is not valid JSON; ignored' % (where, key),
                      stacklevel=3)
        return None


def _param_names(param_file):
    try:
        loaded = nd_load(param_file, ctx=cpu())
    except (MXNetError, OSError):
        return set()
    if not isinstance(loaded, dict):
        return set()
    return {k[4:] if k.startswith(('arg:', 'aux:')) else k for k in loaded}


def _param_types(inputs, out, arg_names, aux_names, default=np.float32):
    """The dtypes of the arguments and auxiliary states, inferred from the inputs' dtype
    attributes; ``default`` for all when that cannot be done (as in MXNet)."""
    arg_types = aux_types = None
    given = {}
    for sym in inputs:
        types = sym.infer_type_partial()[0]
        if not types or types[0] is None:
            given = None
            break
        given[sym.name] = types[0]
    if given:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                arg_types, _, aux_types = out.infer_type(**given)
        except MXNetError:
            arg_types = aux_types = None
    if arg_types is None or len(arg_types) != len(arg_names):
        arg_types = [default] * len(arg_names)
    if aux_types is None or len(aux_types) != len(aux_names):
        aux_types = [default] * len(aux_names)
    return arg_types, aux_types
