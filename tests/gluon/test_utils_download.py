"""gluon.utils.download against a real HTTP server on 127.0.0.1."""
import hashlib
import os
import time

import pytest

from minigluon.base import MXNetError
from minigluon.gluon import utils

CONTENT = b'minigluon test payload\n' * 1000


@pytest.fixture
def served(tmp_path, http_server):
    folder = tmp_path / 'served'
    folder.mkdir()
    (folder / 'payload.bin').write_bytes(CONTENT)
    return http_server(folder)


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch):
    monkeypatch.setattr(utils, 'RETRY_DELAY_S', 0.01)


def _sha1(data):
    return hashlib.sha1(data).hexdigest()


def test_download_good_file_with_checksum(tmp_path, served):
    target = tmp_path / 'out' / 'copy.bin'
    path = utils.download(served.url + 'payload.bin', path=str(target),
                          sha1_hash=_sha1(CONTENT).upper())
    assert path == str(target) and target.read_bytes() == CONTENT
    assert utils.check_sha1(path, _sha1(CONTENT))
    assert not utils.check_sha1(path, _sha1(b'other'))
    assert os.listdir(target.parent) == ['copy.bin']  # no temporary file left


def test_existing_verified_file_is_not_downloaded_again(tmp_path, served):
    url = served.url + 'payload.bin'
    path = utils.download(url, path=str(tmp_path), sha1_hash=_sha1(CONTENT))
    assert path == str(tmp_path / 'payload.bin') and served.requests == 1
    utils.download(url, path=str(tmp_path), sha1_hash=_sha1(CONTENT))
    assert served.requests == 1
    utils.download(url, path=str(tmp_path), overwrite=True)
    assert served.requests == 2
    (tmp_path / 'payload.bin').write_bytes(b'stale')
    utils.download(url, path=str(tmp_path), sha1_hash=_sha1(CONTENT))
    assert served.requests == 3 and (tmp_path / 'payload.bin').read_bytes() == CONTENT


def test_md5_is_checked_too(tmp_path, served):
    path = utils.download(served.url + 'payload.bin', path=str(tmp_path / 'a.bin'),
                          md5_hash=hashlib.md5(CONTENT).hexdigest())
    assert open(path, 'rb').read() == CONTENT


def test_bad_checksum_raises_and_leaves_no_file(tmp_path, served):
    target = tmp_path / 'dl'
    target.mkdir()
    with pytest.raises(MXNetError, match='SHA1 checksum mismatch.*expected 0{40}, got %s'
                       % _sha1(CONTENT)):
        utils.download(served.url + 'payload.bin', path=str(target), sha1_hash='0' * 40)
    assert os.listdir(target) == []
    assert served.requests == 1  # a wrong checksum is not retried


def test_server_down_raises_after_the_retries(tmp_path, closed_port_url):
    start = time.monotonic()
    with pytest.raises(MXNetError, match='failed after 3 attempt\\(s\\).*Connection refused'):
        utils.download(closed_port_url + 'payload.bin', path=str(tmp_path / 'x'), retries=2)
    assert time.monotonic() - start < 5
    assert os.listdir(tmp_path) == []


def test_missing_file_is_not_retried(tmp_path, served):
    with pytest.raises(MXNetError, match='failed after 1 attempt\\(s\\).*404'):
        utils.download(served.url + 'absent.bin', path=str(tmp_path / 'x'), retries=4)
    assert served.requests == 1


def test_bad_arguments(tmp_path):
    with pytest.raises(MXNetError, match='retries must be an int >= 0'):
        utils.download('http://127.0.0.1/x', path=str(tmp_path), retries=-1)
    with pytest.raises(MXNetError, match='cannot derive a file name'):
        utils.download('http://127.0.0.1/', path=str(tmp_path))
