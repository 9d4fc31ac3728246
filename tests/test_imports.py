"""The package's import structure: every module imports in a fresh interpreter, every
import goes down the layers listed here (README's "How the code is laid out" describes
them), no two modules import each other through any chain (imports inside functions
count: they are how cycles hide), CuPy is imported by ``backend.py`` alone and numba by
``ndarray/ops/compiled.py`` alone."""
import ast
import functools
import os
import subprocess
import sys

import minigluon

PACKAGE_DIR = os.path.dirname(minigluon.__file__)
REPO = os.path.dirname(PACKAGE_DIR)


def _modules():
    """{module name: path} for every module of the package."""
    found = {}
    for root, _, files in os.walk(PACKAGE_DIR):
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, REPO)[:-3].replace(os.sep, '.')
                found[rel[:-len('.__init__')] if rel.endswith('.__init__') else rel] = path
    return found


@functools.lru_cache(maxsize=None)
def _tree(path):
    """The parsed module at ``path`` (each test walks every module; parse each once)."""
    with open(path) as f:
        return ast.parse(f.read(), path)


def _imports(name, path, modules):
    """{package module: line of its first import} for the modules that module ``name``
    (at ``path``) names in an import."""
    package = name if path.endswith('__init__.py') else name.rpartition('.')[0]
    targets = {}
    for node in ast.walk(_tree(path)):
        found = set()
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = package.split('.')
                parts = parts[:len(parts) - node.level + 1]
                base = '.'.join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                sub = '%s.%s' % (base, alias.name)
                found.add(sub if sub in modules else base)
        for target in found:
            targets[target] = min(targets.get(target, node.lineno), node.lineno)
    return {t: line for t, line in targets.items() if t in modules and t != name}


def _find_cycle(graph):
    """One cycle of ``graph`` as a list of nodes, or None."""
    state = {}

    def visit(node, path):
        state[node] = 'open'
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 'open':
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt, path + [nxt])
                if cycle:
                    return cycle
        state[node] = 'done'
        return None
    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [start])
            if cycle:
                return cycle
    return None


@functools.lru_cache(maxsize=None)
def _graph():
    """{module: {imported module: line}} of the whole package."""
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_the_module_graph_has_no_cycle():
    # a package's __init__ importing its own modules is how a package is assembled; the
    # other way round (a module importing its package) would close a loop
    cycle = _find_cycle(_graph())
    assert cycle is None, 'import cycle: %s' % ' -> '.join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert _find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert _find_cycle({'a': {'b', 'c'}, 'b': {'c'}, 'c': set()}) is None


# The layers, lowest first: a module imports modules of lower layers and of its own entry
# (module or package), nothing else. An entry names a module or a package of minigluon
# (``__init__`` is minigluon/__init__.py); a module belongs to the longest entry naming it.
# Entries sharing a layer do not import each other.
LAYERS = [
    {'base', 'network', 'nesting', 'name'},
    {'registry', 'util', '_missing'},
    {'backend'},
    {'context'},
    {'ndarray'},    # ndarray/image.py and ndarray/contrib.py too: mx.nd assembles them
    {'attribute', 'profiler'},
    {'symbol'},
    {'autograd'},    # autograd.get_symbol makes a Symbol of the tape
    {'initializer', 'lr_scheduler', 'metric'},
    {'optimizer', 'progress'},    # an optimizer's saved states rebuild its lr_scheduler
    {'kvstore', 'recordio'},
    {'gluon'},
    {'io'},    # ImageRecordIter decodes in the DataLoader's workers
    {'contrib', 'model', 'monitor', 'operator'},
    {'callback', 'rnn', 'module', 'image'},
    {'launcher', 'visualization', 'plot', 'test_utils',
     'random', 'runtime', 'numpy', 'numpy_extension'},
    {'__init__'},
]

# Inside the kvstore: the transport knows nothing of the parameter-server roles (ps/), and
# neither knows the stores built on them.
KVSTORE_LAYERS = [
    {'kvstore.base', 'kvstore.compression'},
    {'kvstore.transport'},
    {'kvstore.ps'},
    {'kvstore.local', 'kvstore.teststore'},
    {'kvstore.dist'},
    {'kvstore'},    # kvstore/__init__.py and __main__.py
]


def _short(name):
    """``minigluon.a.b`` as ``a.b``; the package itself as ``__init__``."""
    return name.partition('.')[2] or '__init__'


def _place(name, layers):
    """(layer index, entry) of the longest entry of ``layers`` naming module ``name``, or
    None."""
    places = [(len(entry), i, entry) for i, layer in enumerate(layers) for entry in layer
              if name == entry or name.startswith(entry + '.')]
    return max(places)[1:] if places else None


def _against_the_layers(graph, layers):
    """The imports (module, imported module) of ``graph`` that go up or across ``layers``;
    modules without a place in ``layers`` are not looked at."""
    bad = []
    for name in sorted(graph):
        here = _place(name, layers)
        for target in sorted(graph[name]):
            there = _place(target, layers)
            if here and there and there[0] >= here[0] and there[1] != here[1]:
                bad.append((name, target))
    return bad


