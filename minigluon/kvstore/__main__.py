"""``python -m minigluon.kvstore [--role scheduler|server]``: serve a role, no user script.

The job is configured by the same environment variables as every other process
(DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER, DMLC_NUM_WORKER, the job
secret, ...); ``--role`` overrides DMLC_ROLE.
"""
import argparse
import os
import sys

from .ps.roles import _serve_from_env


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m minigluon.kvstore', description=__doc__)
    parser.add_argument('--role', choices=['scheduler', 'server'],
                        help='the role to serve (default: $DMLC_ROLE)')
    args = parser.parse_args(argv)
    if args.role:
        os.environ['DMLC_ROLE'] = args.role
    if os.environ.get('DMLC_ROLE') not in ('scheduler', 'server'):
        parser.error('DMLC_ROLE=%r: pass --role scheduler or --role server'
                     % os.environ.get('DMLC_ROLE'))
    return _serve_from_env()


if __name__ == '__main__':
    sys.exit(main())
