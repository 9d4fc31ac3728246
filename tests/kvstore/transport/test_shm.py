"""Arrays through shared memory: the ring, who may use it, and jobs that use it or not."""
import gc
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from minigluon.kvstore.transport import shm, wire
from minigluon.kvstore.ps.config import Config
from minigluon.kvstore.transport.wire import Message

from ..cluster import ROOT, Cluster, results

zmq = pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
from minigluon.kvstore.transport.van import Van  # noqa: E402  (needs pyzmq)

pytestmark = pytest.mark.skipif(not shm.available(), reason='needs Linux memfd and /proc')
BIG = shm.MIN_BYTES // 4        # float32 elements of the smallest array that goes in a ring


def pair(size=1 << 20):
    """A ring and this process's own mapping of it, as a peer would open it."""
    ring = shm.Ring(size)
    return ring, shm.Mapping(ring.offer(), accept_other_hosts=False)


def test_an_array_goes_through_and_its_region_is_reused_only_after_its_last_view():
    ring, mapping = pair(HEADER_AND(2 * (BIG * 4 + shm.REGION)))
    a = np.arange(BIG, dtype=np.float32)
    view, ref = ring.place(a)
    a[:] = -1                   # the ring holds a copy: the sender may change its array
    got = mapping.view(ref, np.dtype(np.float32), (BIG,), BIG * 4)
    derived = got.reshape(2, -1)[1:]      # numpy views of a view: the region stays held
    del got
    gc.collect()
    assert ring.place(a) is not None      # the second region of the ring
    assert ring.place(a) is None          # full: the first is still held by `derived`
    assert derived[0, 0] == BIG // 2
    del derived
    gc.collect()
    assert ring.place(a) is not None      # released with its last view


def HEADER_AND(n):
    return shm.HEADER + n


def test_regions_come_back_in_order_and_an_empty_ring_starts_over():
    ring, mapping = pair(HEADER_AND(3 * (BIG * 4 + shm.REGION)))
    a = np.ones(BIG, np.float32)
    refs = [ring.place(a)[1] for _ in range(3)]
    assert ring.place(a) is None
    views = [mapping.view(r, np.dtype(np.float32), (BIG,), BIG * 4) for r in refs]
    del views[1]
    gc.collect()
    assert ring.place(a) is None          # the oldest region is still held
    del views[0]
    gc.collect()
    again = ring.place(a)[1]              # two free now, in order
    assert again[0] == refs[0][0] and again[1] > refs[2][1]
    views = []
    gc.collect()
    assert ring.place(np.ones(2 * BIG, np.float32)) is not None  # empty: from the start


def test_stale_and_out_of_range_references_are_refused():
    ring, mapping = pair()
    view, ref = ring.place(np.ones(BIG, np.float32))
    f32 = np.dtype(np.float32)
    with pytest.raises(ValueError, match='reused'):
        mapping.view([ref[0], ref[1] + 1], f32, (BIG,), BIG * 4)
    with pytest.raises(ValueError, match='outside'):
        mapping.view([ref[0], ref[1]], f32, (1 << 20,), 4 << 20)
    with pytest.raises(ValueError, match='bad shared-memory reference'):
        mapping.view(['0', 1], f32, (BIG,), BIG * 4)
    # a duplicate's views die: its stale release does not free a region in use again
    dup = mapping.view(ref, f32, (BIG,), BIG * 4)
    del dup
    gc.collect()
    ring2, mapping2 = pair(HEADER_AND(BIG * 4 + shm.REGION))
    first, ref2 = ring2.place(np.ones(BIG, np.float32))
    old = mapping2.view(ref2, f32, (BIG,), BIG * 4)
    del old
    gc.collect()
    _, newer = ring2.place(np.ones(BIG, np.float32))      # the same region, reused
    stale = shm._release
    stale(mapping2._buf, ref2[0], ref2[1])                 # a late release of the old one
    assert ring2.place(np.ones(BIG, np.float32)) is None   # the new one is still in use
    assert newer[0] == ref2[0]


def test_a_forged_offer_is_refused():
    ring = shm.Ring(1 << 20)
    offer = dict(ring.offer(), nonce='00' * 16)
    with pytest.raises(OSError, match='nonce'):
        shm.Mapping(offer, accept_other_hosts=False)
    with pytest.raises(ValueError, match='malformed'):
        shm.Mapping(dict(ring.offer(), size='big'), accept_other_hosts=False)
    with open(__file__, 'rb') as other:      # any other file this process has open
        with pytest.raises(OSError, match='not a ring'):
            shm.Mapping(dict(ring.offer(), fd=other.fileno()), accept_other_hosts=False)


