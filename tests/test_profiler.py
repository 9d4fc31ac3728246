"""mx.profiler: ops timed through the op table, MXNet's aggregate table and JSON, the
Chrome trace, pause/resume and the user's own ranges."""
import json
import os
import time

import pytest

import minigluon as mx
from minigluon import nd, profiler
from minigluon.ndarray import dispatch
from minigluon.profiler.__main__ import main as profiler_main


@pytest.fixture
def trace_file(tmp_path):
    """The profiler writes to a fresh file; it is stopped and emptied afterwards."""
    fname = tmp_path / 'profile.json'
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(fname))
    profiler.dumps(reset=True)
    yield fname
    profiler.set_state('stop')
    profiler.resume()
    profiler.dump(finished=True)
    profiler.dumps(reset=True)
    profiler.set_config(filename='profile.json', continuous_dump=False)


def _stats():
    return json.loads(profiler.dumps(format='json'))


def test_ops_are_counted_only_while_running(trace_file):
    x = nd.zeros((4, 4))
    nd.sqrt(x)  # before run: not counted
    profiler.set_state('run')
    nd.sqrt(x)
    y = x + 1
    y = y + 1
    profiler.pause()
    nd.sqrt(y)
    profiler.resume()
    exe = (mx.sym.var('a') * 2).bind(mx.cpu(), {'a': x})
    exe.forward()  # graph nodes go through the same op table
    profiler.set_state('stop')
    nd.sqrt(y)
    assert dispatch._profiler is None  # pylint: disable=protected-access
    ops = _stats()['Time']['operator']
    assert ops['sqrt']['Count'] == 1 and ops['add']['Count'] == 2
    assert ops['multiply']['Count'] == 1
    s = ops['add']
    assert s['Min'] <= s['Avg'] <= s['Max'] and s['Total'] == pytest.approx(2 * s['Avg'])
    table = profiler.dumps(reset=True)
    assert 'operator\n=================\nName                          Total Count' in table
    assert any(line.startswith('add ') and line.split()[1] == '2' for line in table.split('\n'))
    assert _stats()['Time'] == {}


def _trace(fname):
    """The events of a trace file, checked for what Perfetto needs."""
    events = json.loads(fname.read_text())['traceEvents']
    for e in events:
        assert {'ph', 'pid', 'name'} <= set(e), e
        if e['ph'] != 'M':
            assert 'tid' in e and 'ts' in e, e
    return events


def _ranges(events, category=None):
    return [e for e in events if e['ph'] == 'X' and category in (None, e['cat'])]


def test_dump_writes_a_chrome_trace(trace_file):
    before = time.time() * 1e6
    profiler.set_state('run')
    nd.relu(nd.ones((2,)))
    domain = profiler.Domain('mine')
    task = domain.new_task('step')
    task.start()
    task.stop()
    with domain.new_frame('iteration'):
        with profiler.Event('load'):
            pass
    counter = domain.new_counter('seen', 5)
    counter += 2
    counter.decrement(3)
    domain.new_marker('here').mark('global')
    with profiler.scope('fc1:'):
        nd.relu(nd.ones((2,)))
    profiler.pause()
    nd.relu(nd.ones((2,)))
    counter.increment()
    domain.new_marker('paused').mark()
    profiler.resume()
    profiler.set_state('stop')
    profiler.dump()
    events = _trace(trace_file)
    ranges = [(e['cat'], e['name']) for e in _ranges(events)]
    assert ranges == [('operator', 'relu'), ('mine', 'step'), ('event', 'load'),
                      ('mine,frame', 'iteration'), ('operator', 'fc1:relu')]
    frame, load = _ranges(events, 'mine,frame')[0], _ranges(events, 'event')[0]
    assert frame['ts'] <= load['ts'] and load['ts'] + load['dur'] <= frame['ts'] + frame['dur']
    assert before < frame['ts'] < time.time() * 1e6  # wall-clock microseconds
    profiler.set_state('run')
    profiler.pause()
    profiler.set_state('run')  # ends the pause, as in MXNet
    assert profiler.now_if_recording() is not None
    profiler.set_state('stop')
    assert [e['args'] for e in events if e['ph'] == 'C'] == [{'seen': 5}, {'seen': 7},
                                                             {'seen': 4}]
    assert [(e['name'], e['s']) for e in events if e['ph'] == 'i'] == [('here', 'g')]
    meta = {e['name']: e for e in events if e['ph'] == 'M'}
    assert meta['process_name']['pid'] == os.getpid() == events[-1]['pid']
    assert meta['thread_name']['args']['name'] == 'MainThread'
    assert set(_stats()['Time']) == {'operator', 'mine', 'mine,frame', 'event'}