@functools.lru_cache(maxsize=None)
def _short_graph():
    """({module: {imported module: line}}, {module: path}) with short names."""
    graph = {_short(n): {_short(t): line for t, line in imports.items()}
             for n, imports in _graph().items()}
    return graph, {_short(n): os.path.relpath(path, REPO) for n, path in _modules().items()}


def _describe(bad, graph, paths, layers):
    """One line per import of ``bad``: where it is, and the layers it goes between."""
    lines = []
    for name, target in bad:
        (i, entry), (j, other) = _place(name, layers), _place(target, layers)
        lines.append('%s:%d: %s (layer %d) imports %s (layer %d)'
                     % (paths[name], graph[name][target], entry, i, other, j))
    return '\n'.join(lines)


def test_every_module_has_a_layer():
    graph, _ = _short_graph()
    lost = sorted(n for n in graph if _place(n, LAYERS) is None)
    assert not lost, ('%s have no layer: add each to LAYERS in tests/test_imports.py '
                      '(and to the README\'s layout table)' % ', '.join(lost))


def test_every_import_goes_down_the_layers():
    graph, paths = _short_graph()
    bad = _against_the_layers(graph, LAYERS)
    assert not bad, ('imports that do not go down the layers (a module imports lower '
                     'layers and its own package only):\n'
                     + _describe(bad, graph, paths, LAYERS))


def test_the_kvstores_transport_ps_and_stores_import_downwards():
    graph, paths = _short_graph()
    assert {n for n in graph if n.startswith('kvstore.ps.')} and \
        {n for n in graph if n.startswith('kvstore.transport.')}
    bad = _against_the_layers(graph, KVSTORE_LAYERS)
    assert not bad, ('imports against the kvstore\'s layers:\n'
                     + _describe(bad, graph, paths, KVSTORE_LAYERS))


def test_the_layer_check_finds_imports_up_and_across():
    layers = [{'a'}, {'b', 'c'}, {'d'}]
    graph = {'a': {'a.x'}, 'a.x': set(), 'b': {'a.x'}, 'c': {'a'}, 'd': {'b', 'c', 'a'},
             'elsewhere': {'d'}}
    assert _against_the_layers(graph, layers) == []
    graph['a.x'] = {'d'}    # up
    graph['c'] = {'a', 'b'}    # across, within one layer
    bad = _against_the_layers(graph, layers)
    assert bad == [('a.x', 'd'), ('c', 'b')]
    lines = {'a.x': {'d': 7}, 'c': {'a': 2, 'b': 3}}
    assert _describe(bad, lines, {'a.x': 'a/x.py', 'c': 'c.py'}, layers) == (
        'a/x.py:7: a (layer 0) imports d (layer 2)\nc.py:3: c (layer 1) imports b (layer 1)')
    assert _place('a.x.y', layers) == (0, 'a') and _place('ab', layers) is None
    # the longest entry places a module: a package's inner layers override it
    assert _place('a.x', [{'a'}, {'a.x'}]) == (1, 'a.x')


def _numba_importable():
    try:
        import numba  # noqa: F401
    except Exception:
        return False
    return True


def _compiled_kernels(path):
    """True for a module of kernels compiled by numba (it imports ``compiled.kernel``)."""
    return any(isinstance(node, ast.ImportFrom) and node.module == 'compiled'
               and any(a.name == 'kernel' for a in node.names)
               for node in ast.walk(_tree(path)))


def test_every_module_imports_in_a_fresh_interpreter():
    # modules of compiled kernels are only imported where numba is
    skip = set() if _numba_importable() else {
        n for n, path in _modules().items() if _compiled_kernels(path)}
    names = sorted(n for n in _modules() if not n.endswith('__main__') and n not in skip)
    code = 'import importlib\nfor n in %r:\n    importlib.import_module(n)\n' % names
    env = {k: v for k, v in os.environ.items() if not k.startswith('DMLC_')}
    out = subprocess.run([sys.executable, '-c', code], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


@functools.lru_cache(maxsize=None)
def _top_level_imports(path):
    """The first part of every name the module at ``path`` imports (``numba`` for
    ``numba.core``), anywhere in it."""
    names = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.add((node.module or '').split('.')[0])
    return names


def _only_one_module_imports(packages, door):
    for name, path in _modules().items():
        if name != door:
            assert not _top_level_imports(path) & set(packages), (
                '%s imports %s; ask %s instead' % (name, packages[0], door))


def test_only_the_backend_imports_cupy():
    _only_one_module_imports(('cupy', 'cupyx'), 'minigluon.backend')


def test_only_compiled_imports_numba():
    _only_one_module_imports(('numba',), 'minigluon.ndarray.ops.compiled')


def test_the_kernel_modules_are_found():
    # the fresh-interpreter test leaves these out where numba is missing: the finder must
    # know the one there is
    assert {n for n, path in _modules().items() if _compiled_kernels(path)} == {
        'minigluon.ndarray.ops.conv_winograd_cpu', 'minigluon.ndarray.ops.normalization_cpu',
        'minigluon.ndarray.ops.pooling_cpu'}  # (updates_cpu compiles lazily: it imports)
