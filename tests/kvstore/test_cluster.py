"""The multi-process test helper itself (cluster.py): reading a process's output while it
writes loses nothing of it."""
from .cluster import Cluster

WRITER = '''for i in range(3000):
    print('line %d' % i, flush=True)
'''


def test_reading_the_output_while_a_process_writes_it_loses_no_line(tmp_path):
    job = Cluster(tmp_path, WRITER)
    job.start_worker(0)
    try:
        while job.procs['worker:0'].poll() is None:
            job.output('worker:0')     # (each read used to move the writer's offset too)
        assert job.procs['worker:0'].wait(30) == 0
        assert job.output('worker:0').splitlines() == ['line %d' % i for i in range(3000)]
    finally:
        job.close()