def test_a_message_naming_shared_memory_is_refused_where_none_is_shared():
    ring, mapping = pair()
    msg = Message('push', 'worker:0', seq=1, key=1, arrays=[np.ones(BIG, np.float32)])
    msg.arrays[0], ref = ring.place(msg.arrays[0])
    msg.shm = [ref]
    frames = wire.encode(b's' * 32, msg)
    assert len(frames) == 2                       # only the tag and the header
    with pytest.raises(wire.WireError, match='shares none'):
        wire.decode(b's' * 32, frames)

    def view(src, seq, ref, dtype, shape, nbytes):
        assert src == 'worker:0'
        return mapping.view(ref, dtype, shape, nbytes)
    got = wire.decode(b's' * 32, frames, view)
    assert np.array_equal(got.arrays[0], np.ones(BIG)) and got.shm == [ref]
    with pytest.raises(wire.WireError, match='data frames'):
        wire.decode(b's' * 32, frames + [b'extra'], view)


def test_a_stored_value_is_reused_only_when_dropped_and_read_by_everyone_it_went_to():
    store = shm.Store(shm.BOARD + 2 * (BIG * 4 + shm.REGION))
    readers = {peer: shm.StoreMapping(store.offer(peer), accept_other_hosts=False)
               for peer in ('worker:0', 'worker:1')}
    value = store.alloc((BIG,), np.float32)
    value[:] = 5
    other = store.alloc((BIG,), np.float32)
    assert store.alloc((BIG,), np.float32) is None             # full
    assert store.ref(np.ones(BIG, np.float32), 'worker:0') is None   # not one of the store's
    assert store.ref(value, 'worker:9') is None                 # a peer without the store
    ref = store.ref(value, 'worker:0')
    store.sent(ref, 'worker:0', 7)                              # message 7 to each worker
    store.sent(ref, 'worker:1', 7)
    views = {peer: m.view(ref, np.dtype(np.float32), (BIG,), BIG * 4, seq=7)
             for peer, m in readers.items()}
    for m in readers.values():
        m.delivered(7)
    assert all(np.array_equal(v, np.full(BIG, 5.0)) for v in views.values())
    del value, other
    gc.collect()
    kept = store.alloc((BIG,), np.float32)                      # `other` went to nobody
    assert kept is not None
    assert store.alloc((BIG,), np.float32) is None              # `value` is still read
    del views['worker:0']
    # message 8 was lost and will be re-sent: 9, which came, waits for it undelivered
    early = readers['worker:0'].view(ref, np.dtype(np.float32), (BIG,), BIG * 4, seq=9)
    del early
    gc.collect()
    assert readers['worker:0']._slot[0] == 7    # done with 7, but nothing said about 8
    assert store.alloc((BIG,), np.float32) is None              # ... by worker 1
    store.forget('worker:1')                                    # which is gone
    assert store.alloc((BIG,), np.float32) is not None
    with pytest.raises(ValueError, match='reused'):             # what worker 1 still held
        readers['worker:0'].view(ref, np.dtype(np.float32), (BIG,), BIG * 4, seq=8)


OTHER_NETNS = '''
import json, sys
from minigluon.kvstore.transport import shm, wire
offer = json.loads(sys.argv[1])
out = {}
for other_hosts in (False, True):
    try:
        shm.Mapping(offer, accept_other_hosts=other_hosts)
        out[str(other_hosts)] = 'mapped'
    except OSError as exc:
        out[str(other_hosts)] = str(exc)
print(json.dumps(out))
'''


def test_a_peer_in_another_network_namespace_is_another_host_unless_forced():
    ring = shm.Ring(1 << 20)
    argv = ['unshare', '--net', sys.executable, '-c', OTHER_NETNS, json.dumps(ring.offer())]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, PYTHONPATH=ROOT))
    except FileNotFoundError:
        pytest.skip('no unshare command')
    if proc.returncode != 0 and 'unshare' in proc.stderr:
        pytest.skip('cannot create a network namespace here: %s' % proc.stderr.strip())
    out = json.loads(proc.stdout)
    assert out == {'False': 'another host or network namespace', 'True': 'mapped'}


# ---- two vans in this process -----------------------------------------------------------
def van_config(transport, **changes):
    settings = dict(role='server', root_uri='127.0.0.1', root_port=1, num_server=1,
                    num_worker=1, secret=b's' * 32, transport=transport)
    settings.update(changes)
    return Config(**settings)


