"""mx.profiler: ops timed through the op table, MXNet's aggregate table and JSON, the
Chrome trace, pause/resume and the user's own ranges."""
import json

import pytest

import minigluon as mx
from minigluon import nd, profiler
from minigluon.ndarray import dispatch


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


def test_dump_writes_a_chrome_trace(trace_file):
    profiler.set_state('run')
    nd.relu(nd.ones((2,)))
    domain = profiler.Domain('mine')
    task = domain.new_task('step')
    task.start()
    task.stop()
    with profiler.Event('load'):
        pass
    counter = domain.new_counter('seen', 5)
    counter += 2
    domain.new_marker('here').mark()
    with profiler.scope('fc1:'):
        nd.relu(nd.ones((2,)))
    profiler.set_state('stop')
    profiler.dump()
    events = json.loads(trace_file.read_text())['traceEvents']
    ranges = [(e['cat'], e['name'], e['ph']) for e in events if e['ph'] in 'BE']
    assert ranges == [('operator', 'relu', 'B'), ('operator', 'relu', 'E'),
                      ('mine', 'step', 'B'), ('mine', 'step', 'E'),
                      ('event', 'load', 'B'), ('event', 'load', 'E'),
                      ('operator', 'fc1:relu', 'B'), ('operator', 'fc1:relu', 'E')]
    assert [e['args'] for e in events if e['ph'] == 'C'] == [{'seen': 5}, {'seen': 7}]
    assert [e['name'] for e in events if e['ph'] == 'i'] == ['here']
    names = {e['args']['name'] for e in events if e['ph'] == 'M'}
    assert {'cpu/0', 'mine', 'event'} <= names
    assert set(_stats()['Time']) == {'operator', 'mine', 'event'}


def test_bad_arguments_say_what_is_allowed():
    with pytest.raises(mx.MXNetError, match='unknown options'):
        profiler.set_config(profile_everything=True)
    with pytest.raises(mx.MXNetError, match="'run' or 'stop'"):
        profiler.set_state('start')
    with pytest.raises(mx.MXNetError, match='sort_by'):
        profiler.dumps(sort_by='name')
