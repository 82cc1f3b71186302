"""The Python side of VoxportEndToEndTests' Chatterbox Turbo case, through the real Core AI runtime.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/chatterbox_turbo_case.py make OUT

`make` reuses the whole reduced random-weight bundle (`voxport export chatterbox_turbo --config
reduced --weights random`, weights seed 0: bundles/chatterbox_turbo-fp32-reduced-seed0, exported
there first when missing or stale), speaks TEXT through the Python pipeline
(`TurboPipeline.speak`, what `voxport speak chatterbox_turbo TEXT --seed SEED` runs) and writes
into OUT (the bundle's path goes to stdout, one line, as soon as it is current, so a worker may
start on it while this runs): the files s3gen_case.py names (T3's uniforms [6563] per draw;
the speech tokens with the silence tail; the flow's noise drawn again from (SEED, i, 1)) and
BAD_TEXTS with the front end's error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import s3gen_case

from conversion.chatterbox_turbo.pipeline import ChunkDraws, SpeakOptions, TurboPipeline
from conversion.chatterbox_turbo.port import PORT

# Lower case, an ellipsis and a semicolon (Turbo's punc_norm capitalises and keeps both): 28
# GPT-2 ids together, past the reduced text budget of 24, so the front end makes two chunks.
TEXT = (
    "hello there, how are you today... It is a quiet evening by the sea; this is a test of the "
    "split into two chunks!"
)
SEED = 3
BAD_TEXTS = ("", "  \n\t ")


def bundle_path() -> Path:
    return s3gen_case.reduced_bundle(PORT)


def chunk_draws(kb: TurboPipeline, result: Any, index: int) -> dict:
    """Chunk `index`'s draws; the flow's noise drawn again and checked against its first state."""
    frames = kb.noise_frames(kb.default_voice, result.speech_tokens.size)
    noise = np.random.default_rng([SEED, index, 1]).standard_normal((1, 80, frames), np.float32)
    if not np.array_equal(noise, result.flow.xs[0]):
        raise SystemExit(f"chunk {index}: the flow started from other noise")
    return s3gen_case.chunk_draws(kb, result, index, SEED, ChunkDraws, noise)


def make(out: Path, stdout: Any) -> None:
    s3gen_case.make(
        out, stdout, bundle_path(), TurboPipeline, SpeakOptions(seed=SEED), TEXT, SEED,
        BAD_TEXTS, chunk_draws,
    )  # fmt: skip


if __name__ == "__main__":
    s3gen_case.main(make)
