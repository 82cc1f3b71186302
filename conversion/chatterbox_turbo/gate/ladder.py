"""The gate's setup and assembly: the sizes it exports and its bundles (fp32 at the gate's sizes
and the int8-T3 sibling), the utterance it speaks and T3's draw budget; the oracle's cases
(default and cloned voice: `prepare`), then every stage's rungs in ladder order run against
them, the side bundle first (`main_rungs`, `run_gate`)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conversion.core.bundle_source import BundleSource
from conversion.core.errors import BucketOverflowError
from conversion.core.runs import GateRun
from conversion.s3gen import gate_case, gate_rungs
from conversion.s3gen.snapshot import synthetic_reference
from gates.ladder import LadderReport, Rung, run_ladder
from oracles import Fixture

from .. import voice as voice_mod
from ..config import TurboConfig
from ..oracle.utterance import record
from ..pipeline import TurboPipeline
from ..t3.graphs import START_SPEECH
from ..voice import TurboVoice
from .case import Case
from .e2e_rungs import e2e_rungs
from .flow_rungs import flow_rungs
from .t3_rungs import (
    COS_T3,
    COS_T3_INT8,
    free_run_rung,
    prefill_rows_rung,
    sampler_rung,
    t3_rungs,
)
from .text_rungs import text_chunk, text_rung
from .voice_rungs import REF_RATE, REF_SECONDS, publisher_conditionals, voice_rung

GATE_TEXT = "Hello from voxport."
# T3's draw budget (inference_turbo's max_gen_len): the calibrated reduced random weights stop
# inside it (calibration.STOP_STEPS; measured: after 25 to 31 draws, weights seeds 0/1, seeds
# 0/1/2; at 24 most runs ended on the budget, so the free run's stop went unchecked)
GATE_TOKENS = {"reduced": 40, "published": 40}


def gate_config(config: TurboConfig) -> TurboConfig:
    """The sizes the gate exports: the published ones cut to the buckets the gate's utterance
    uses (prefill@256: the default voice's 6 s reference is 150 T3 prompt rows; encoder@256,
    estimator@512, vocoder@256; a published T3 export is 1.2 GB per precision). The reduced
    configuration is gated whole."""
    if not config.is_published:
        return config
    return TurboConfig.from_json(
        {
            **config.to_json(),
            "prefill_buckets": [256],
            "encoder_tokens": [256],
            "estimator_frames": [512],
            "vocoder_frames": [256],
        }
    )


def gate_bundles(bundles: BundleSource, config: TurboConfig) -> tuple[Path, Path]:
    """The fp32 bundle at the gate's sizes and its int8-T3 sibling (T3 only)."""
    return gate_case.gate_bundles(bundles, config, gate_config(config))


def make_case(model, name: str, text: str, steps: int, seed: int, config: TurboConfig,
              ref_wav: Path | None = None) -> Case:  # fmt: skip
    """The oracle's run and the voice the bundle gets. Cloned: the oracle clones with the
    publisher's own `prepare_conditionals` from `ref_wav`; the bundle gets the voice file
    `voxport voice` writes of the same reference, read back from disk (`TurboVoice.load`), and
    the case keeps the publisher's conditionals and a maker of that file (`voice_file_maker`).
    The chunk is filled in by `text_chunk` (voxport's text path over the bundle's tokenizer)."""
    fx = record(model, text, seed=seed, max_gen_len=steps, ref_wav=ref_wav)
    if ref_wav is None:
        return Case(name, fx, TurboVoice.from_conditionals(model.conds, "conds.pt"), None)
    publisher = publisher_conditionals(model, ref_wav)
    clone = voice_file_maker(model, ref_wav, config)
    return Case(name, fx, clone(), None, publisher, clone)


# HiFT's wav sample by sample (the oracle's draws replayed): measured 4.8e-4 to 1.2e-3 (reduced,
# weights seeds 0/1 x seeds 0/1/2); a source STFT padded by replication instead of reflection
# moved it 4.7e-3 to 7.3e-3 (seeds 0/1/2), under Chatterbox's 1e-2 (its vocoder's edge moved 0.12)
MAX_ABS_HIFT = 3e-3
# The start-token probe's draw budget: draw 0 is the one whose penalty sees the start token
PROBE_TOKENS = 2


def start_token_probe(model, text: str, seed: int) -> Fixture:
    """The oracle on `text` with the start-of-speech logit raised to the top of every row the
    speech head gives (a forward hook that runs before the oracle's own, so the recorded
    logits hold the raised one). On the calibrated random weights the start token's logit is
    ~0 against a top of ~13.6, so top-p drops it and the penalty that draw 0 puts on it moves
    nothing; raised, it is a candidate, and the publisher's processors penalise it there."""

    def raise_start(_module, _args, out):
        out = out.clone()
        out[..., START_SPEECH] = out.amax(dim=-1) + 1.0
        return out

    handle = model.t3.speech_head.register_forward_hook(raise_start)
    try:
        return record(model, text, seed=seed, max_gen_len=PROBE_TOKENS)
    finally:
        handle.remove()


