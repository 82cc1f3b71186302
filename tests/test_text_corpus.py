"""The Swift tokenizers' corpus and fixture formats (conversion/fixtures/text): the corpus is the
same on every run, >= 5,000 strings with a fifth held out, and reaches the places device
tokenizers get wrong; the id files read back; the Qwen2-shaped overlay puts Qwen2.5's specials
at their ids. The ids themselves are held by the Swift tests (VoxportTextTests)."""

import json

from conversion.audio8_tts.config import PUBLISHED
from conversion.audio8_tts.tokenizer import special_ids
from conversion.fixtures.text import corpus, nfc_table
from conversion.fixtures.text.ids_file import write_ids
from conversion.fixtures.text.shapes import apply_overlay, qwen2_overlay


def test_corpus_is_deterministic_large_and_a_fifth_held_out():
    strings = corpus.corpus()
    assert strings == corpus.corpus()
    assert len(strings) >= 5_000
    held = [i for i in range(len(strings)) if corpus.is_held_out(i)]
    assert abs(len(held) / len(strings) - 0.2) < 0.01


def test_corpus_reaches_the_hard_cases():
    text = "".join(corpus.corpus())
    for needle in [
        "\u0085", "\u2028", "e\u0301", "\u200d", "🇯🇵", "שלום", "日本語", "Ｈｅｌｌｏ", "\x00",
        "\u00a0", "’", "…", "$", "a" * 64, "\u212a", "<|im_end|>\u0301",
    ]:  # fmt: skip
        assert needle in text, repr(needle)


def _read_ids(raw: bytes) -> list[list[int] | None]:
    """A reader written from the format's description (the Swift tests have their own)."""
    out, at = [], 0

    def varint():
        nonlocal at
        value = shift = 0
        while True:
            b = raw[at]
            at += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    while at < len(raw):
        n = varint()
        out.append(None if n == 0 else [varint() for _ in range(n - 1)])
    return out


def test_id_lists_read_back(tmp_path):
    lists = [[0, 1, 127, 128, 151_643, 2**31 - 1], None, [], [300]]
    write_ids(tmp_path / "x.ids.bin", lists)
    assert _read_ids((tmp_path / "x.ids.bin").read_bytes()) == lists


def test_qwen2_overlay_numbers_the_specials_as_qwen25():
    base = {"model": {"vocab": {"a": 0, "b": 1, "<|endoftext|>": 2}}, "added_tokens": []}
    spec = apply_overlay(base, qwen2_overlay(special_ids(PUBLISHED)))
    vocab = spec["model"]["vocab"]
    assert "<|endoftext|>" not in vocab and len(vocab) == 151_643  # tokenizers numbers from here
    ids = {t["content"]: t["id"] for t in spec["added_tokens"]}
    assert ids["<|endoftext|>"] == 151_643 and ids["<|im_start|>"] == 151_644
    assert ids["<|im_end|>"] == 151_645 and ids["<|file_sep|>"] == 151_664
    assert json.loads(json.dumps(spec)) == spec


def test_swift_decomposition_table_is_current():
    """The Swift NFC's table is what Python's unicodedata gives (regenerate: python -m
    conversion.fixtures.text.nfc_table)."""
    assert nfc_table.SWIFT_FILE.read_text() == nfc_table.swift_source()
    assert len(nfc_table.entries()) > 2_000
