"""``python -m minigluon.profiler merge OUT IN [IN ...]``: one trace from many."""
import argparse
import sys

from .merge import merge


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m minigluon.profiler',
        description='Tools for the Chrome traces that mx.profiler.dump() writes.')
    commands = parser.add_subparsers(dest='command', required=True)
    cmd = commands.add_parser(
        'merge', help='merge the traces of several processes (e.g. every worker and server '
                      'of a job) into one timeline')
    cmd.add_argument('out', help='the merged trace to write')
    cmd.add_argument('inputs', nargs='+', help='the traces to merge')
    args = parser.parse_args(argv)
    try:
        count = merge(args.out, args.inputs)
    except (OSError, ValueError) as exc:
        sys.stderr.write('%s\n' % exc)
        return 1
    print('wrote %d events from %d files to %s' % (count, len(args.inputs), args.out))
    return 0


if __name__ == '__main__':
    sys.exit(main())
