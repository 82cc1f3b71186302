"""Chatterbox Turbo's random snapshot: the publisher's from_local loads it at the reduced sizes,
with a GPT-2 tokenizer of 50,276 ids and a default voice; seeded: same seed, same bytes."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer

from conversion.chatterbox_turbo.config import REDUCED, TEXT_VOCAB
from conversion.chatterbox_turbo.weights import CONDS, REQUIRED, random_snapshot
from conversion.core.weights_folder import MANIFEST, folder_problem
from conversion.fixtures.text.shapes import whisper_path


def _hashes(folder):
    files = json.loads((folder / MANIFEST).read_text())["files"]
    return {name: entry["sha256"] for name, entry in files.items()}


def test_snapshot_loads_through_from_local(turbo_snapshot, turbo_model):
    assert folder_problem(turbo_snapshot, full=True) is None
    m = turbo_model
    gpt2 = m.t3.tfmr.config
    assert (gpt2.n_layer, gpt2.n_embd, gpt2.n_head) == (2, 256, 4)
    assert m.t3.hp.speech_tokens_dict_size == 6563 and m.t3.hp.text_tokens_dict_size == TEXT_VOCAB
    assert m.s3gen.meanflow and m.s3gen.flow.decoder.estimator.time_embed_mixer is not None
    assert len(m.tokenizer) == TEXT_VOCAB
    # GPT-2's byte-level BPE, as Whisper's own tokenizer.json encodes it (no special tokens)
    text = "Hello there, it's 5 o'clock."
    reference = Tokenizer.from_file(str(whisper_path())).encode(text, add_special_tokens=False)
    assert m.tokenizer(text).input_ids == reference.ids
    assert m.conds is not None  # conds.pt, from the publisher's prepare_conditionals
    assert m.conds.t3.cond_prompt_speech_tokens.shape == (1, REDUCED.t3_prompt_tokens_max)
    assert m.conds.gen["prompt_token"].shape == (1, REDUCED.prompt_tokens_max)


@pytest.mark.slow
def test_same_seed_same_bytes_other_seed_other_weights(turbo_snapshot, tmp_path):
    again = random_snapshot(tmp_path / "seed0", REDUCED, 0)
    assert _hashes(again) == _hashes(turbo_snapshot)
    other = _hashes(random_snapshot(tmp_path / "seed1", REDUCED, 1))
    first = _hashes(turbo_snapshot)
    for name in (*REQUIRED[:3], CONDS):
        assert other[name] != first[name], name
