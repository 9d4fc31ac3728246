"""The package's import structure: every module imports in a fresh interpreter, no two
modules import each other through any chain (imports inside functions count: they are
how cycles hide), CuPy is imported by ``backend.py`` alone and numba by
``ndarray/ops/compiled.py`` alone."""
import ast
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


def _imports(name, path, modules):
    """The package modules that module ``name`` (at ``path``) names in an import."""
    package = name if path.endswith('__init__.py') else name.rpartition('.')[0]
    targets = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                parts = package.split('.')
                parts = parts[:len(parts) - node.level + 1]
                base = '.'.join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                sub = '%s.%s' % (base, alias.name)
                targets.add(sub if sub in modules else base)
    return {t for t in targets if t in modules and t != name}


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


def test_the_module_graph_has_no_cycle():
    modules = _modules()
    # a package's __init__ importing its own modules is how a package is assembled; the
    # other way round (a module importing its package) would close a loop
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    cycle = _find_cycle(graph)
    assert cycle is None, 'import cycle: %s' % ' -> '.join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert _find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert _find_cycle({'a': {'b', 'c'}, 'b': {'c'}, 'c': set()}) is None


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
               for node in ast.walk(ast.parse(open(path).read(), path)))


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


def _only_one_module_imports(packages, door):
    for name, path in _modules().items():
        if name == door:
            continue
        for node in ast.walk(ast.parse(open(path).read(), path)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ''] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split('.')[0] in packages for n in names), (
                '%s imports %s; ask %s instead' % (name, packages[0], door))


def test_only_the_backend_imports_cupy():
    _only_one_module_imports(('cupy', 'cupyx'), 'minigluon.backend')


def test_only_compiled_imports_numba():
    _only_one_module_imports(('numba',), 'minigluon.ndarray.ops.compiled')


def test_the_kernel_modules_are_found():
    # the fresh-interpreter test leaves these out where numba is missing: the finder must
    # know the one there is
    assert {n for n, path in _modules().items() if _compiled_kernels(path)} == {
        'minigluon.ndarray.ops.conv_winograd_cpu', 'minigluon.ndarray.ops.normalization_cpu'}