def voice_file_maker(model, ref_wav: Path, config: TurboConfig) -> Callable[[], TurboVoice]:
    """A function that writes the voice file `voxport voice` writes of `ref_wav` and reads it
    back with the host's reader (`gate_case.voice_file_maker`): the port's clone as it is
    when called."""
    return gate_case.voice_file_maker(
        ref_wav,
        # looked up through the module when called, so a patched writer or reader is the one run
        lambda wav, dest: voice_mod.write_voice_file(model, wav, dest, config),
        lambda path: voice_mod.TurboVoice.load(path),
        "voxport-turbo-voice-",
    )


@dataclass
class GateSetup:
    """What the ladder needs, made once: the oracle's cases (recorded once per run), the fp32
    bundle at the gate's sizes and, when asked for, the int8-T3 side bundle."""

    model: object
    config: TurboConfig
    sizes: TurboConfig
    cases: list[Case]
    bundle: Path
    int8: Path | None = None
    probe: Fixture | None = None  # `start_token_probe`'s run


def prepare(
    model, config: TurboConfig, bundles: BundleSource, seed: int, side: bool = True
) -> GateSetup:
    """The oracle on the gate's utterance (default and cloned voice) and the bundles."""
    steps = GATE_TOKENS[config.name]
    problems = config.fit_problems()
    if problems:  # a config whose longest prefix + full chunk overflows the buckets
        raise BucketOverflowError(f"chatterbox_turbo {config.name}: {'; '.join(problems)}")
    print(f"chatterbox_turbo gate: oracle on {GATE_TEXT!r}, up to {steps + 1} T3 draws",
          file=sys.stderr)  # fmt: skip
    cases = [make_case(model, "default", GATE_TEXT, steps, seed, config)]
    with tempfile.TemporaryDirectory(prefix="voxport-turbo-ref-") as tmp:
        import soundfile as sf

        ref = Path(tmp) / "reference.wav"
        sf.write(ref, synthetic_reference(REF_SECONDS, seed + 7, sample_rate=REF_RATE), REF_RATE)
        cases.append(make_case(model, "cloned", GATE_TEXT, steps, seed, config, ref))

    sizes = gate_config(config)
    bundle, int8 = gate_case.gate_bundles(bundles, config, sizes, side)
    for case in cases:  # voxport's own text ids feed the bundle, not the oracle's
        case.chunk = text_chunk(bundle, sizes, GATE_TEXT)
    probe = start_token_probe(model, GATE_TEXT, seed)
    return GateSetup(model, config, sizes, cases, bundle, int8, probe)


def main_rungs(pipeline: TurboPipeline, setup: GateSetup) -> tuple[list[Rung], int]:
    """The fp32 bundle's rungs, in ladder order, and how many come before the side rungs."""
    default, cloned = setup.cases
    head = [
        text_rung(setup.model, setup.bundle, setup.sizes),
        prefill_rows_rung(pipeline, default),
        *t3_rungs(pipeline, default, "fp32", COS_T3),
        sampler_rung(default.fixture),
        sampler_rung(setup.probe, "start-token"),
    ]
    rungs = [
        *head,
        *flow_rungs(pipeline, default),
        *gate_rungs.hift_rungs(pipeline, default.fixture, MAX_ABS_HIFT),
        *e2e_rungs(pipeline, default),
        voice_rung(cloned, pipeline.arrays["t3"]),
        *e2e_rungs(pipeline, cloned),
        free_run_rung(pipeline, default),
    ]
    return rungs, len(head)


def run_gate(run: GateRun) -> int:
    """The oracle on the gate's utterance (default and cloned voice), then the ladder: 0 when
    every rung passes."""
    from gates.report import emit

    setup = prepare(run.model, run.config, run.source, run.seed)
    default = setup.cases[0]
    # The side bundle runs first, in its own child process closed before the main one opens
    # (a published int8 T3 holds its weights dequantised in its worker)
    with TurboPipeline(setup.int8, isolate=True) as side_bundle:
        side = run_ladder(
            "chatterbox_turbo", t3_rungs(side_bundle, default, "int8", COS_T3_INT8)
        ).rungs
    with TurboPipeline(setup.bundle, isolate=True) as pipeline:
        rungs, n = main_rungs(pipeline, setup)
        main = run_ladder("chatterbox_turbo", rungs, stop_on_fail=run.stop_on_fail)
    report = LadderReport("chatterbox_turbo", [*main.rungs[:n], *side, *main.rungs[n:]])
    emit(report, run.json_path, run.markdown)
    return 0 if report.passed else 1