def send_and_receive(sender_transport, receiver_transport, count=3, settle=0, gap=0,
                     **changes):
    """``gap``: seconds between sends; ``settle`` s after the last arrival, every message
    must have been acknowledged."""
    got, arrived = [], threading.Event()

    def on_message(msg):
        got.append((msg.shm, [a.copy() for a in msg.arrays]))
        if len(got) == count:
            arrived.set()
    receiver = Van(van_config(receiver_transport, **changes), 'server:0', on_message,
                   bind=('127.0.0.1', 0))
    sender = Van(van_config(sender_transport, **changes), 'worker:0', lambda m: None)
    receiver.start()
    sender.start()
    try:
        sender.connect('server:0', *receiver.endpoint)
        sent = []
        for i in range(count):
            a = np.full(BIG, i, np.float32)
            sender.send('server:0', Message('push', '', key=i, arrays=[a, np.ones(3)]),
                        copy_arrays=True)
            sent.append(a.copy())
            a[:] = -7            # copy_arrays: changing it now must not change what arrives
            time.sleep(gap)
            if i == 0:           # the first one offers the ring: wait for the answer
                deadline = time.monotonic() + 20
                while sender_transport != 'tcp' and time.monotonic() < deadline and \
                        not (sender._rings.get('server:0') is False or
                             getattr(sender._rings.get('server:0'), 'ready', False)):
                    time.sleep(0.01)
        assert arrived.wait(20)
        if settle:
            time.sleep(settle)
            old = time.monotonic() - settle / 2
            unacked = [seq for (_, seq), entry in list(sender._unacked.items())
                       if entry[2] < old or seq <= count]
            assert unacked == [], 'still re-sent, never acknowledged: %s' % unacked
        return got, sent
    finally:
        sender.stop()
        receiver.stop()


@pytest.mark.parametrize('sender, receiver, expect_shm', [
    ('auto', 'auto', True), ('shm', 'auto', True), ('tcp', 'auto', False),
    ('auto', 'tcp', False),
])
def test_transport_is_chosen_by_both_ends_and_arrays_arrive_intact(sender, receiver,
                                                                   expect_shm):
    got, sent = send_and_receive(sender, receiver)
    assert got[0][0] is None                         # the first message offers the ring
    later = [refs for refs, _ in got[1:]]
    if expect_shm:
        assert all(refs[0] is not None and refs[1] is None for refs in later)  # small: inline
    else:
        assert all(refs is None for refs in later)
    for (_, arrays), a in zip(got, sent):
        assert np.array_equal(arrays[0], a) and np.array_equal(arrays[1], np.ones(3))


def test_resend_keeps_working_with_shared_memory():
    got, sent = send_and_receive('auto', 'auto', count=4, resend=True, resend_timeout=0.2,
                                 drop_msg=20)
    assert any(refs is not None for refs, _ in got)
    for (_, arrays), a in zip(got, sent):
        assert np.array_equal(arrays[0], a)


def test_a_resent_message_whose_region_was_reused_is_acknowledged_not_resent_for_ever():
    # an ack lost: the sender re-sends a message the receiver used long ago, whose region
    # the sender has written again since (a new generation): the receiver cannot view it,
    # but it is a duplicate, and its ack must go back or it is re-sent until the job ends
    got, sent = send_and_receive('auto', 'auto', count=40, settle=3.0, gap=0.03, resend=True,
                                 resend_timeout=0.1, drop_msg=30)
    assert sum(refs is not None for refs, _ in got) > 20
    for (_, arrays), a in zip(got, sent):
        assert np.array_equal(arrays[0], a)


# ---- whole jobs -------------------------------------------------------------------------
JOB = '''
import json
import numpy as np
from minigluon import nd, kv
store = kv.create('dist_sync')
r = store.rank
shapes = {'w': (300, 100), 'b': (7,), 'big': (70000,)}   # 'big' is sliced over servers
store.init(list(shapes), [nd.zeros(s) for s in shapes.values()])
history = []
for step in range(3):
    grads = [nd.array(np.arange(np.prod(s), dtype=np.float32).reshape(s) * (r + 1) + step)
             for s in shapes.values()]
    store.push(list(shapes), grads)
    for g in grads:
        g[:] = 1e6            # after push returns, the caller's arrays are its own again
    outs = [nd.zeros(s) for s in shapes.values()]
    store.pull(list(shapes), out=outs)
    history.append([float(o.asnumpy().astype(np.float64).sum()) for o in outs] +
                   [o.asnumpy().reshape(-1)[[0, -1]].tolist() for o in outs])
print('RESULT', json.dumps(history))
'''


@pytest.mark.parametrize('transport', ['auto', 'tcp'])
def test_a_job_on_one_host_sums_exactly_with_either_transport(tmp_path, transport):
    env = {'MINIGLUON_PS_TRANSPORT': transport, 'PS_VERBOSE': '1',
           'MXNET_KVSTORE_BIGARRAY_BOUND': '50000', 'MINIGLUON_PS_CHUNK_BYTES': '131072'}
    with Cluster(tmp_path, JOB, num_workers=2, num_servers=2, env=env) as job:
        job.assert_success()
        runs = [results(job, 'worker:%d' % w)[0] for w in range(2)]
        used = 'go through shared memory' in job.all_output()
        assert used == (transport == 'auto'), job.all_output()
        by_reference = 'pulled values by reference' in job.output('server:0')
        assert by_reference == (transport == 'auto'), job.all_output()
    assert runs[0] == runs[1]
    for step, row in enumerate(runs[0]):
        for n, total, ends in zip((30000, 7, 70000), row[:3], row[3:]):
            assert ends == [2.0 * step, 3.0 * (n - 1) + 2 * step]
            assert total == 3.0 * n * (n - 1) / 2 + 2.0 * step * n
