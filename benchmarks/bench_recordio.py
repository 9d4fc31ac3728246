"""Images/s decoding and augmenting JPEGs from a ``.rec`` file: minigluon's pipelines
against MXNet 1.9.1's ``ImageRecordIter`` (its C++ pipeline), on the same file.

Usage::

    PYTHONPATH=. python benchmarks/bench_recordio.py [--images 2000] [--size 224]
        [--batch-size 64] [--workers 1,2] [--repeat 3] [--mxnet-python PATH] [--smoke]

The script writes ``--images`` photo-like ``--size`` x ``--size`` JPEGs (quality 95, as
im2rec) into a ``.rec``/``.idx`` with minigluon, then times the second pass over them
(an epoch in training), each configuration in a process of its own and the
configurations alternated ``--repeat`` times:

- ``mx.io.ImageRecordIter``: minigluon's, decoding in ``preprocess_threads`` worker
  processes;
- ``gluon DataLoader``: ``ImageRecordDataset`` with ``RandomFlipLeftRight``,
  ``ToTensor`` and ``Normalize`` in a DataLoader with ``num_workers`` processes;
- ``MXNet ImageRecordIter``: the same call under ``--mxnet-python`` (default: the
  ``MINIGLUON_MXNET_PYTHON`` variable; the column is left out without one), with
  ``preprocess_threads`` decoding threads.

Every pipeline gives float32 NCHW batches, mirrored at random and normalised by
ImageNet's mean and standard deviation. The table has the best images/s of the repeats
and the ratio to MXNet at the same number of workers (threads for MXNet). ``--smoke``
runs 12 JPEGs of 32x32 in batches of 5 (a short last batch) once, with 0 and 1 workers
unless ``--workers`` says otherwise: the test suite's check that the script still works.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MEAN = (123.68, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)


def make_rec(prefix, count, size, seed=0):
    """Photo-like JPEGs: smooth colour fields with fine noise, about as big as photos."""
    import numpy as np
    from PIL import Image

    from minigluon import recordio
    rng = np.random.RandomState(seed)
    writer = recordio.MXIndexedRecordIO(prefix + '.idx', prefix + '.rec', 'w')
    for i in range(count):
        coarse = rng.randint(0, 256, size=(8, 8, 3)).astype(np.uint8)
        field = np.asarray(Image.fromarray(coarse).resize((size, size), Image.BICUBIC),
                           dtype=np.int16)
        noisy = np.clip(field + rng.randint(-12, 13, size=field.shape), 0, 255)
        writer.write_idx(i, recordio.pack_img((0, float(i % 10), i, 0),
                                              noisy.astype(np.uint8)[:, :, ::-1], quality=95))
    writer.close()


def run_minigluon_iter(rec, size, batch_size, workers):
    import minigluon as mx
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, size, size),
                               batch_size=batch_size, rand_mirror=True,
                               mean_r=MEAN[0], mean_g=MEAN[1], mean_b=MEAN[2],
                               std_r=STD[0], std_g=STD[1], std_b=STD[2],
                               preprocess_threads=workers, round_batch=False)
    return _time_batches(it, lambda batch: batch.data[0].shape[0] - (batch.pad or 0))


def run_minigluon_loader(rec, size, batch_size, workers):
    import minigluon as mx
    from minigluon.gluon.data.vision import transforms
    transform = transforms.Compose([
        transforms.RandomFlipLeftRight(), transforms.ToTensor(),
        transforms.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD])])
    dataset = mx.gluon.data.vision.ImageRecordDataset(rec).transform_first(transform)
    loader = mx.gluon.data.DataLoader(dataset, batch_size=batch_size, num_workers=workers)
    return _time_batches(loader, lambda batch: batch[0].shape[0])


def run_mxnet_iter(rec, size, batch_size, workers):
    import mxnet as mx
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, size, size),
                               batch_size=batch_size, rand_mirror=True,
                               mean_r=MEAN[0], mean_g=MEAN[1], mean_b=MEAN[2],
                               std_r=STD[0], std_g=STD[1], std_b=STD[2],
                               preprocess_threads=max(workers, 1), round_batch=False)
    return _time_batches(it, lambda batch: batch.data[0].shape[0] - (batch.pad or 0))


def _time_batches(batches, count):
    """Seconds for the second pass over the data (after a first one and ``reset()``,
    as in training: a worker's start each epoch included, the iterator's construction
    not), and the images it gave (MXNet's last batch with round_batch=False says pad=0
    and fills up with stale rows, so its count is rounded up to whole batches)."""
    for _ in batches:
        pass
    if hasattr(batches, 'reset'):
        batches.reset()
    start = time.perf_counter()
    images = 0
    for batch in batches:
        images += count(batch)
    return time.perf_counter() - start, images


PIPELINES = {'minigluon ImageRecordIter': run_minigluon_iter,
             'minigluon DataLoader': run_minigluon_loader,
             'MXNet ImageRecordIter': run_mxnet_iter}


def measure(python, pipeline, rec, args, workers):
    env = dict(os.environ, OMP_NUM_THREADS='1', MXNET_CPU_WORKER_NTHREADS='1')
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env['PYTHONPATH'] = repo + os.pathsep + env.get('PYTHONPATH', '')
    done = subprocess.run([python, os.path.abspath(__file__), '--child', pipeline,
                           '--rec', rec, '--size', str(args.size),
                           '--batch-size', str(args.batch_size), '--workers', str(workers)],
                          capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError('%s with %d workers failed:\n%s' % (pipeline, workers,
                                                               done.stderr[-3000:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--images', type=int, default=2000)
    parser.add_argument('--size', type=int, default=224)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--workers',
                        help='comma-separated worker counts (0: decode in the main process; '
                             'default 1,2, with --smoke 0,1)')
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--mxnet-python', default=os.environ.get('MINIGLUON_MXNET_PYTHON'))
    parser.add_argument('--smoke', action='store_true',
                        help='12 JPEGs of 32x32, batch 5, one repeat: does it run?')
    parser.add_argument('--child', choices=sorted(PIPELINES), help=argparse.SUPPRESS)
    parser.add_argument('--rec', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.images, args.size, args.batch_size, args.repeat = 12, 32, 5, 1
    if args.workers is None:
        args.workers = '0,1' if args.smoke else '1,2'
    if args.child:
        seconds, images = PIPELINES[args.child](args.rec, args.size, args.batch_size,
                                                int(args.workers))
        print(json.dumps({'seconds': seconds, 'images': images}))
        return

    workers = [int(w) for w in args.workers.split(',')]
    folder = tempfile.mkdtemp(prefix='bench-recordio-')
    rec = os.path.join(folder, 'images')
    make_rec(rec, args.images, args.size)
    rec += '.rec'
    print('%d JPEGs of %dx%d, %.1f MB; batch %d' % (args.images, args.size, args.size,
                                                    os.path.getsize(rec) / 1e6,
                                                    args.batch_size))
    runs = [(name, sys.executable) for name in PIPELINES if not name.startswith('MXNet')]
    if args.mxnet_python:
        runs.append(('MXNet ImageRecordIter', args.mxnet_python))
    best = {}
    for _ in range(args.repeat):
        for w in workers:
            for name, python in runs:
                result = measure(python, name, rec, args, w)
                whole = -(-args.images // args.batch_size) * args.batch_size
                if not args.images <= result['images'] <= whole:
                    raise RuntimeError('%s gave %d images of %d' % (name, result['images'],
                                                                   args.images))
                key = (name, w)
                best[key] = max(best.get(key, 0.0), args.images / result['seconds'])
    print('\n| pipeline | workers | images/s | vs MXNet |')
    print('|---|---:|---:|---:|')
    for w in workers:
        for name, _ in runs:
            anchor = best.get(('MXNet ImageRecordIter', w))
            ratio = '%.2fx' % (best[(name, w)] / anchor) if anchor else '-'
            print('| %s | %d | %.0f | %s |' % (name, w, best[(name, w)], ratio))


if __name__ == '__main__':
    main()
