"""The Audio8 gate's ladder: the gate utterance and its prompts, the reference's runs on them,
the rungs in order on an open bundle (`ladder_rungs`), `run_gate` over a bundle, and the
exported-precision side bundles (`precision_bundles`); the rungs are built in the stage modules
beside this one, the stages and their order are listed in the package docstring."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from conversion.core.bundle_source import BundleSource
from conversion.core.errors import UserError
from gates.ladder import Rung, run_ladder

from ..codec import reference as CR
from ..mixed import MIXED
from ..publisher_prompt import publisher_prompt
from ..voice import Voice
from ..weights import Loaded
from .ar_rungs import (
    free_run_rung,
    ras_windows_rung,
    reference_run,
    teacher_forced_logits_rung,
    teacher_forced_rung,
)
from .codec_rungs import codec_rung, encoder_rungs, stream_vs_whole_rungs
from .precision_rungs import PRECISION_DTYPES, precision_rungs
from .prompt_rungs import PROMPT_REFERENCE_TEXT, prompt_rungs
from .sampler_rungs import sampler_rungs

GATE_TEXT = "Hello from voxport."
GATE_FRAMES = {"reduced": 12, "published": 24}


def precision_rows(spec: str) -> tuple[str, ...]:
    """`--precision-rows`: a comma-separated subset of fp16,int8,mixed, or "none"."""
    if spec.strip().lower() == "none":
        return ()
    dtypes = tuple(d.strip() for d in spec.split(",") if d.strip())
    unknown = [d for d in dtypes if d not in PRECISION_DTYPES]
    if unknown or not dtypes:
        raise UserError(
            f"--precision-rows {spec!r}: choose from {', '.join(PRECISION_DTYPES)} "
            "(comma-separated) or none"
        )
    return dtypes


def precision_bundles(
    source: BundleSource, config, dtypes: tuple[str, ...] = PRECISION_DTYPES
) -> dict[str, Path]:
    """The `ar` graph alone at each gated precision, as `--dtype` exports it (one side bundle
    per dtype, `{bundle}-gate-ar-{dtype}` beside a `--bundle`, reused while current)."""
    out = {}
    for dtype in dtypes:
        if dtype == MIXED:  # no `--dtype mixed`: an fp32-keyed bundle whose `ar` is mixed
            out[dtype] = source.get(
                config, "fp32", graphs=("ar",), precisions={"ar": MIXED}, variant="gate-ar-mixed"
            )
        else:
            out[dtype] = source.get(config, dtype, graphs=("ar",), variant=f"gate-ar-{dtype}")
    return out


def gate_prompt(pipeline, config) -> np.ndarray:
    """The gate utterance's prompt, as the bundle's host builds it."""
    return pipeline.prompt(GATE_TEXT, None, GATE_FRAMES[config.name])


def reference_prompt(loaded: Loaded) -> np.ndarray:
    """The gate utterance's prompt as the publisher states its template
    (`publisher_prompt.py`, apart from the port's `prompt.py`): what the reference run is fed,
    so a template fault moves the bundle side only."""
    config = loaded.config
    return publisher_prompt(
        loaded.tokenizer, config.num_codebooks, config.semantic_begin_id, GATE_TEXT
    )


VOICE_FRAMES = 4  # the voiced teacher-forced check: the prefill over a voice's codes matters


def voice_case(config, seed: int) -> tuple[np.ndarray, str]:
    """Seeded voice codes [10, 24] (4,096-entry semantic book, 1,024-entry others) and a
    transcript: the voiced prompt's audio columns carry all ten code rows, a text-only prompt
    none (its code rows are never read)."""
    rng = np.random.default_rng([seed, 24])
    codes = rng.integers(0, 1024, (config.num_codebooks, 24))
    codes[0] = rng.integers(0, config.codebook_size, 24)
    return codes, PROMPT_REFERENCE_TEXT


def reference_voice_run(loaded: Loaded, seed: int):
    """The reference's run on the publisher-stated voiced prompt (`voice_case`)."""
    config = loaded.config
    codes, text = voice_case(config, seed)
    prompt = publisher_prompt(
        loaded.tokenizer, config.num_codebooks, config.semantic_begin_id, GATE_TEXT, codes, text
    )
    return reference_run(loaded.lm, prompt, VOICE_FRAMES, seed)


def ladder_rungs(
    loaded: Loaded,
    pipeline,
    prompt: np.ndarray,
    ref,
    seed: int,
    precision: dict[str, Path] | None = None,
    voice_ref=None,
) -> list[Rung]:
    """The gate's rungs on an open pipeline `pipeline`, against the reference record `ref` (the
    reference's free run on `prompt`: `reference_run`, computed once by the caller) and
    `voice_ref` (`reference_voice_run`, likewise; None leaves the voiced row out)."""
    from conversion.core.runtime.isolated_session import IsolatedSession

    config = loaded.config
    frames = GATE_FRAMES[config.name]
    codec_cfg = loaded.codec_config
    # the codec reference reads the snapshot's file itself (codec/reference.py), not the
    # port's loaded modules
    codec = CR.read_state(loaded.folder / config.codec_filename)

    voiced = []
    if voice_ref is not None:
        codes, text = voice_case(config, seed)
        voice = Voice(codes=codes.astype(np.int32), text=text)
        voiced_prompt = pipeline.prompt(GATE_TEXT, voice, VOICE_FRAMES)
        name = "ar[fp32].teacher_forced_logits[voice]"
        voiced.append(
            teacher_forced_logits_rung(pipeline.session, voiced_prompt, config, voice_ref, name)
        )

    def build(text, codes, ref_text):  # the bundle host's prompt builder, both templates
        voice = None if codes is None else Voice(codes=codes.astype(np.int32), text=ref_text)
        return pipeline.prompt(text, voice, frames)

    rungs = [
        *prompt_rungs(build, loaded.tokenizer, config, GATE_TEXT, seed),
        *sampler_rungs(seed, config=config),
        teacher_forced_rung(loaded.lm, pipeline.session, prompt, config, frames, seed, ref),
        teacher_forced_logits_rung(pipeline.session, prompt, config, ref),
        ras_windows_rung(pipeline.session, prompt, config, ref),
        *voiced,
        free_run_rung(loaded.lm, pipeline.session, prompt, config, frames, seed, ref),
        # the codes as the fast head can draw them: over its `codebook_size` rows
        codec_rung(pipeline.session, codec, codec_cfg, seed, head_rows=config.codebook_size),
        *stream_vs_whole_rungs(
            pipeline.session, codec, codec_cfg, seed, head_rows=config.codebook_size
        ),
    ]
    if "encoder" in pipeline.graphs:
        rungs += encoder_rungs(pipeline.session, codec, codec_cfg, seed)
    if precision:

        def side(dtype: str) -> IsolatedSession:
            return IsolatedSession(precision[dtype])

        rungs += precision_rungs(side, prompt, config, ref, tuple(precision))
    return rungs


def run_gate(
    loaded: Loaded,
    bundle: Path,
    seed: int,
    stop_on_fail: bool = False,
    json_path: Path | None = None,
    markdown: Path | None = None,
    precision: dict[str, Path] | None = None,
) -> int:
    """The reference and the bundle on the gate's utterance; `precision` ({dtype: bundle}) adds
    the exported-precision rows (each side bundle in its own child process, opened in turn)."""
    from gates.report import emit

    from ..pipeline import Audio8Pipeline

    config = loaded.config
    frames = GATE_FRAMES[config.name]
    with Audio8Pipeline(bundle, isolate=True) as pipeline:
        prompt = gate_prompt(pipeline, config)
        print(
            f"audio8_tts gate: {GATE_TEXT!r}, prompt {prompt.shape[1]} columns, {frames} frames",
            file=sys.stderr,
        )
        ref = reference_run(loaded.lm, reference_prompt(loaded), frames, seed)
        voice_ref = reference_voice_run(loaded, seed)
        rungs = ladder_rungs(loaded, pipeline, prompt, ref, seed, precision, voice_ref)
        report = run_ladder("audio8_tts", rungs, stop_on_fail=stop_on_fail)
    emit(report, json_path, markdown)
    return 0 if report.passed else 1
