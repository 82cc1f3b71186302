"""misaki's lexicons as written for the Swift lexicon: deterministic, and exactly misaki's (as
packaged; grown as misaki grows them, they are ``Lexicon``'s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conversion.kokoro.lexicon.writer import (
    DICTIONARIES,
    decode_dictionary,
    encode_dictionary,
    write_lexicon,
)

pytest.importorskip("misaki")


def _misaki_lexicon():
    from misaki import en

    return en.Lexicon(british=False)


def test_two_writes_are_byte_identical(tmp_path: Path) -> None:
    a = write_lexicon(tmp_path / "a")
    b = write_lexicon(tmp_path / "b")
    assert [p.name for p in a] == ["us_gold.tsv", "us_silver.tsv"]
    for x, y in zip(a, b, strict=True):
        assert x.read_bytes() == y.read_bytes()


def _packaged(name: str) -> dict:
    """misaki's packaged JSON, read here (not through the writer's loader)."""
    import misaki

    return json.loads((Path(misaki.__file__).parent / "data" / f"{name}.json").read_bytes())


def test_files_round_trip_to_misakis_packaged_dictionaries(tmp_path: Path) -> None:
    # The expected sides are misaki's files and its own Lexicon object, not the writer's.
    from misaki import en

    lexicon = _misaki_lexicon()
    paths = dict(zip(DICTIONARIES, write_lexicon(tmp_path), strict=True))
    gold = decode_dictionary(paths["us_gold"].read_bytes())
    silver = decode_dictionary(paths["us_silver"].read_bytes())
    assert gold == _packaged("us_gold") and silver == _packaged("us_silver")
    assert en.Lexicon.grow_dictionary(gold) == lexicon.golds
    assert en.Lexicon.grow_dictionary(silver) == lexicon.silvers


def test_grown_files_are_misakis_grown_dictionaries(tmp_path: Path) -> None:
    lexicon = _misaki_lexicon()
    paths = dict(zip(DICTIONARIES, write_lexicon(tmp_path, grown=True), strict=True))
    assert decode_dictionary(paths["us_gold"].read_bytes()) == lexicon.golds
    assert decode_dictionary(paths["us_silver"].read_bytes()) == lexicon.silvers


def test_tagged_entries_and_none_survive() -> None:
    d = {
        "AM": {"DEFAULT": "æm", "NOUN": None},
        "read": {"DEFAULT": "ɹˈid", "VBD": "ɹˈɛd"},
        "a": "ɐ",
    }
    raw = encode_dictionary(d)
    assert decode_dictionary(raw) == d
    assert json.dumps(decode_dictionary(raw), sort_keys=True) == json.dumps(d, sort_keys=True)


def test_a_value_the_format_cannot_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="tab, newline or '='"):
        encode_dictionary({"x": "a\tb"})
    with pytest.raises(ValueError, match="not ASCII"):
        encode_dictionary({"café": "kæfˈA"})
