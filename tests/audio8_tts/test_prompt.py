"""Audio8 prompts: the publisher's plain and reference-voice templates, segment by segment,
packed as [11, P] (row 0 ids with the reference's semantic ids, rows 1..10 its ten codebooks
under those columns), bad references, and the max_seq_len budget (error or split)."""

from __future__ import annotations

import numpy as np
import pytest

from conversion.audio8_tts import prompt as P
from conversion.audio8_tts.config import PUBLISHED, REDUCED
from conversion.audio8_tts.tokenizer import load_tokenizer, special_ids, write_tokenizer
from conversion.core.errors import UserError


@pytest.fixture(scope="module", params=[REDUCED, PUBLISHED], ids=lambda c: c.name)
def setup(request, tmp_path_factory):
    config = request.param
    folder = tmp_path_factory.mktemp(f"tok-{config.name}")
    write_tokenizer(folder, config)
    return load_tokenizer(folder), config


@pytest.fixture(scope="module")
def reduced_tok(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tok-r")
    write_tokenizer(folder, REDUCED)
    return load_tokenizer(folder)


def _ids(tok, *parts):
    return [i for p in parts for i in tok.encode(p, add_special_tokens=False).ids]


def _codes(config, frames, seed=0):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 1024, size=(config.num_codebooks, frames))
    codes[0] = rng.integers(0, config.codebook_size, size=frames)
    return codes


def test_plain_prompt(setup):
    tok, config = setup
    packed = P.build_prompt(tok, config, "  Hello,\n  world!  ")
    sp = special_ids(config)
    want = _ids(
        tok,
        "<|im_start|>system\n",
        "convert the provided text to speech",
        "<|im_end|>\n",
        "<|im_start|>user\n",
        "Hello, world!",
        "<|im_end|>\n",
        "<|im_start|>assistant\n<|voice|>",
    )
    assert packed.shape == (config.num_codebooks + 1, len(want)) == (11, len(want))
    assert packed.dtype == np.int64
    assert packed[0].tolist() == want
    assert not packed[1:].any()
    assert packed[0, 0] == sp["<|im_start|>"] and packed[0, -1] == sp["<|voice|>"]
    assert (packed[0] == config.eos_token_id).sum() == 2  # <|im_end|> closes system and user
    assert not (
        (packed[0] >= config.semantic_begin_id) & (packed[0] <= config.semantic_end_id)
    ).any()
    assert P.prompt_length(tok, config, "Hello, world!") == packed.shape[1]


def test_reference_prompt(setup):
    tok, config = setup
    codes = _codes(config, 7)
    packed = P.build_prompt(tok, config, "Target text.", codes, reference_text=" Ref  words ")
    prefix = _ids(
        tok,
        "<|im_start|>system\n",
        "convert the provided text to speech reference to the following:\n\nText:\n",
        "<|speaker:0|>Ref words",
        "\n\nSpeech:\n",
    )
    suffix = _ids(
        tok,
        "<|im_end|>\n",
        "<|im_start|>user\n",
        "Target text.",
        "<|im_end|>\n",
        "<|im_start|>assistant\n<|voice|>",
    )
    n, t = len(prefix), codes.shape[1]
    assert packed.shape == (11, n + t + len(suffix))
    assert packed[0, :n].tolist() == prefix
    assert packed[0, n + t :].tolist() == suffix
    assert packed[0, n : n + t].tolist() == (codes[0] + config.semantic_begin_id).tolist()
    assert np.array_equal(packed[1:, n : n + t], codes)  # row k+1 = codebook k (row 1 = book 0)
    assert not packed[1:, :n].any() and not packed[1:, n + t :].any()
    semantic = (packed[0] >= config.semantic_begin_id) & (packed[0] <= config.semantic_end_id)
    assert semantic.sum() == t and semantic[n : n + t].all()
    assert P.prompt_length(tok, config, "Target text.", t, "Ref words") == packed.shape[1]


