"""`voxport gate chatterbox_turbo` on the reduced random weights: every rung of the ladder
(the bundle through the Core AI runtime against the publisher's ChatterboxTurboTTS on the same
weights) passes, each value against its threshold and each threshold no looser than the bar
written here; and two host-only rungs fail on a port fault they are there to catch."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conversion.chatterbox_turbo import pipeline as pipeline_mod
from conversion.chatterbox_turbo.gate.case import Case
from conversion.chatterbox_turbo.gate.flow_rungs import speech_tokens_rung
from conversion.chatterbox_turbo.gate.ladder import GATE_TEXT, GATE_TOKENS, start_token_probe
from conversion.chatterbox_turbo.gate.t3_rungs import sampler_rung
from conversion.chatterbox_turbo.oracle import record
from conversion.chatterbox_turbo.t3 import host as t3_host
from conversion.chatterbox_turbo.voice import TurboVoice
from gates.ladder import run_rung

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")

# Every rung the ladder must hold, and the loosest bar each may have (">=" a floor, "<=" a
# ceiling): Chatterbox's bars, so a loosened threshold fails here as well as a failed rung.
BARS = {
    "text.ids": (">=", 1.0),
    "t3.prefill_rows[default]": ("<=", 1e-5),
    "t3[fp32].logits": (">=", 0.999999),
    "t3[fp32].draws": (">=", 1.0),
    "t3.sampler_probs": ("<=", 1e-5),
    "t3.sampler_probs[start-token]": ("<=", 1e-5),
    "t3[int8].logits": (">=", 0.999),
    "t3[int8].draws": (">=", 0.9),
    "s3gen.speech_tokens": (">=", 1.0),
    "flow_encoder.mu": (">=", 0.999),
    "flow_estimator.velocity": (">=", 0.9999),
    "flow.meanflow_mel": (">=", 0.999),
    "hift.wav": (">=", 0.999),
    "hift.wav_samples": ("<=", 3e-3),
    "e2e[default].t3_logits": (">=", 0.999999),
    "e2e[default].mel": (">=", 0.999),
    "e2e[default].wav": (">=", 0.99),
    "voice[cloned].conds": (">=", 0.9999),
    "e2e[cloned].t3_logits": (">=", 0.999999),
    "e2e[cloned].mel": (">=", 0.999),
    "e2e[cloned].wav": (">=", 0.99),
    "t3[fp32].free_run": (">=", 1.0),
}


@pytest.fixture(scope="module")
def gate_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("turbo-gate") / "gate.json"
    proc = subprocess.run(
        [VOXPORT, "gate", "chatterbox_turbo", "--config", "reduced", "--weights", "random",
         "--json", str(out)],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert out.exists(), proc.stderr[-3000:]
    return json.loads(out.read_text()), proc


def test_reduced_gate_passes_every_rung(gate_report):
    report, proc = gate_report
    rungs = {r["name"]: r for r in report["rungs"]}
    assert sorted(rungs) == sorted(BARS), proc.stderr[-3000:]
    for name, (op, bar) in BARS.items():
        r = rungs[name]
        value, threshold = r["value"], r["threshold"]
        assert value is not None, (name, r["detail"])
        if op == ">=":
            assert r["higher_is_better"] and threshold >= bar, (name, threshold)
            assert value >= threshold, (name, value, r["detail"])
        else:
            assert not r["higher_is_better"] and threshold <= bar, (name, threshold)
            assert value <= threshold, (name, value, r["detail"])
        assert r["passed"], (name, r["detail"])
    assert report["passed"] and proc.returncode == 0
    assert "12/12 texts: same pieces" in rungs["text.ids"]["detail"]
    assert "read from disk" in rungs["voice[cloned].conds"]["detail"]
    assert "stopped: port True, oracle True" in rungs["t3[fp32].free_run"]["detail"]


@pytest.fixture(scope="module")
def default_case(turbo_model):
    fx = record(turbo_model, GATE_TEXT, seed=0, max_gen_len=GATE_TOKENS["reduced"])
    return Case("default", fx, TurboVoice.from_conditionals(turbo_model.conds), None)


def test_sampler_rung_fails_with_the_penalty_first(default_case, monkeypatch):
    assert run_rung(sampler_rung(default_case.fixture)).passed
    # transformers' usual order (the penalty before top-k / top-p) instead of Turbo's
    first = dataclasses.replace(pipeline_mod.SpeakOptions().sampling().order,
                                penalty_after_filters=False)  # fmt: skip
    sampling = pipeline_mod.SpeakOptions.sampling
    monkeypatch.setattr(
        pipeline_mod.SpeakOptions,
        "sampling",
        lambda self: dataclasses.replace(sampling(self), order=first),
    )
    result = run_rung(sampler_rung(default_case.fixture))
    print(f"penalty first: max abs {result.value:.3g} ({result.detail})")
    assert not result.passed and result.value > 1e-3


def test_speech_tokens_rung_fails_without_the_silence_tail(default_case, monkeypatch):
    assert run_rung(speech_tokens_rung(default_case)).passed
    monkeypatch.setattr(
        pipeline_mod, "speech_tokens_for_s3gen", lambda t: np.asarray(t)[np.asarray(t) < 6561]
    )
    result = run_rung(speech_tokens_rung(default_case))
    assert not result.passed and result.value == 0.0, result.detail


def test_start_token_probe_fails_without_draw_0s_start_token_penalty(turbo_model, monkeypatch):
    """On the gate's own run the start token is never a candidate (top-p drops it), so only
    the probe, where the publisher's head gives it the top logit, sees draw 0's penalty."""
    probe = start_token_probe(turbo_model, GATE_TEXT, seed=0)
    assert probe.intermediates["t3_tokens"].size >= 1
    assert run_rung(sampler_rung(probe, "start-token")).passed
    history = t3_host.penalty_history
    monkeypatch.setattr(
        t3_host, "penalty_history", lambda step, drawn: history(step, drawn)[step == 0 :]
    )
    result = run_rung(sampler_rung(probe, "start-token"))
    print(f"no start-token penalty: max abs {result.value:.3g} ({result.detail})")
    assert not result.passed and result.value > 1e-3
