"""Audio8's gate ladder: the fused frame graph and the codec against the plain-torch reference.

The reference (`reference.py`) is our fp32 re-author of the publisher's ArkttsModel, sampler
and generate loop (no publisher weights or code run here: the snapshot carries neither; a rung
comparing reference and publisher belongs to a snapshot that does). Rungs (gate_rungs.py):

1. the graph's sampler vs the NumPy sampler on random logits, same uniforms: 20/20, 1000/1000;
2. frames teacher-forced on the reference's columns with its uniforms: draw agreement ≥ 99 %,
   each miss listed with its Gumbel margin;
3. free run with the same uniforms: identical code sequences (fp32);
4. one codec window through the runtime vs the eager codec: cos ≥ 0.9999; streamed decode vs
   one-shot on the first window;
5. the precision table per AR (fp32 / fp16 / int8; eager simulation: coreai-opt cannot quantize
   one AR of a fused graph), gated on the rows in `gate_rungs.PRECISION_MIN`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gates.ladder import run_ladder

from . import gate_rungs as GR
from .weights import Loaded

GATE_TEXT = "Hello from voxport."
GATE_FRAMES = {"reduced": 12, "published": 24}


def run_gate(
    loaded: Loaded,
    bundle: Path,
    seed: int,
    stop_on_fail: bool = False,
    json_path: Path | None = None,
    markdown: Path | None = None,
) -> int:
    """The reference and the bundle on the gate's utterance: the ladder, the precision table."""
    from gates.report import emit

    from .pipeline import Audio8Bundle

    config = loaded.config
    frames = GATE_FRAMES[config.name]
    with Audio8Bundle(bundle, isolate=True) as ab:
        prompt = ab.prompt(GATE_TEXT, None, frames)
        print(
            f"audio8_tts gate: {GATE_TEXT!r}, prompt {prompt.shape[1]} columns, {frames} frames",
            file=sys.stderr,
        )
        ref = GR.reference_run(loaded.lm, prompt, frames, seed)
        table = GR.precision_table(loaded.lm, prompt, config, frames, seed, ref=ref)
        rungs = [
            *GR.sampler_rungs(seed),
            GR.teacher_forced_rung(loaded.lm, ab.session, prompt, config, frames, seed, ref),
            GR.free_run_rung(loaded.lm, ab.session, prompt, config, frames, seed, ref),
            GR.codec_rung(ab.session, loaded.codec, loaded.codec_config, seed),
            GR.stream_vs_whole_rung(ab.session, loaded.codec, loaded.codec_config, seed),
            *GR.precision_rungs(loaded.lm, prompt, config, frames, seed, ref, table),
        ]
        report = run_ladder("audio8_tts", rungs, stop_on_fail=stop_on_fail)
    markdown_table = GR.format_table(table)
    print(f"precision table ({GR.TABLE_LABEL}):\n{markdown_table}")
    emit(report, json_path, markdown)
    if markdown:
        with open(markdown, "a") as f:
            f.write(f"\nPrecision per AR ({GR.TABLE_LABEL}):\n\n{markdown_table}")
    return 0 if report.passed else 1