def test_speaker_tag_kept(reduced_tok):
    assert P.format_reference_text("<|speaker:3|>hi  there") == "<|speaker:3|>hi there"
    assert P.format_reference_text("hi") == "<|speaker:0|>hi"
    codes = _codes(REDUCED, 2)
    a = P.build_prompt(reduced_tok, REDUCED, "x", codes, "<|speaker:3|>hi")
    text = reduced_tok.decode(a[0].tolist(), skip_special_tokens=False)
    assert "Text:\n<|speaker:3|>hi\n\nSpeech:\n" in text and "<|speaker:0|>" not in text


def test_bad_inputs(reduced_tok):
    codes = _codes(REDUCED, 4)
    with pytest.raises(UserError, match="empty"):
        P.build_prompt(reduced_tok, REDUCED, "   \n ")
    with pytest.raises(UserError, match="transcript"):
        P.build_prompt(reduced_tok, REDUCED, "hi", codes)
    with pytest.raises(UserError, match=r"shape \[10, T>0\]"):
        P.build_prompt(reduced_tok, REDUCED, "hi", codes[:9], "ref")
    with pytest.raises(UserError, match=r"shape \[10, T>0\]"):
        P.build_prompt(reduced_tok, REDUCED, "hi", codes[:, :0], "ref")
    bad = codes.copy()
    bad[3, 1] = 4096
    with pytest.raises(UserError, match=r"0\.\.4095"):
        P.build_prompt(reduced_tok, REDUCED, "hi", bad, "ref")
    with pytest.raises(UserError, match="integers"):
        P.build_prompt(reduced_tok, REDUCED, "hi", codes.astype(np.float32), "ref")


def test_budget_error_before_compute(reduced_tok):
    n = P.prompt_length(reduced_tok, REDUCED, "Hello there.")
    room = REDUCED.max_seq_len - n
    P.build_prompt(reduced_tok, REDUCED, "Hello there.", max_new_frames=room)
    with pytest.raises(P.PromptBudgetError, match=f"{n} tokens and {room + 1} frames"):
        P.build_prompt(reduced_tok, REDUCED, "Hello there.", max_new_frames=room + 1)
    assert issubclass(P.PromptBudgetError, UserError)
    with pytest.raises(UserError, match="2048 slots"):
        P.check_budget(1600, 512, PUBLISHED)
    P.check_budget(1536, 512, PUBLISHED)


def test_split_text_fits_budget(reduced_tok):
    sentence = "The quick brown fox jumps over the lazy dog, again and again."
    text = " ".join([sentence] * 12)  # ~750 byte tokens: too long for one reduced prompt
    frames = 200
    with pytest.raises(P.PromptBudgetError):
        P.build_prompt(reduced_tok, REDUCED, text, max_new_frames=frames)
    pieces = P.split_text(reduced_tok, REDUCED, text, frames)
    assert pieces == [sentence] * 12  # sentences stay apart by default
    merged = P.split_text(reduced_tok, REDUCED, text, frames, merge_sentences=True)
    assert 1 < len(merged) < 12 and " ".join(merged) == text
    for piece in merged:
        packed = P.build_prompt(reduced_tok, REDUCED, piece, max_new_frames=frames)
        assert packed.shape[1] + frames <= REDUCED.max_seq_len
    # a per-piece estimate (frames grow with the text) splits finer
    per_char = P.split_text(reduced_tok, REDUCED, text, lambda s: 4 * len(s), merge_sentences=True)
    assert len(per_char) > len(merged) and " ".join(per_char) == text
    assert all(P.prompt_length(reduced_tok, REDUCED, s) + 4 * len(s) <= 512 for s in per_char)
    # one sentence longer than the budget is cut at clauses
    long_sentence = ", ".join(["again and again"] * 40) + "."
    clauses = P.split_text(reduced_tok, REDUCED, long_sentence, frames)
    assert len(clauses) > 1 and all(c.endswith((",", ".")) for c in clauses)


def test_split_text_reference_too_long(reduced_tok):
    with pytest.raises(P.PromptBudgetError):
        P.split_text(
            reduced_tok, REDUCED, "Hello.", 100, reference_frames=450, reference_text="ref"
        )
    pieces = P.split_text(
        reduced_tok, REDUCED, "Hello. World.", 100, reference_frames=50, reference_text="ref"
    )
    assert pieces == ["Hello. World."] or pieces == ["Hello.", "World."]
