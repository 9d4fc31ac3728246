"""Every public name of the documented modules has a docstring.

Walks each non-underscore module under minigluon, every public class and function
defined in it (not imported from elsewhere), and every public method and property of
those classes; a docstring inherited from a base class counts. The failure lists every
name without one.
"""
import importlib
import inspect
import pkgutil

import minigluon

# The modules (a name covers the package and everything under it) whose docstrings
# are checked: all of minigluon.
DOCUMENTED_PACKAGES = ['minigluon']


def _documented(name):
    return any(name == p or name.startswith(p + '.') for p in DOCUMENTED_PACKAGES)


def _public_modules():
    names = ['minigluon'] + [m.name for m in pkgutil.walk_packages(minigluon.__path__,
                                                                      'minigluon.')]
    for name in names:
        parts = name.split('.')[1:]
        if any(p.startswith('_') for p in parts) or not _documented(name):
            continue
        yield importlib.import_module(name)


def _undocumented():
    missing, seen = [], set()
    for module in _public_modules():
        if not inspect.getdoc(module):
            missing.append(module.__name__)
        for attr, obj in sorted(vars(module).items()):
            if attr.startswith('_') or getattr(obj, '__module__', None) != module.__name__:
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            qualname = '%s.%s' % (module.__name__, attr)
            if not inspect.getdoc(obj):
                missing.append(qualname)
            if not inspect.isclass(obj):
                continue
            for key, value in vars(obj).items():
                if key.startswith('_'):
                    continue
                func = value.fget if isinstance(value, property) else \
                    getattr(value, '__func__', value)
                # getdoc on the class attribute finds a docstring inherited from a base.
                if inspect.isfunction(func) and not inspect.getdoc(getattr(obj, key)):
                    missing.append('%s.%s' % (qualname, key))
    return missing


def test_documented_packages_exist():
    for name in DOCUMENTED_PACKAGES:
        importlib.import_module(name)


def test_public_names_have_docstrings():
    missing = _undocumented()
    assert not missing, 'public names without a docstring:\n  ' + '\n  '.join(missing)