def test_training_step_forward_backward_optimizer_kvstore_and_data(trace_file):
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    loader = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(nd.ones((4, 4))),
                                      batch_size=2)
    store = mx.kv.create('local')
    store.init(3, nd.ones((2, 5)))
    profiler.set_state('run')
    for x in loader:
        with mx.autograd.record():
            loss = net(x).sum()
        loss.backward()
        trainer.step(2)
    store.push(3, [nd.ones((2, 5)), nd.ones((2, 5))])
    store.pull(3, out=nd.zeros((2, 5)))
    profiler.set_state('stop')
    profiler.dump()
    events = _trace(trace_file)
    names = [e['name'] for e in _ranges(events, 'operator')]
    assert names.count('FullyConnected') == 2 and names.count('_backward_FullyConnected') == 2
    assert names.count('_backward_sum') == 2
    updates = _ranges(events, 'optimizer')
    assert [u['name'] for u in updates] == ['sgd_update'] * 4  # weight and bias, twice
    assert {u['args']['index'] for u in updates} == {0, 1}
    step = [e for e in _ranges(events, 'gluon') if e['name'] == 'Trainer.step'][0]
    assert step['ts'] <= updates[0]['ts'] < step['ts'] + step['dur']
    batches = _ranges(events, 'data')
    assert [(b['name'], b['args']['batch']) for b in batches] == [('DataLoader batch', 0),
                                                                  ('DataLoader batch', 1)]
    kv = {e['name']: e['args'] for e in _ranges(events, 'kvstore')}
    assert kv == {'push': {'keys': [3], 'bytes': 80}, 'pull': {'keys': [3], 'bytes': 40}}
    table = _stats()['Time']
    assert table['operator']['_backward_FullyConnected']['Count'] == 2
    assert table['optimizer']['sgd_update']['Count'] == 4
    assert table['kvstore']['push']['Count'] == 1


def test_custom_operator_ranges_are_named_as_in_mxnet(trace_file):
    x = nd.ones((2, 2))
    profiler.set_state('run')
    with profiler.custom_op('MySigmoid'):
        nd.relu(x)
    with profiler.custom_op('MySigmoid', backward=True):
        pass
    nd.relu(x)
    profiler.set_state('stop')
    table = _stats()['Time']
    assert set(table['Custom Operator']) == {'MySigmoid::pure_python', 'MySigmoid::relu',
                                             '_backward_MySigmoid::pure_python'}
    assert set(table['operator']) == {'relu'}


def test_table_has_mxnets_layout(trace_file):
    profiler.set_state('run')
    nd.relu(nd.ones((2,)))
    profiler.set_state('stop')
    # MXNet 1.9.1's header line and row format, character for character
    header = ('Name                          Total Count        Time (ms)    Min Time (ms)'
              '    Max Time (ms)    Avg Time (ms)')
    lines = profiler.dumps().split('\n')
    assert lines[:4] == ['', 'Profile Statistics:',
                         '\tNote the difference in units for different entries.', 'operator']
    assert lines[5] == header and lines[6].split() == ['----', '-----------', '---------'] + \
        ['-------------'] * 3
    row = lines[7]
    assert row.startswith('relu ') and len(row) == len(header) and row.split()[1] == '1'


