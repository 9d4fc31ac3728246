"""Each test of the symbol package names its nodes with counters of its own
(``activation0``), whatever ran before it; ``answers_of_both`` runs one script under
MXNet 1.9.1 and under minigluon."""
import json

import pytest

import minigluon as mx


@pytest.fixture(autouse=True)
def fresh_names():
    with mx.name.NameManager():
        yield


@pytest.fixture
def answers_of_both(tmp_path, run_mxnet, run_minigluon):
    """``answers(script, filename)`` -> ``(mxnet's, minigluon's)``: the JSON file
    ``filename`` that ``script`` writes into the folder it gets as ``sys.argv[1]``."""
    def answers(script, filename):
        results = []
        for side, run in (('mxnet', run_mxnet), ('minigluon', run_minigluon)):
            folder = tmp_path / side
            folder.mkdir()
            run(folder, script)
            results.append(json.loads((folder / filename).read_text()))
        return tuple(results)
    return answers
