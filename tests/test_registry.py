"""The one duplicate policy shared by every table of things chosen by name."""
import pytest

import minigluon as mx
from minigluon.base import MXNetError
from minigluon.registry import Registry


class First:
    pass


class Second:
    pass


def test_lookup_is_case_insensitive_by_default_and_names_the_choices():
    table = Registry('widget')
    table.register(First)
    table.add('Alias', First)
    assert table.find('FIRST') is First and table.get('alias') is First
    assert 'first' in table and 'second' not in table
    assert table.names() == ['alias', 'first'] == list(table)
    with pytest.raises(MXNetError, match="unknown widget 'third'; registered: alias, first"):
        table.find('third')
    assert table.get(3) is None


def test_case_sensitive_tables_keep_the_case():
    table = Registry('scheduler', case_sensitive=True)
    table.add('Step', First)
    assert table.get('Step') is First and table.get('step') is None


def test_registering_the_same_object_again_is_allowed():
    table = Registry('widget')
    table.register(First)
    table.register(First, 'first')
    assert table.find('first') is First


def test_registering_another_object_under_a_taken_name_names_both():
    table = Registry('widget')
    table.register(First, 'thing')
    with pytest.raises(MXNetError, match=r"widget 'thing' is already registered as "
                                         r"test_registry\.First; cannot register "
                                         r"test_registry\.Second"):
        table.register(Second, 'thing')
    assert table.find('thing') is First
    del table['thing']
    table.register(Second, 'thing')
    assert table.find('thing') is Second


@pytest.mark.parametrize('register, base, name', [
    (mx.optimizer.register, mx.optimizer.Optimizer, 'SGD'),
    (mx.init.register, mx.init.Initializer, 'Xavier'),
    (mx.metric.register, mx.metric.EvalMetric, 'Accuracy'),
])
def test_package_registries_refuse_a_second_class_with_a_taken_name(register, base, name):
    with pytest.raises(MXNetError, match='%r is already registered' % name):
        register(type(name, (base,), {}))


def test_kvstore_and_lr_scheduler_tables_refuse_a_taken_name():
    with pytest.raises(MXNetError, match="kvstore type 'local' is already registered"):
        mx.kv.register('local')(type('Impostor', (mx.kv.KVStoreBase,), {}))
    with pytest.raises(MXNetError, match="lr scheduler 'factor' is already registered"):
        mx.lr_scheduler.register('factor')(type('Impostor', (mx.lr_scheduler.LRScheduler,), {}))
    assert isinstance(mx.kv.create('local'), mx.kv.LocalKVStore)
    assert isinstance(mx.optimizer.create('sgd'), mx.optimizer.SGD)
