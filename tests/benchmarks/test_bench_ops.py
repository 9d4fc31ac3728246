"""benchmarks/bench_ops.py runs end to end at a tiny size (``--smoke``), so it cannot
rot: every row of its table timed."""
import re


def test_bench_ops_prints_every_row_of_its_table(smoke):
    stdout = smoke('bench_ops.py', timeout=120)
    rows = re.findall(r'^(\S.*?) +(-?[\d.]+) +(-?[\d.]+) +(-?[\d.]+)$', stdout, re.M)
    assert [name for name, *_ in rows] == [
        'relu forward', 'x.relu() method', 'a + b operator', 'a * 2 (scalar)', 'sum(axis=0)',
        'relu record+backward'], stdout
    assert all(float(ours) > 0 and float(ref) > 0 for _, ours, ref, _ in rows), stdout
    assert re.search(r'^largest overhead: -?[\d.]+ us per op call', stdout, re.M)
