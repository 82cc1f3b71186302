"""The calibrated random weights take the sampler's paths a trained model's would
(conversion/audio8_tts/calibration.py): peaked slow logits, top-p cutting, RAS firing, eos
coming; the plain N(0, 0.02) draws take none of them (the same statistics tell them apart)."""

from __future__ import annotations

import pytest
import torch

from conversion.audio8_tts import calibration as K
from conversion.audio8_tts import weights
from conversion.audio8_tts.config import REDUCED
from conversion.audio8_tts.gate.ladder import GATE_FRAMES, reference_prompt
from conversion.audio8_tts.port import PORT
from conversion.audio8_tts.reference import Audio8LM

FRAMES = GATE_FRAMES["reduced"]


@pytest.fixture(scope="module")
def gated():
    """The snapshots the reduced gate loads (weights seeds 0 and 7) and the gate's prompt."""
    torch.set_num_threads(1)
    out = {}
    for ws in (0, 7):
        loaded = weights.load(PORT.resolve_weights("random", REDUCED, ws), REDUCED)
        out[ws] = (loaded.lm, reference_prompt(loaded))
    return out


def test_calibrated_logits_are_peaked_and_take_every_path(gated):
    lm, prompt = gated[0]
    s = K.statistics(lm, prompt, FRAMES, 0)
    assert s.entropy < 5.0 and s.top50_mass > 0.7, s  # uniform over 4,097 is 8.32 nats
    assert s.top_p_cut_slow > 0 and s.top_p_cut_fast > 0, s
    assert s.ras_fired >= 1 and s.changed_ras_temperature > 0, s
    lm7, prompt7 = gated[7]
    ends = [K.statistics(lm7, prompt7, FRAMES, seed).eos_frame for seed in (0, 1, 2)]
    assert any(e is not None and e >= 1 for e in ends), ends  # eos comes, and not at frame 0


def test_plain_draws_take_none_of_them(gated):
    _, prompt = gated[0]
    lm = Audio8LM(REDUCED).eval()
    lm.load_state_dict(weights.random_lm_state(REDUCED, 0, calibrated=False))
    s = K.statistics(lm, prompt, FRAMES, 0)
    assert s.entropy > 8.0 and s.top50_mass < 0.05, s
    assert s.top_p_cut_slow == 0 and s.eos_frame is None, s


def test_calibration_is_from_the_config_and_seed_only():
    # the eos component follows the stated target: log V + sigma^2/2 - log(mean frames)
    assert K.head_gain(128) == pytest.approx(3.0 / (0.02 * 128**0.5))
    a = weights.random_lm_state(REDUCED, 3)
    b = weights.random_lm_state(REDUCED, 3)
    plain = weights.random_lm_state(REDUCED, 3, calibrated=False)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert torch.allclose(a["norm.weight"], plain["norm.weight"] * K.head_gain(REDUCED.dim))
    d = K.audio_direction(REDUCED, 3)
    eos = (
        a["embeddings.weight"][REDUCED.eos_token_id]
        - plain["embeddings.weight"][REDUCED.eos_token_id]
    )
    assert torch.allclose(eos, K.eos_beta(REDUCED) * d, atol=1e-6)
