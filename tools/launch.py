#!/usr/bin/env python3
"""Launch a distributed minigluon job from a checkout: ``minigluon-launch`` without
installing (see ``python tools/launch.py --help``)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# `import minigluon` serves the role in DMLC_ROLE (server, scheduler); the launcher is
# none of them, and sets DMLC_ROLE afresh for each process it starts.
os.environ.pop('DMLC_ROLE', None)

from minigluon.launcher.cli import main  # noqa: E402

if __name__ == '__main__':
    sys.exit(main())
