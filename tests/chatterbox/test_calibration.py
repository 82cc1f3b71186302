"""The calibrated random weights (calibration.py) behave like trained ones where the gate
needs it, on the reduced snapshot CI gates: HiFT voiced at speech-like f0 with an output that
depends on its mel, T3's distributions peaked and its loop stopping on its own stop token.

Each bound is also shown to fail on the publisher's untrained initialisation of the same
layers (the f0 head and conv_post back at their init scale), the weights the gate ran on before.
"""

import numpy as np
import pytest

from conversion.chatterbox import calibration
from conversion.chatterbox.config import REDUCED
from conversion.chatterbox.gate.ladder import GATE_TEXT, GATE_TOKENS
from conversion.chatterbox.oracle.utterance import record
from conversion.chatterbox.port import PORT
from conversion.chatterbox.weights import load_model
from tests.s3gen.hift_calibration import hift_problems, untrained_hift


@pytest.fixture(scope="module")
def model():
    return load_model(PORT.resolve_weights("random", REDUCED, 0), REDUCED)


@pytest.fixture(scope="module")
def fx(model):
    return record(model, GATE_TEXT, seed=0, max_new_tokens=GATE_TOKENS["reduced"])


# the rungs' bars are 0.999 (hift.wav) and 0.99 (e2e wav)
MAGSPEC_MAX = 0.9


def test_hift_is_voiced_and_depends_on_its_mel(model, fx):
    s = calibration.hift_stats(model, fx.intermediates["mel"])
    print(f"\nHiFT: {s}")
    assert hift_problems(s, MAGSPEC_MAX) == []


def test_the_bounds_fail_on_the_untrained_initialisation(model, fx):
    """The f0 head and conv_post at the publisher's init scale (std 0.01 conv_post, the f0
    head's default Linear): the statistics the bounds above refuse."""
    with untrained_hift(model.s3gen.mel2wav):
        stats = calibration.hift_stats(model, fx.intermediates["mel"])
    problems = hift_problems(stats, MAGSPEC_MAX)
    print(f"\nuntrained HiFT: {problems}")
    assert any("voiced" in p for p in problems) and any("replaced mel" in p for p in problems)


def test_t3_is_peaked_and_stops_on_its_own(fx):
    s = calibration.t3_stats(fx)
    print(f"\nT3: {s}")
    assert 2.0 <= s["entropy_nats_median"] <= 5.0  # flat over 8194 ids would be ~9
    assert s["top50_mass_median"] >= 0.7
    assert s["stopped_on_eos"] and s["t3_steps"] < GATE_TOKENS["reduced"]


def test_flat_logits_fail_the_t3_bounds(fx):
    """The publisher's untrained speech head (logit std ~0.6) scores far outside the bounds."""
    it = fx.intermediates
    flat = np.random.default_rng(0).standard_normal(it["t3_cond_logits"].shape) * 0.6
    entropy, top50, _ = calibration.logit_stats(flat, flat)
    assert np.median(entropy) > 5.0 and np.median(top50) < 0.7
