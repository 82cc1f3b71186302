"""The Chatterbox Turbo oracle on the reduced random snapshot: seeded, T3 stops on its own stop
token, its draws replay through inference_turbo's processor order written out here in NumPy
(not transformers'), and the mean-flow steps are what the recorded inputs say."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conversion.chatterbox_turbo.config import REDUCED
from conversion.chatterbox_turbo.oracle import STOP_SPEECH, previous_tokens, record
from conversion.core.host.sampling import HF_ORDER, SamplingConfig, sample

TEXT = "hello there"
SEED = 1
S3GEN_SIL = 4299


@pytest.fixture(scope="module")
def fx(turbo_model):
    return record(turbo_model, TEXT, seed=SEED)


# inference_turbo's processors, as transformers defines them, one by one in NumPy
def _temperature(x, _prev, t):
    return x / np.float32(t)


def _top_k(x, _prev, k):
    kth = np.sort(x)[-k]
    return np.where(x < kth, -np.inf, x).astype(np.float32)


def _top_p(x, _prev, p):
    order = np.argsort(x, kind="stable")  # ascending, as transformers sorts
    z = x[order].astype(np.float64)
    probs = np.exp(z - z.max())
    cum = np.cumsum(probs / probs.sum())
    remove = cum <= 1 - p
    remove[-1] = False
    out = x.copy()
    out[order[remove]] = -np.inf
    return out


def _penalty(x, prev, r):
    out = x.copy()
    seen = np.unique(prev)
    out[seen] = np.where(out[seen] < 0, out[seen] * np.float32(r), out[seen] / np.float32(r))
    return out


TURBO_ORDER = ((_temperature, 0.8), (_top_k, 1000), (_top_p, 0.95), (_penalty, 1.2))


def _replay(fx, order=TURBO_ORDER):
    """Each step's token from its recorded logits and uniforms, on the recorded history."""
    it, tokens = fx.intermediates, fx.intermediates["t3_tokens"]
    drawn, dists = [], []
    for step, (logits, u) in enumerate(
        zip(it["t3_logits"], fx.draws["t3_uniforms/0"], strict=True)
    ):
        x = logits.astype(np.float32)
        for processor, value in order:
            x = processor(x, previous_tokens(tokens, step), value)
        p = np.exp(x.astype(np.float64) - x.max())
        dists.append(p / p.sum())
        drawn.append(int(np.argmax(p / -np.log(u.astype(np.float64)))))
    return np.array(drawn), np.array(dists)


def test_t3_stops_on_its_stop_token_within_budget(fx):
    tokens = fx.intermediates["t3_tokens"][0]
    assert fx.meta["stopped_on_eos"] and tokens[-1] == STOP_SPEECH
    assert STOP_SPEECH not in tokens[:-1]
    assert 8 <= tokens.size <= REDUCED.speech_budget
    speech = fx.intermediates["speech_tokens"][0]
    np.testing.assert_array_equal(speech[:-3], tokens[tokens < 6561])
    np.testing.assert_array_equal(speech[-3:], [S3GEN_SIL] * 3)


def test_draws_replay_in_turbo_processor_order(fx):
    drawn, dists = _replay(fx)
    np.testing.assert_array_equal(drawn, fx.intermediates["t3_tokens"][0])
    np.testing.assert_allclose(dists, fx.intermediates["t3_probs"], atol=1e-5)


def test_penalty_first_draws_other_tokens(fx):
    """transformers' generate order (penalty before temperature/top-k/top-p: core's HF_ORDER)
    is not Turbo's: on these logits and uniforms it draws another token (1 of 31 at this seed;
    its distributions differ by up to 0.28 in probability)."""
    cfg = SamplingConfig(temperature=0.8, top_k=1000, top_p=0.95, repetition_penalty=1.2)
    assert cfg.order == HF_ORDER
    tokens, it = fx.intermediates["t3_tokens"], fx.intermediates
    hf = [
        sample(logits, u, cfg, previous_tokens=previous_tokens(tokens, step))
        for step, (logits, u) in enumerate(
            zip(it["t3_logits"], fx.draws["t3_uniforms/0"], strict=True)
        )
    ]
    assert int((np.array(hf) != tokens[0]).sum()) >= 1


def test_same_seed_same_record_other_seed_other_tokens(turbo_model, fx):
    again = record(turbo_model, TEXT, seed=SEED)
    for group in ("intermediates", "draws", "outputs"):
        for key, value in getattr(fx, group).items():
            np.testing.assert_array_equal(getattr(again, group)[key], value, err_msg=key)
    other = record(turbo_model, TEXT, seed=SEED + 1)
    a, b = fx.intermediates["t3_tokens"][0], other.intermediates["t3_tokens"][0]
    assert a.size != b.size or not np.array_equal(a, b)


def test_mean_flow_steps(turbo_model, fx):
    it, inputs = fx.intermediates, fx.inputs
    np.testing.assert_array_equal(
        it["flow_tokens"], np.concatenate([inputs["prompt_tokens"], it["speech_tokens"]], 1)
    )
    np.testing.assert_array_equal(it["cfm_t"].ravel(), [0.0, 0.5])
    np.testing.assert_array_equal(it["cfm_r"].ravel(), [0.5, 1.0])
    prompt = inputs["prompt_feat"].shape[1]
    x0 = it["cfm_x"][0]
    np.testing.assert_array_equal(x0[..., :prompt], fx.draws["randn_like/0"][..., :prompt])
    np.testing.assert_array_equal(x0[..., prompt:], fx.draws["randn/0"])
    # Euler on the mean velocity: x <- x + (r - t) v
    x1 = x0 + 0.5 * it["cfm_velocity"][0]
    np.testing.assert_allclose(it["cfm_x"][1], x1, atol=1e-6)
    np.testing.assert_allclose(
        it["mel"], (x1 + 0.5 * it["cfm_velocity"][1])[..., prompt:], atol=1e-5
    )
    # the calibrated time mixer: the step's end time r moves the velocity
    est = turbo_model.s3gen.flow.decoder.estimator
    args = {k: torch.from_numpy(it[f"cfm_{k}_in"]) for k in ("mu", "mask", "spks", "cond")}
    with torch.no_grad():
        v = est(torch.from_numpy(x0), t=torch.tensor([0.0]), r=torch.tensor([0.5]), **args)
        v_r = est(torch.from_numpy(x0), t=torch.tensor([0.0]), r=torch.tensor([1.0]), **args)
    np.testing.assert_allclose(v.numpy(), it["cfm_velocity"][0], atol=1e-5)
    assert float((v - v_r).abs().max()) > 1e-2
