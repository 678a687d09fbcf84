"""tools/bench_runs.py: a benchmark's JSON is written whole, into a directory made for it."""

import json

import pytest

from tools.bench_runs import write_json


def test_json_goes_whole_into_a_directory_not_made_yet(tmp_path):
    path = tmp_path / "not" / "yet" / "r.json"
    write_json(str(path), {"runs": [1, 2]})
    assert json.loads(path.read_text()) == {"runs": [1, 2]}
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temporary left


def test_a_value_json_cannot_hold_leaves_the_old_file_as_it_was(tmp_path):
    path = tmp_path / "r.json"
    write_json(str(path), {"a": 1})
    with pytest.raises(TypeError):
        write_json(str(path), {"a": object()})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
