"""Regenerate the MXNet reference data of ``test_vision_models.py`` with real MXNet 1.x.

Run with an interpreter that has ``mxnet`` (not needed by minigluon or its tests)::

    python tests/gluon/model_zoo/make_mxnet_reference.py

It prints the ``MXNET_PARAMETERS`` table (for every model of MXNet's zoo: the number
of parameters, their total size, and the SHA-1 of their sorted structural names, i.e.
the keys MXNet's ``save_parameters`` writes) and writes ``mxnet_parameter_names.json``
beside this file with the full sorted name lists of ``NAME_LIST_MODELS``. With
``--gluon-names`` it prints ``test_gluon_names.MXNET_GLUON_NAMES`` instead.
"""
import hashlib
import json
import os

NAME_LIST_MODELS = ['alexnet', 'vgg11_bn', 'squeezenet1.1', 'densenet121', 'mobilenetv2_0.25',
                    'inceptionv3']


def names_sha1(names):
    """SHA-1 of the sorted names joined by newlines."""
    return hashlib.sha1('\n'.join(sorted(names)).encode()).hexdigest()


def gluon_names_row(net):
    """``(prefix, number of collect_params() keys, 16 hex digits of the SHA-1 of the keys
    in their order)``: a row of ``test_gluon_names.MXNET_GLUON_NAMES``."""
    keys = list(net.collect_params().keys())
    return net.prefix, len(keys), hashlib.sha1('\n'.join(keys).encode()).hexdigest()[:16]


def print_gluon_names():
    """Print ``MXNET_GLUON_NAMES``: each model made in a fresh NameManager."""
    import mxnet as mx
    from mxnet.gluon.model_zoo import vision
    from mxnet.gluon.model_zoo.model_store import _model_sha1
    print('MXNET_GLUON_NAMES = {')
    for name in sorted(_model_sha1):
        with mx.name.NameManager():
            print('    %r: %r,' % (name, gluon_names_row(vision.get_model(name))))
    print('}')


def main():
    import mxnet as mx
    from mxnet.gluon.model_zoo import vision
    from mxnet.gluon.model_zoo.model_store import _model_sha1
    lists = {}
    print('# from MXNet %s: name -> (parameters, total size, SHA-1 of sorted names)'
          % mx.__version__)
    print('MXNET_PARAMETERS = {')
    for name in sorted(_model_sha1):
        net = vision.get_model(name)
        net.initialize()
        side = 299 if name == 'inceptionv3' else 224
        net(mx.nd.zeros((1, 3, side, side)))
        params = net._collect_params_with_prefix()
        size = sum(int(p.data().size) for p in params.values())
        print('    %r: (%d, %d, %r),' % (name, len(params), size, names_sha1(params)))
        if name in NAME_LIST_MODELS:
            lists[name] = sorted(params)
    print('}')
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        'mxnet_parameter_names.json')
    with open(path, 'w') as f:
        json.dump({'mxnet_version': mx.__version__, 'sorted_names': lists}, f, indent=0,
                  sort_keys=True)
        f.write('\n')


if __name__ == '__main__':
    import sys
    if sys.argv[1:] == ['--gluon-names']:
        print_gluon_names()
    else:
        main()
