"""Pretrained weights of the vision model zoo: the files MXNet publishes, found on disk
or downloaded, and checked against MXNet's SHA-1 table before use.

A model's weights are ``NAME-SHORTHASH.params`` (SHORTHASH: the first 8 hex digits of
the file's SHA-1) in ``root``. When the file is missing or its SHA-1 is wrong,
``NAME-SHORTHASH.zip`` is fetched from ``$MXNET_GLUON_REPO`` (MXNet's public
repository by default), and the one ``.params`` member of that name is unpacked and
verified; nothing else in the archive is written.
"""
import logging
import os
import tempfile
import zipfile

from ...base import MXNetError, data_dir
from ..utils import check_sha1, download

__all__ = ['get_model_file', 'purge']

# MXNet 1.9.1's python/mxnet/gluon/model_zoo/model_store.py: SHA-1 of each .params file
_model_sha1 = {name: checksum for checksum, name in [
    ('44335d1f0046b328243b32a26a4fbd62d9057b45', 'alexnet'),
    ('f27dbf2dbd5ce9a80b102d89c7483342cd33cb31', 'densenet121'),
    ('b6c8a95717e3e761bd88d145f4d0a214aaa515dc', 'densenet161'),
    ('2603f878403c6aa5a71a124c4a3307143d6820e9', 'densenet169'),
    ('1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb', 'densenet201'),
    ('ed47ec45a937b656fcc94dabde85495bbef5ba1f', 'inceptionv3'),
    ('9f83e440996887baf91a6aff1cccc1c903a64274', 'mobilenet0.25'),
    ('8e9d539cc66aa5efa71c4b6af983b936ab8701c3', 'mobilenet0.5'),
    ('529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2', 'mobilenet0.75'),
    ('6b8c5106c730e8750bcd82ceb75220a3351157cd', 'mobilenet1.0'),
    ('36da4ff1867abccd32b29592d79fc753bca5a215', 'mobilenetv2_1.0'),
    ('e2be7b72a79fe4a750d1dd415afedf01c3ea818d', 'mobilenetv2_0.75'),
    ('aabd26cd335379fcb72ae6c8fac45a70eab11785', 'mobilenetv2_0.5'),
    ('ae8f9392789b04822cbb1d98c27283fc5f8aa0a7', 'mobilenetv2_0.25'),
    ('a0666292f0a30ff61f857b0b66efc0228eb6a54b', 'resnet18_v1'),
    ('48216ba99a8b1005d75c0f3a0c422301a0473233', 'resnet34_v1'),
    ('0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce', 'resnet50_v1'),
    ('d988c13d6159779e907140a638c56f229634cb02', 'resnet101_v1'),
    ('671c637a14387ab9e2654eafd0d493d86b1c8579', 'resnet152_v1'),
    ('a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657', 'resnet18_v2'),
    ('9d6b80bbc35169de6b6edecffdd6047c56fdd322', 'resnet34_v2'),
    ('ecdde35339c1aadbec4f547857078e734a76fb49', 'resnet50_v2'),
    ('18e93e4f48947e002547f50eabbcc9c83e516aa6', 'resnet101_v2'),
    ('f2695542de38cf7e71ed58f02893d82bb409415e', 'resnet152_v2'),
    ('264ba4970a0cc87a4f15c96e25246a1307caf523', 'squeezenet1.0'),
    ('33ba0f93753c83d86e1eb397f38a667eaf2e9376', 'squeezenet1.1'),
    ('dd221b160977f36a53f464cb54648d227c707a05', 'vgg11'),
    ('ee79a8098a91fbe05b7a973fed2017a6117723a8', 'vgg11_bn'),
    ('6bc5de58a05a5e2e7f493e2d75a580d83efde38c', 'vgg13'),
    ('7d97a06c3c7a1aecc88b6e7385c2b373a249e95e', 'vgg13_bn'),
    ('e660d4569ccb679ec68f1fd3cce07a387252a90a', 'vgg16'),
    ('7f01cf050d357127a73826045c245041b0df7363', 'vgg16_bn'),
    ('ad2f660d101905472b83590b59708b71ea22b2e5', 'vgg19'),
    ('f360b758e856f1074a85abd5fd873ed1d98297c3', 'vgg19_bn')]}

apache_repo_url = 'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/'
_url_format = '{repo_url}gluon/models/{file_name}.zip'


def default_root():
    """``$MINIGLUON_HOME/models`` (``~/.minigluon/models`` by default)."""
    return os.path.join(data_dir(), 'models')


