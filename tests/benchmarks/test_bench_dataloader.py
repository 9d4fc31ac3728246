"""benchmarks/bench_dataloader.py runs end to end at a tiny size (``--smoke``), so it
cannot rot: the CIFAR-10 pipeline over a synthetic set, in the main process and in
one and two workers."""
import re


def test_bench_dataloader_prints_a_row_per_worker_count(smoke):
    stdout = smoke('bench_dataloader.py', timeout=120)
    assert re.search(r'^256 images, batch 32, ', stdout, re.M), stdout
    rows = re.findall(r'^\| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|$', stdout, re.M)
    assert [workers for workers, *_ in rows] == ['0', '1', '2'], stdout
    # (CPU seconds come in clock ticks: a tiny epoch may round to none, so only the rate)
    assert all(int(rate) > 0 for _, rate, _, _ in rows), stdout
