"""Pretrained weights through model_store: found on disk, downloaded from a repository
(a local HTTP server here, as ``MXNET_GLUON_REPO``), verified by SHA-1, and the errors
when they cannot be had.

The weights are mobilenet0.25's (0.5M parameters), written by minigluon's own
``save_parameters``; their SHA-1 replaces MXNet's in the table for each test.
"""
import hashlib
import os
import zipfile

import numpy as np
import pytest

import minigluon as mx
from minigluon import nd
from minigluon.gluon import utils
from minigluon.gluon.model_zoo import model_store, vision

NAME = 'mobilenet0.25'


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(utils, 'RETRY_DELAY_S', 0.01)


@pytest.fixture(scope='module')
def weights(tmp_path_factory):
    """(the bytes of a .params file of mobilenet0.25, its parameters by name)."""
    mx.random.seed(3)
    net = vision.get_model(NAME)
    net.initialize(mx.init.Xavier())
    net(nd.zeros((1, 3, 32, 32)))
    path = str(tmp_path_factory.mktemp('weights') / 'weights.params')
    net.save_parameters(path)
    with open(path, 'rb') as f:
        data = f.read()
    return data, {k: p.data().asnumpy() for k, p in net._collect_params_with_prefix().items()}


@pytest.fixture
def published(weights, monkeypatch):
    """Makes the test weights the published ones; returns the file name they go by."""
    sha1 = hashlib.sha1(weights[0]).hexdigest()
    monkeypatch.setitem(model_store._model_sha1, NAME, sha1)
    return '%s-%s.params' % (NAME, sha1[:8])


def _zip(path, members):
    with zipfile.ZipFile(str(path), 'w') as archive:
        for member, data in members.items():
            archive.writestr(member, data)


@pytest.fixture
def repo(tmp_path, http_server, monkeypatch, weights, published):
    """A repository serving the weights' zip as MXNet's does; MXNET_GLUON_REPO points at it."""
    folder = tmp_path / 'repo' / 'gluon' / 'models'
    folder.mkdir(parents=True)
    _zip(folder / published.replace('.params', '.zip'), {published: weights[0]})
    server = http_server(tmp_path / 'repo')
    monkeypatch.setenv('MXNET_GLUON_REPO', server.url.rstrip('/'))  # '/' is added
    return server


@pytest.fixture
def offline(monkeypatch, closed_port_url):
    monkeypatch.setenv('MXNET_GLUON_REPO', closed_port_url)


def _assert_loaded(net, weights):
    for name, param in net._collect_params_with_prefix().items():
        np.testing.assert_array_equal(param.data().asnumpy(), weights[1][name], err_msg=name)


def test_download_unpack_verify_and_load(tmp_path, repo, weights, published):
    root = tmp_path / 'models'
    net = vision.get_model(NAME, pretrained=True, root=str(root))
    _assert_loaded(net, weights)
    assert sorted(os.listdir(root)) == [published]  # no zip or temporary file left
    assert (root / published).read_bytes() == weights[0]
    assert repo.requests == 1
    vision.mobilenet0_25(pretrained=True, root=str(root))  # now present with the right hash
    assert repo.requests == 1


def test_file_present_with_the_right_hash_needs_no_network(tmp_path, offline, weights,
                                                          published):
    (tmp_path / published).write_bytes(weights[0])
    assert model_store.get_model_file(NAME, root=str(tmp_path)) == str(tmp_path / published)
    _assert_loaded(vision.get_model(NAME, pretrained=True, root=str(tmp_path)), weights)


def test_file_with_a_wrong_hash_is_downloaded_again(tmp_path, repo, weights, published):
    (tmp_path / published).write_bytes(b'corrupted')
    _assert_loaded(vision.get_model(NAME, pretrained=True, root=str(tmp_path)), weights)
    assert (tmp_path / published).read_bytes() == weights[0] and repo.requests == 1


def test_offline_error_says_which_file_to_put_where(tmp_path, offline, published):
    root = tmp_path / 'models'
    with pytest.raises(mx.MXNetError) as info:
        vision.get_model(NAME, pretrained=True, root=str(root))
    message = str(info.value)
    assert 'is missing and could not be fetched' in message
    assert ('Download %sgluon/models/%s, unzip it and put %s (SHA-1 %s) in %s'
            % (os.environ['MXNET_GLUON_REPO'], published.replace('.params', '.zip'), published,
               model_store._model_sha1[NAME], root)) in message
    (root / published).write_bytes(b'corrupted')
    with pytest.raises(mx.MXNetError, match='exists but its SHA-1 is not'):
        model_store.get_model_file(NAME, root=str(root))
    assert (root / published).read_bytes() == b'corrupted'  # left for the user to replace


def test_mxnets_repository_is_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv('MXNET_GLUON_REPO', raising=False)
    urls = []

    def no_network(url, **kwargs):
        urls.append(url)
        raise mx.MXNetError('no network in this test')
    monkeypatch.setattr(model_store, 'download', no_network)
    with pytest.raises(mx.MXNetError, match='no network in this test'):
        vision.resnet18_v1(pretrained=True, root=str(tmp_path))
    assert urls == ['https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/models/'
                    'resnet18_v1-a0666292.zip']


@pytest.mark.parametrize('members, error', [
    ({'../escaped.params': b'x'}, 'members outside its folder'),
    ({'/abs.params': b'x'}, 'members outside its folder'),
    ({'other.params': b'x'}, 'has no member mobilenet0.25-'),
    ('not a zip', 'is not a zip archive'),
    (None, 'does not have the published SHA-1'),
])
def test_bad_archives_are_refused_and_leave_nothing(tmp_path, repo, published, members, error):
    zip_path = tmp_path / 'repo' / 'gluon' / 'models' / published.replace('.params', '.zip')
    if members is None:  # the right member with other content
        members = {published: b'not the published weights'}
    if isinstance(members, str):
        zip_path.write_bytes(members.encode())
    else:
        _zip(zip_path, members)
    root = tmp_path / 'models'
    with pytest.raises(mx.MXNetError, match=error):
        model_store.get_model_file(NAME, root=str(root))
    assert os.listdir(root) == []
    assert not (tmp_path / 'escaped.params').exists()


def test_models_without_published_weights_and_purge(tmp_path):
    with pytest.raises(mx.MXNetError, match="pretrained weights for 'cifar_resnet20_v1' are "
                                            "not available"):
        vision.get_model('cifar_resnet20_v1', pretrained=True, root=str(tmp_path))
    for name in ('a.params', 'b.params', 'notes.txt'):
        (tmp_path / name).write_bytes(b'x')
    model_store.purge(str(tmp_path))
    assert os.listdir(tmp_path) == ['notes.txt']
    model_store.purge(str(tmp_path / 'missing'))  # nothing to purge is fine
