"""The gate's setup and assembly: the oracle's cases (default and cloned voice) and the
bundles at the gate's sizes (`prepare`), then every stage's rungs in ladder order run against
them, side bundles first, with the step-count table (`run_gate`).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from conversion.core.bundle_source import BundleSource
from conversion.core.errors import BucketOverflowError, UserError
from conversion.s3gen import gate_case
from gates.ladder import LadderReport, Rung, run_ladder

from .. import voice as voice_mod
from .. import weights
from ..config import ChatterboxConfig
from ..oracle.utterance import record
from ..pipeline import ChatterboxPipeline
from ..voice import Voice
from .case import Case
from .e2e_rungs import e2e_rungs
from .flow_rungs import FP16_STEPS, _fp16_rung, flow_rungs, step_count_table
from .hift_rungs import hift_rungs
from .t3_rungs import COS_T3, COS_T3_INT8, free_run_rung, t3_rungs
from .text_rungs import text_chunk, text_rung
from .voice_rungs import REF_RATE, REF_SECONDS, publisher_conditionals, voice_rung

GATE_TEXT = "Hello from voxport."
# T3's step budget: the publisher's loop runs to its stop token or to this many steps (the
# calibrated random weights stop inside it: calibration.STOP_STEP)
GATE_TOKENS = {"reduced": 24, "published": 40}


def gate_config(config: ChatterboxConfig) -> ChatterboxConfig:
    """The sizes the gate exports: the published ones cut to the buckets the gate's utterance
    uses (one prefill bucket, encoder@256, estimator@512, vocoder@256), because a published
    T3 export peaks near 12 GB per bucket set and the Linux runtime takes ~90 s per 256-frame
    vocoder call. The reduced configuration is gated whole.
    """
    if not config.is_published:
        return config
    return ChatterboxConfig.from_json(
        {
            **config.to_json(),
            "name": "published",
            "prefill_buckets": [config.prefill_buckets[0]],
            "encoder_tokens": [256],
            "estimator_frames": [512],
            "vocoder_frames": [256],
        }
    )


def make_case(
    model,
    name: str,
    text: str,
    steps: int,
    seed: int,
    ref_wav: Path | None = None,
    prompt_tokens_max: int | None = None,
) -> Case:
    """The oracle's run and the voice the bundle gets. Cloned: the oracle clones with the
    publisher's own `prepare_conditionals` from `ref_wav` and runs on its conditionals; the
    bundle gets the voice file `voxport voice` writes of the same reference, read back from
    disk by the host's reader (`Voice.load`), and the case keeps the publisher's conditionals
    (`publisher_conditionals`, in memory) and the reference's samples, from which `case.clone`
    makes that file again whenever `voice_rung` runs.
    The chunk is filled in by `text_chunk` (voxport's text path over the bundle's tokenizer)."""
    if ref_wav is None:
        voice = Voice.from_conditionals(model)
        fx = record(model, text, seed=seed, max_new_tokens=steps, voice=voice)
        return Case(name, fx, voice, None)
    fx = record(model, text, seed=seed, max_new_tokens=steps, ref_wav=ref_wav)
    exaggeration = float(fx.inputs["exaggeration"])
    publisher = publisher_conditionals(model, ref_wav, exaggeration)
    clone = voice_file_maker(model, ref_wav, exaggeration, prompt_tokens_max)
    return Case(name, fx, clone(), None, publisher, clone)


def voice_file_maker(
    model, ref_wav: Path, exaggeration: float, prompt_tokens_max: int | None
) -> Callable[[], Voice]:
    """A function that writes the voice file `voxport voice` writes of `ref_wav` and reads it
    back with the host's reader (`gate_case.voice_file_maker`): the port's clone as it is
    when called."""
    return gate_case.voice_file_maker(
        ref_wav,
        # looked up through the module when called, so a patched writer or reader is the one run
        lambda wav, dest: voice_mod.write_voice_file(
            model, wav, dest, exaggeration, prompt_tokens_max
        ),
        lambda path: voice_mod.Voice.load(path),
        "voxport-cbx-voice-",
    )


def gate_bundles(bundles: BundleSource, config: ChatterboxConfig) -> tuple[Path, Path]:
    """The fp32 bundle at the gate's sizes and its int8-T3 sibling (T3 only)."""
    return gate_case.gate_bundles(bundles, config, gate_config(config))


@dataclass
class GateSetup:
    """What the ladder needs, made once: the oracle's cases (recorded once per run), the fp32
    bundle at the gate's sizes and, when asked for, the int8-T3 and fp16-estimator side bundles."""

    model: object
    config: ChatterboxConfig
    sizes: ChatterboxConfig
    cases: list[Case]
    bundle: Path
    int8: Path | None = None
    fp16: Path | None = None


