"""The Python side of VoxportEndToEndTests' Chatterbox case, through the real Core AI runtime.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/chatterbox_case.py make OUT

`make` reuses the whole reduced random-weight bundle (`--weights random --config reduced`,
weights seed 0, every graph: bundles/chatterbox-fp32-reduced-seed0, the one
coreai_parity_case.py uses, exported there first when missing or stale), speaks TEXT (two short
sentences, two chunks) through the Python pipeline (`ChatterboxPipeline.speak`, what
`voxport speak chatterbox TEXT --seed SEED` runs) and writes into OUT (the bundle's path goes to
stdout, one line, as soon as it is current, so a worker may start on it while this runs): the
files s3gen_case.py names (T3's uniforms [8194] per draw; the CFM noise as the chunk used it;
the names and redraws of conversion/chatterbox/swift_fixtures.py), BAD_TEXTS with what the
pipeline's front end says to each (its error's wording, or the chunks it makes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import s3gen_case

from conversion.chatterbox.pipeline import ChatterboxPipeline, ChunkDraws, SpeakOptions
from conversion.chatterbox.port import PORT

REPO = Path(__file__).resolve().parents[3]
# Lower case and an ellipsis: punc_norm capitalises and rewrites them; 65 ids together, past the
# reduced text budget of 60, so the front end splits them into two chunks.
TEXT = "hello there, how are you today... It is a test of two sentences!"
SEED = 3
# Empty, only spaces, characters the tokenizer does not know, one word longer than the budget.
BAD_TEXTS = ("", "  \n\t ", "中文 ☃ Ж", "Supercalifragilisticexpialidocious" * 3)


def bundle_path() -> Path:
    return s3gen_case.reduced_bundle(PORT)


def chunk_draws(kb: ChatterboxPipeline, result: Any, index: int) -> dict:
    """Chunk `index`'s draws; the CFM noise is the flow's first state."""
    return s3gen_case.chunk_draws(kb, result, index, SEED, ChunkDraws, result.flow.xs[0])


def make(out: Path, stdout: Any) -> None:
    s3gen_case.make(
        out, stdout, bundle_path(), ChatterboxPipeline, SpeakOptions(seed=SEED), TEXT, SEED,
        BAD_TEXTS, chunk_draws,
    )  # fmt: skip


if __name__ == "__main__":
    s3gen_case.main(make)
