"""What a dead worker, server or scheduler costs a job run with ``--max-restarts 1``.

    python benchmarks/bench_elastic.py [--kvstore dist_sync] [--runs 4] [--workers 2]
        [--servers 1] [--synthetic 2000] [--trigger 'Epoch 0: Test_acc'] [--span 20]
        [--victim worker|server|scheduler] [--replication] [--keep DIR] [--smoke]

Runs ``examples/cifar10_dist.py`` (the small CIFAR ResNet, synthetic data, 3 epochs)
under the local launcher once undisturbed, then ``--runs`` times with one process of
the ``--victim`` role (a worker or server chosen at random, or the scheduler) killed
with SIGKILL a random 0..``--span`` seconds after worker 0 prints
the ``--trigger`` line (by default: at some moment of epoch 1; ``'Epoch 1: Test_acc'``
with a short span kills it in the barrier that ends epoch 1). A dead server is survived
only with ``--replication`` (the launcher's: every server's keys on a backup server
too; needs ``--servers 2`` or more). Each run prints its exit
status, wall time against the undisturbed run's, every rank's final accuracy against
the undisturbed one's and any process left behind, and OK when the launcher exited 0,
every rank printed every epoch's accuracy, the final accuracies are within 0.02,
the wall time is at most 30 s more and nothing is left; a failing run's output is kept
in ``--keep``. ``dist_sync`` gives the same accuracies to the last digit; under
``dist_async`` undisturbed runs already differ from each other (the servers apply the
workers' pushes in arrival order), so there only ``--workers 1`` compares exactly.
``--smoke`` runs one kill on 64 synthetic images for 3 epochs, the victim killed the
moment the trigger line comes: the test suite's check that the script still works.
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCURACY = re.compile(r'^\[worker (\d+)\] Epoch (\d+): Test_acc (\S+)$', re.M)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--kvstore', default='dist_sync')
    p.add_argument('--runs', type=int, default=4)
    p.add_argument('--workers', type=int, default=2)
    p.add_argument('--servers', type=int, default=1)
    p.add_argument('--synthetic', type=int, default=2000)
    p.add_argument('--epochs', type=int, default=3)
    p.add_argument('--trigger', default='Epoch 0: Test_acc')
    p.add_argument('--span', type=float, default=20.0)
    p.add_argument('--seed', type=int, default=1)
    p.add_argument('--victim', choices=['worker', 'server', 'scheduler'], default='worker')
    p.add_argument('--replication', action='store_true',
                   help="the launcher's --replication (servers' keys on a backup server)")
    p.add_argument('--keep', default='.', help='folder for the output of failed runs')
    p.add_argument('--smoke', action='store_true',
                   help='one kill, 64 images, 3 epochs, killed at the trigger: does it run?')
    args = p.parse_args()
    if args.smoke:
        # the kill comes at once (span 0) so that it lands while the tiny job still runs
        args.runs, args.synthetic, args.epochs, args.span = 1, 64, 3, 0.0
    return args


def job_processes(mark):
    """{pid: environment} of the processes carrying ``mark`` in their environment."""
    found = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/environ' % pid, 'rb') as f:
                env = dict(item.split(b'=', 1) for item in f.read().split(b'\0') if b'=' in item)
        except OSError:
            continue
        if mark.encode() in env:
            found[int(pid)] = env
    return found


def run_job(args, mark, victim=None, delay=0.0):
    """One launch; kills ``victim`` = (role, rank) ``delay`` s after worker 0's trigger line."""
    command = [sys.executable, 'tools/launch.py', '-n', str(args.workers), '-s',
               str(args.servers), '--launcher', 'local', '--max-restarts', '1',
               '--env', 'OMP_NUM_THREADS=1', '--env', mark + '=1'] + \
        (['--replication'] if args.replication else []) + [
               sys.executable, 'examples/cifar10_dist.py', '--model', 'cifar_resnet20_v1',
               '--synthetic', str(args.synthetic), '--num-epochs', str(args.epochs),
               '--batch-size', '32', '--kvstore', args.kvstore]
    env = dict(os.environ, PYTHONPATH=ROOT)
    started = time.time()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    killed, lines = [], []

    def kill():
        role, rank = victim
        index = {'worker': b'DMLC_WORKER_ID', 'server': b'DMLC_SERVER_ID'}.get(role)
        pids = [pid for pid, e in job_processes(mark).items()
                if e.get(b'DMLC_ROLE') == role.encode() and
                (index is None or e.get(index) == str(rank).encode())]
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        killed.append(bool(pids))

    armed = victim is not None
    for line in proc.stdout:
        lines.append(line)
        if armed and line.startswith('[worker 0] %s' % args.trigger):
            armed = False
            threading.Timer(delay, kill).start()
    code = proc.wait()
    wall = time.time() - started
    time.sleep(1)
    output = ''.join(lines)
    return code, wall, ACCURACY.findall(output), job_processes(mark), killed, output


def main():
    args = parse_args()
    mark = 'MINIGLUON_BENCH_ELASTIC_%d' % os.getpid()
    code, wall0, accs0, left, _, _ = run_job(args, mark)
    final0 = {rank: float(acc) for rank, epoch, acc in accs0 if int(epoch) == args.epochs - 1}
    print('undisturbed: exit %d, %.1f s, final accuracy %s, left %s'
          % (code, wall0, final0, sorted(left)), flush=True)
    expected = sorted((str(r), str(e)) for r in range(args.workers) for e in range(args.epochs))
    rng = random.Random(args.seed)
    failures = 0
    for i in range(args.runs):
        count = {'worker': args.workers, 'server': args.servers, 'scheduler': 1}[args.victim]
        victim, delay = (args.victim, rng.randrange(count)), rng.uniform(0, args.span)
        code, wall, accs, left, killed, output = run_job(args, mark, victim, delay)
        final = {rank: float(acc) for rank, epoch, acc in accs if int(epoch) == args.epochs - 1}
        ok = (code == 0 and sorted(set((r, e) for r, e, _ in accs)) == expected and
              all(abs(final.get(r, -1) - a) <= 0.02 for r, a in final0.items()) and
              wall <= wall0 + 30 and not left)
        print('run %d: %s %d killed %.1f s after %r%s: exit %d, %.1f s (%+.1f), final '
              'accuracy %s, left %s: %s' % (i, victim[0], victim[1], delay, args.trigger,
                                             '' if any(killed) else ' (it had ended)', code,
                                             wall, wall - wall0, final, sorted(left),
                                             'OK' if ok else 'FAIL'), flush=True)
        if not ok:
            failures += 1
            with open(os.path.join(args.keep, 'bench_elastic_%s_%s_%d.log'
                                   % (args.kvstore, args.victim, i)), 'w') as f:
                f.write(output)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