def prepare(
    model, config: ChatterboxConfig, bundles: BundleSource, seed: int, side: bool = True
) -> GateSetup:
    """The oracle on the gate's utterance (default and cloned voice) and the bundles."""
    steps = GATE_TOKENS[config.name]
    problems = config.flow_fit_problems()
    if problems:  # a config whose longest prompt + full chunk overflows S3Gen's buckets
        raise BucketOverflowError(f"chatterbox {config.name}: {'; '.join(problems)}")
    print(f"chatterbox gate: oracle on {GATE_TEXT!r}, up to {steps} T3 steps", file=sys.stderr)
    cases = [make_case(model, "default", GATE_TEXT, steps, seed)]
    with tempfile.TemporaryDirectory(prefix="voxport-cbx-ref-") as tmp:
        import soundfile as sf

        ref = Path(tmp) / "reference.wav"
        wav = weights.synthetic_reference(REF_SECONDS, seed + 7, sample_rate=REF_RATE)
        sf.write(ref, wav, REF_RATE)  # written at the rate it was made at
        cases.append(
            make_case(model, "cloned", GATE_TEXT, steps, seed, ref, config.prompt_tokens_max)
        )

    sizes = gate_config(config)
    bundle, int8 = gate_case.gate_bundles(bundles, config, sizes, side)
    for case in cases:  # voxport's own text ids feed the bundle, not the oracle's
        case.chunk = text_chunk(bundle, sizes, GATE_TEXT)
    setup = GateSetup(model, config, sizes, cases, bundle, int8)
    if side:
        # the fp16 estimator at the smallest 64-multiple bucket that holds the case: the Linux
        # runtime emulates fp16 matmuls ~150x slower than fp32
        frames = cases[0].fixture.intermediates["cfm_x"].shape[-1]
        small = ChatterboxConfig.from_json(
            {**sizes.to_json(), "estimator_frames": [-(-frames // 64) * 64]}
        )
        setup.fp16 = bundles.get(
            small,
            "fp32",
            graphs=("flow_estimator",),
            precisions={"flow_estimator": "fp16"},
            variant="gate-est-fp16",
        )
    return setup


def main_rungs(pipeline: ChatterboxPipeline, setup: GateSetup) -> tuple[list[Rung], int]:
    """The fp32 bundle's rungs, in ladder order, and how many come before the side rungs."""
    default, cloned = setup.cases
    head = [
        text_rung(setup.model, setup.bundle, setup.sizes),
        *t3_rungs(pipeline, default, "fp32", COS_T3),
    ]
    rungs = [
        *head,
        *flow_rungs(pipeline, default),
        *hift_rungs(pipeline, default),
        *e2e_rungs(pipeline, default),
        voice_rung(cloned),
        *e2e_rungs(pipeline, cloned),
        free_run_rung(pipeline, default),
    ]
    return rungs, len(head)


def run_gate(
    model,
    config: ChatterboxConfig,
    bundles: BundleSource,
    seed: int,
    stop_on_fail: bool = False,
    json_path: Path | None = None,
    markdown: Path | None = None,
    fp16_steps: str = "all",
) -> int:
    """The oracle on the gate's utterance (default and cloned voice), then the ladder."""
    from gates.report import emit

    if fp16_steps not in FP16_STEPS:
        raise UserError(f"fp16_steps must be one of {FP16_STEPS}, got {fp16_steps!r}")
    setup = prepare(model, config, bundles, seed)
    default = setup.cases[0]
    # The side bundles run first, each in its own child process closed before the next
    # opens: a published int8 T3 holds ~6 GB in its worker, dequantised.
    side: list = []
    for path, make in (
        (setup.int8, lambda b: t3_rungs(b, default, "int8", COS_T3_INT8)),
        (setup.fp16, lambda b: [_fp16_rung(b, default, fp16_steps)]),
    ):
        with ChatterboxPipeline(path, isolate=True) as side_bundle:
            side += run_ladder("chatterbox", make(side_bundle)).rungs
    with ChatterboxPipeline(setup.bundle, isolate=True) as pipeline:
        rungs, n = main_rungs(pipeline, setup)
        main = run_ladder("chatterbox", rungs, stop_on_fail=stop_on_fail)
        table = step_count_table(pipeline, default)
    report = LadderReport("chatterbox", [*main.rungs[:n], *side, *main.rungs[n:]])
    print(
        "CFM step count (bundle, same tokens and noise; vs the publisher's 10-step mel): "
        + ", ".join(f"{r['steps']} steps mel cos {r['mel_cos_vs_10']:.4f}" for r in table)
    )
    emit(report, json_path, markdown)
    if markdown:
        with open(markdown, "a") as f:
            f.write("\n| Euler steps | mel cos vs the publisher's 10 steps |\n|---:|---:|\n")
            for r in table:
                f.write(f"| {r['steps']} | {r['mel_cos_vs_10']:.4f} |\n")
    return 0 if report.passed else 1