def short_hash(name):
    """The first 8 hex digits of the SHA-1 of ``name``'s published weights."""
    if name not in _model_sha1:
        raise MXNetError('pretrained weights for %r are not available; models with published '
                         'weights: %s' % (name, ', '.join(sorted(_model_sha1))))
    return _model_sha1[name][:8]


def _repo_url():
    repo_url = os.environ.get('MXNET_GLUON_REPO', apache_repo_url)
    return repo_url if repo_url.endswith('/') else repo_url + '/'


def get_model_file(name, root=None):
    """The path of ``name``'s pretrained weights in ``root``, downloaded if needed.

    Parameters
    ----------
    name : str
        A model with published weights, e.g. ``'resnet18_v1'``.
    root : str, optional
        Folder of the weight files (created if missing); ``default_root()`` by default.

    Returns
    -------
    str
        ``root/NAME-SHORTHASH.params``, whose SHA-1 is the published one.

    Raises
    ------
    MXNetError
        When ``name`` has no published weights, or the file is missing (or wrong) and
        cannot be downloaded: the message names the URL and where to put the file.
    """
    file_name = '%s-%s' % (name, short_hash(name))
    root = os.path.expanduser(os.fspath(root if root is not None else default_root()))
    file_path = os.path.join(root, file_name + '.params')
    sha1_hash = _model_sha1[name]
    if os.path.exists(file_path):
        if check_sha1(file_path, sha1_hash):
            return file_path
        logging.warning('The SHA-1 of %s is not the published %s; downloading it again.',
                        file_path, sha1_hash)
        problem = 'exists but its SHA-1 is not %s' % sha1_hash
    else:
        logging.info('Model file %s not found; downloading it.', file_path)
        problem = 'is missing'
    url = _url_format.format(repo_url=_repo_url(), file_name=file_name)
    os.makedirs(root, exist_ok=True)
    try:
        _download_and_unpack(url, file_name + '.params', root, file_path, sha1_hash)
    except MXNetError as exc:
        raise MXNetError(
            'pretrained weights for %r: %s %s and could not be fetched: %s. Download %s, '
            'unzip it and put %s (SHA-1 %s) in %s' % (name, file_path, problem, exc, url,
                                                      file_name + '.params', sha1_hash, root)
        ) from exc
    return file_path


def _download_and_unpack(url, member, root, file_path, sha1_hash):
    """Fetch the zip at ``url`` into ``root``, move its ``member`` to ``file_path`` once
    its SHA-1 is ``sha1_hash``; temporary files are removed whatever happens."""
    fd, zip_path = tempfile.mkstemp(prefix='.%s.' % member, suffix='.zip', dir=root)
    os.close(fd)
    fd, params_path = tempfile.mkstemp(prefix='.%s.' % member, suffix='.part', dir=root)
    os.close(fd)
    try:
        download(url, path=zip_path, overwrite=True)
        _extract_member(zip_path, member, params_path, url)
        if not check_sha1(params_path, sha1_hash):
            raise MXNetError('%s in the downloaded archive does not have the published SHA-1 '
                             '%s' % (member, sha1_hash))
        os.replace(params_path, file_path)
    finally:
        for path in (zip_path, params_path):
            if os.path.exists(path):
                os.unlink(path)


def _extract_member(zip_path, member, target, url):
    """Copy the archive's ``member`` (a plain top-level name) to ``target``."""
    try:
        with zipfile.ZipFile(zip_path) as archive:
            names = archive.namelist()
            unsafe = [n for n in names if os.path.isabs(n) or '..' in n.replace('\\', '/')
                      .split('/')]
            if unsafe:
                raise MXNetError('the archive from %s has members outside its folder (%s); '
                                 'refusing to unpack it' % (url, ', '.join(unsafe)))
            if member not in names:
                raise MXNetError('the archive from %s has no member %s (it holds: %s)'
                                 % (url, member, ', '.join(names) or 'nothing'))
            with archive.open(member) as src, open(target, 'wb') as dst:
                for chunk in iter(lambda: src.read(1 << 20), b''):
                    dst.write(chunk)
    except zipfile.BadZipFile as exc:
        raise MXNetError('the file from %s is not a zip archive (%s)' % (url, exc)) from exc



def load_pretrained(net, name, pretrained, ctx=None, root=None):
    """``net``, with MXNet's published weights for ``name`` loaded when ``pretrained``."""
    if pretrained:
        net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net

def purge(root=None):
    """Delete every ``.params`` file in ``root`` (``default_root()`` by default)."""
    root = os.path.expanduser(os.fspath(root if root is not None else default_root()))
    if not os.path.isdir(root):
        return
    for name in os.listdir(root):
        if name.endswith('.params'):
            os.remove(os.path.join(root, name))