def test_merge_renumbers_pids_and_orders_roles(tmp_path):
    files = []
    for i, name in enumerate(['server 0', 'worker 1', 'worker 0']):
        fname = tmp_path / ('t%d.json' % i)
        fname.write_text(json.dumps({'traceEvents': [
            {'ph': 'M', 'name': 'process_name', 'pid': 7, 'tid': 0, 'args': {'name': name}},
            {'ph': 'X', 'name': 'push', 'cat': 'kvstore', 'pid': 7, 'tid': 1, 'ts': i,
             'dur': 1}]}))
        files.append(str(fname))
    out = tmp_path / 'all.json'
    assert profiler_main(['merge', str(out)] + files) == 0
    events = json.loads(out.read_text())['traceEvents']
    names = {e['pid']: e['args']['name'] for e in events if e['name'] == 'process_name'}
    order = {e['pid']: e['args']['sort_index'] for e in events
             if e['name'] == 'process_sort_index'}
    assert sorted(names.values()) == ['server 0', 'worker 0', 'worker 1'] and len(names) == 3
    assert [names[p] for p in sorted(names, key=order.get)] == ['worker 0', 'worker 1',
                                                                'server 0']
    assert len({e['pid'] for e in events if e['ph'] == 'X'}) == 3
    bad = tmp_path / 'bad.json'
    bad.write_text('{"events": []}')
    with pytest.raises(ValueError, match='traceEvents'):
        profiler.merge(str(out), [str(bad)])


DIST_STEP = '''
import minigluon as mx
from minigluon import nd
store = mx.kv.create('dist_sync')
store.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
store.init('w', nd.ones((4,)))
store.push('w', nd.ones((4,)) * (store.rank + 1))
out = nd.zeros((4,))
store.pull('w', out=out)
'''


def test_distributed_job_traces_merge_into_one_timeline(tmp_path):
    pytest.importorskip('zmq', reason='pyzmq is needed for the distributed kvstore')
    from kvstore.cluster import Cluster  # pylint: disable=import-outside-toplevel
    with Cluster(tmp_path, DIST_STEP, num_workers=2, num_servers=1,
                 env={'MXNET_PROFILER_AUTOSTART': '1'}) as job:
        job.assert_success()
    files = sorted(str(p) for p in tmp_path.glob('profile_*.json'))
    assert [os.path.basename(f) for f in files] == [
        'profile_scheduler.json', 'profile_server0.json', 'profile_worker0.json',
        'profile_worker1.json']
    merged = tmp_path / 'job.json'
    profiler.merge(str(merged), files)
    events = _trace(merged)
    process = {e['pid']: e['args']['name'] for e in events if e['name'] == 'process_name'}
    assert sorted(process.values()) == ['scheduler', 'server 0', 'worker 0', 'worker 1']
    by_process = {}
    for e in _ranges(events, 'kvstore'):
        by_process.setdefault(process[e['pid']], []).append((e['name'], e['args']['keys']))
    for worker in ('worker 0', 'worker 1'):
        assert ('push', ['w']) in by_process[worker] and ('pull', ['w']) in by_process[worker]
    served = by_process['server 0']
    assert served.count(('server push', ['w'])) == 2
    assert served.count(('server pull', ['w'])) == 2
    assert [process[e['pid']] for e in _ranges(events, 'optimizer')] == ['server 0']
    stamps = [e['ts'] for e in _ranges(events)]
    assert max(stamps) - min(stamps) < 60e6  # one clock: the whole job within a minute


def test_bad_arguments_say_what_is_allowed():
    with pytest.raises(mx.MXNetError, match='unknown options'):
        profiler.set_config(profile_everything=True)
    with pytest.raises(mx.MXNetError, match="'run' or 'stop'"):
        profiler.set_state('start')
    with pytest.raises(mx.MXNetError, match='sort_by'):
        profiler.dumps(sort_by='name')
