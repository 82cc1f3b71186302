"""Every way a JSON file a user hands voxport can be broken is one error (issue 29: malformed
JSON anywhere JSON is read): `conversion.core.json_file`, and the snapshot readers on it."""

from __future__ import annotations

import pytest

from conversion.core.errors import WeightsError
from conversion.core.json_file import JsonFileError, load_json_file, load_json_object

BROKEN = {
    "not UTF-8": (b'{"a": "\xff"}', "not UTF-8 text (byte 0xff at 7)"),
    "not JSON": (b"{", "not JSON (Expecting property name"),
    "nested 1,200 deep": (b"[" * 1200 + b"]" * 1200, "nested too deeply"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_way_a_file_is_not_json_is_one_error(tmp_path, case):
    raw, says = BROKEN[case]
    (tmp_path / "x.json").write_bytes(raw)
    with pytest.raises(JsonFileError) as e:
        load_json_file(tmp_path / "x.json")
    assert str(e.value).startswith(says)
    assert isinstance(e.value, ValueError)  # callers' `except ValueError` keep working


def test_an_object_is_asked_for_and_a_list_or_string_is_not_one(tmp_path):
    (tmp_path / "x.json").write_text('{"a": [1]}')
    assert load_json_object(tmp_path / "x.json") == {"a": [1]}
    for text, kind in (("[1, 2]", "list"), ('"s"', "str"), ("3", "int")):
        (tmp_path / "x.json").write_text(text)
        with pytest.raises(JsonFileError, match=f"a JSON {kind}, not an object"):
            load_json_object(tmp_path / "x.json")


@pytest.mark.parametrize("case", sorted(BROKEN) + ["a list"])
def test_snapshot_configs_that_are_not_json_are_weights_errors(tmp_path, case):
    """The three snapshot readers name the file (a traceback before: RecursionError is no
    ValueError, and Chatterbox's size marker was read unguarded)."""
    from conversion.audio8_tts.weights import read_config
    from conversion.chatterbox.config import CONFIG_FILE, read_snapshot_config
    from conversion.kokoro.weights import PTH_NAME, load_snapshot

    raw = b"[1]" if case == "a list" else BROKEN[case][0]
    (tmp_path / "config.json").write_bytes(raw)
    (tmp_path / CONFIG_FILE).write_bytes(raw)
    (tmp_path / PTH_NAME).write_bytes(b"")
    for read in (read_config, read_snapshot_config, load_snapshot):
        with pytest.raises(WeightsError) as e:
            read(tmp_path)
        assert str(tmp_path) in str(e.value) and "\n" not in str(e.value), read


def test_depth_is_measured_whatever_the_recursion_limit(tmp_path):
    """Some library in a long run raises Python's recursion limit, and then the parser reads a
    1,200-deep file (or, deeper, overflows the C stack): it is refused by measure instead;
    brackets inside strings do not count."""
    import sys

    (tmp_path / "deep.json").write_bytes(b"[" * 1200 + b"]" * 1200)
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        with pytest.raises(JsonFileError, match="nested too deeply"):
            load_json_file(tmp_path / "deep.json")
    finally:
        sys.setrecursionlimit(saved)
    (tmp_path / "ok.json").write_text('{"a": "[[[[[[", "b": [[[1]]]}')
    assert load_json_object(tmp_path / "ok.json") == {"a": "[[[[[[", "b": [[[1]]]}
