"""Kokoro's shippable out-of-vocabulary fallback: letter rules learned from misaki's lexicons.

The committed rules are what training gives, they read words held out of training about as
well as the model card says (and a rules set that ignores context does not), and `--fallback
rules` reaches misaki's G2P from the CLI. CI cost: ~34 s (17 s of it retraining).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from conversion.cli.main import main
from conversion.kokoro.fallback import LetterRules, letter_rules, write_fallback
from conversion.kokoro.fallback.metrics import edit_distance, score
from conversion.kokoro.fallback.rules import DATA_FILE, decode, one_primary, words_of
from conversion.kokoro.fallback.train import train
from conversion.kokoro.fallback.words import held_out_words, is_held_out, training_words
from conversion.kokoro.text.g2p import english_g2p

# What models/kokoro/README.md ("Out-of-vocabulary fallback") states for the held-out words.
CARD_ACCURACY = 0.597
CARD_PER = 0.0899


def test_retraining_reproduces_the_committed_rules_byte_for_byte():
    assert train() == DATA_FILE.read_bytes()


def test_held_out_words_are_never_trained_on():
    held = {w for w, _ in held_out_words()}
    assert len(held) > 15_000 and all(is_held_out(w) for w in held)
    assert not held & {w for w, _ in training_words()}


def _held_out_score(rules: LetterRules) -> dict[str, float]:
    return score(rules.word, held_out_words())


def test_rules_read_held_out_lexicon_words_as_the_card_says():
    got = _held_out_score(letter_rules())
    assert got["words"] == len(held_out_words())
    assert got["accuracy"] >= CARD_ACCURACY, got
    assert got["per"] <= CARD_PER, got


def test_rules_that_ignore_context_miss_the_bar():
    full = letter_rules()
    one_letter = {k: v for k, v in full.rules.items() if len(k) == 1}
    got = _held_out_score(LetterRules(one_letter, full.names))
    assert got["accuracy"] < CARD_ACCURACY and got["per"] > CARD_PER, got


def test_edit_distance_counts_insertions_deletions_and_substitutions():
    assert edit_distance(list("kˈæt"), list("kˈæt")) == 0
    assert edit_distance(list("kˈæt"), list("kæt")) == 1
    assert edit_distance(list("kˈæt"), list("bˈæts")) == 2
    assert edit_distance([], list("ab")) == 2


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Café-au-lait's", ["cafe", "au", "laits"]),
        ("ÉCOLE2024x", ["ecole", "x"]),
        ("ﬁne  Ｗｉｄｅ", ["fine", "wide"]),  # NFKD: the ligature and full-width letters
        ("naïve’s", ["naives"]),
        ("日本 — 42", []),
        ("", []),
    ],
)
def test_a_tokens_words_are_its_ascii_letter_runs(text, words):
    assert words_of(text) == words


@pytest.mark.parametrize(
    ("before", "after"),
    [("ˈaˈb", "ˌaˈb"), ("ˌaˌb", "ˈaˌb"), ("kab", "kˈab"), ("kt", "kt"), ("", "")],
)
def test_one_primary_stress(before, after):
    assert one_primary(before) == after


def test_a_word_without_vowel_letters_is_spelled_as_misaki_spells_an_acronym():
    lexicon = english_g2p("espeak").lexicon
    rules = letter_rules()
    for word in ("xkcd", "nth", "b", "mvp"):
        assert rules.word(word) == lexicon.get_NNP(word.upper())[0]


def test_the_fallback_answers_as_misakis_espeak_fallback_does():
    rules = letter_rules()
    ps, rating = rules(SimpleNamespace(text="Zorblax-Quint"))
    assert (ps, rating) == (f"{rules.word('zorblax')} {rules.word('quint')}", 2)
    assert rules(SimpleNamespace(text="42 — !")) == (None, None)


def test_write_fallback_writes_the_committed_file(tmp_path):
    [path] = write_fallback(tmp_path / "g2p" / "fallback")
    assert path.read_bytes() == DATA_FILE.read_bytes()
    rules, names = decode(path.read_bytes())
    assert len(names) == 26 and all(len(k) >= 1 for k in rules)


def test_phonemize_with_rules_reads_a_made_up_word_by_the_rules(capsys):
    word = "zorblaxian"
    text = f"The {word} glimmed."
    lexicon = english_g2p("espeak").lexicon
    assert word not in lexicon.golds and word not in lexicon.silvers
    assert main(["phonemize", "kokoro", "--fallback", "rules", text]) == 0
    [chunk] = json.loads(capsys.readouterr().out)["chunks"]
    want = letter_rules().word(word).replace("ɾ", "T")  # misaki's final flap spelling
    assert f" {want} " in chunk["phonemes"]
    assert main(["phonemize", "kokoro", text]) == 0  # the default is still espeak-ng's
    [default] = json.loads(capsys.readouterr().out)["chunks"]
    assert default["phonemes"] == english_g2p("espeak")(text)[0]
    assert f" {want} " not in default["phonemes"]


def test_a_bad_fallback_is_refused_by_argparse(capsys):
    with pytest.raises(SystemExit) as e:
        main(["phonemize", "kokoro", "--fallback", "festival", "Hi."])
    assert e.value.code == 2 and "--fallback" in capsys.readouterr().err


def test_the_gates_two_sides_read_unknown_words_by_the_selected_fallback():
    from conversion.kokoro import host
    from conversion.kokoro.gate.cases import publisher_phonemes, publisher_pipeline
    from conversion.kokoro.text.g2p import fallback_choice

    text = "The zorblaxian glimmed."
    rules_word = letter_rules().word("zorblaxian").replace("ɾ", "T")
    with fallback_choice("rules"):
        assert publisher_pipeline().g2p.fallback is letter_rules()
        theirs = publisher_phonemes(text)
        assert theirs == host.text_to_chunks(text)[0].phonemes and rules_word in theirs
    assert publisher_pipeline().g2p.fallback is not letter_rules()
    theirs = publisher_phonemes(text)
    assert theirs == host.text_to_chunks(text)[0].phonemes and rules_word not in theirs
