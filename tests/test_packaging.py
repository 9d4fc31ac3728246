"""The README's set-up commands and CI must stay in step."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme_commands():
    with open(os.path.join(ROOT, 'README.md')) as f:
        lines = f.read().splitlines()
    return [ln.strip() for ln in lines[:6] if ln.startswith('    ')]


def test_readme_starts_with_two_commands():
    commands = _readme_commands()
    assert len(commands) == 2, commands
    assert 'pytest' in commands[1]
    assert 'pytest' not in commands[0] and 'python ' in commands[0]


def test_ci_runs_the_readme_test_command():
    with open(os.path.join(ROOT, '.ci', 'run')) as f:
        ci = [ln.strip() for ln in f if ln.strip() and not ln.startswith('#')]
    assert _readme_commands()[1] in ci


def test_version_is_declared_once():
    with open(os.path.join(ROOT, 'minigluon', '__init__.py')) as f:
        assert re.search(r"^__version__ = '\d+\.\d+\.\d+'$", f.read(), re.M)
