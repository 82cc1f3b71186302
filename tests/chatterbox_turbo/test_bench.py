"""`voxport bench chatterbox_turbo` through the CLI at the reduced sizes, one repeat: every
stage's figures are there and positive, and its runtime calls per second of audio are what a
TurboPipeline run of the same utterance (the bench's seed draws) counts itself."""

from __future__ import annotations

import json

import pytest

from conversion.chatterbox_turbo.config import REDUCED, SAMPLE_RATE
from conversion.chatterbox_turbo.gate.ladder import GATE_TEXT, GATE_TOKENS
from conversion.chatterbox_turbo.pipeline import SpeakOptions, TurboPipeline
from conversion.chatterbox_turbo.port import PORT
from conversion.cli.main import main
from conversion.core.bundle_source import BundleSource

SEED = 0
STAGE_FIGURES = (
    "t3_decode_ms_per_token_fp32",
    "t3_decode_ms_per_token_int8",
    "t3_prefill_ms",
    "estimator_ms_per_call",
    "encoder_ms",
    "vocoder_ms",
    "coreai_bundle_rtf",
    "eager_t3_decode_ms_per_step",
    "eager_t3_loop_ms_per_token",
    "eager_estimator_ms_per_call",
    "eager_vocoder_ms",
    "eager_oracle_rtf",
    "t3_decode_vs_eager_step",
    "estimator_vs_eager",
    "peak_rss_mb",
)
PER_AUDIO_SECOND = ("t3", "estimator", "vocoder")


@pytest.fixture(scope="module")
def figures(tmp_path_factory, turbo_snapshot) -> dict:
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    argv = ["bench", "chatterbox_turbo", "--weights", "random", "--config", "reduced"]
    code = main([*argv, "--repeats", "1", "--seed", str(SEED), "--json", str(out)])
    assert code == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def own_run(figures, turbo_snapshot):
    """The bench's utterance spoken again by a TurboPipeline on the same fp32 bundle: the
    publisher's max_gen_len=n draws up to n + 1 tokens, the bundle's budget counts draws."""
    bundle = BundleSource(PORT, turbo_snapshot, "reduced").get(REDUCED, "fp32")
    options = SpeakOptions(max_new_tokens=GATE_TOKENS["reduced"] + 1)
    with TurboPipeline(bundle) as pipeline:
        chunk = pipeline.chunks(GATE_TEXT)[0]
        return pipeline.synthesize(chunk, pipeline.default_voice, options, seed=SEED)


def test_every_stage_has_positive_figures(figures):
    for key in STAGE_FIGURES:
        assert figures[key] is not None and figures[key] > 0, key
    for stage in PER_AUDIO_SECOND:
        for key in (
            f"{stage}_ms_per_audio_s",
            f"eager_{stage}_ms_per_audio_s",
            f"{stage}_per_audio_s_vs_eager",
        ):
            assert figures[key] is not None and figures[key] > 0, key
    assert figures["audio_s"] > 0 and figures["eager_audio_s"] > 0


def test_calls_per_audio_second_are_the_pipelines_own_count(figures, own_run):
    calls = sum(own_run.calls.values())
    audio_s = own_run.wav.size / SAMPLE_RATE
    assert figures["t3_tokens"] == own_run.t3.steps  # the same utterance
    assert figures["runtime_calls"] == calls
    assert figures["runtime_calls_per_audio_s"] == pytest.approx(calls / audio_s, abs=0.006)
    # mean-flow: one estimator call per step at batch 1 (Chatterbox's CFG takes 10)
    assert figures["estimator_calls"] == own_run.calls["flow_estimator"] == 2
    assert figures["eager_estimator_calls"] == 2
