"""The Python side of VoxportEndToEndTests' Chatterbox case, through the real Core AI runtime.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/chatterbox_case.py make OUT

`make` reuses the whole reduced random-weight bundle (`--weights random --config reduced`,
weights seed 0, every graph: bundles/chatterbox-fp32-reduced-seed0, the one
coreai_parity_case.py uses, exported there first when missing or stale), speaks TEXT (two short
sentences, two chunks) through the Python pipeline (`ChatterboxPipeline.speak`, what
`voxport speak chatterbox TEXT --seed SEED` runs) and writes into OUT (the bundle's path goes to
stdout, one line, as soon as it is current, so a worker may start on it while this runs):

    case.json       bundle, text, seed, each chunk's text (after punc_norm), ids, T3 tokens,
                    whether the stop token ended them, the speech tokens S3Gen got, its samples;
                    and BAD_TEXTS with what the pipeline's front end says to each (its error's
                    wording, or the chunks it makes)
    chunk{i}.npz    chunk i's draws as `speak` made them from the seed (T3's uniforms, one
                    [8194] row per draw; the CFM noise; HiFT's phase and sine noise: the names
                    and redraws of conversion/chatterbox/swift_fixtures.py), the Swift host
                    replays them
    audio.f32       the utterance (every chunk's audio, joined), float32 little-endian
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from conversion.chatterbox.pipeline import ChatterboxPipeline, ChunkDraws, SpeakOptions
from conversion.chatterbox.port import PORT
from conversion.core.errors import UserError
from conversion.core.threads import pin_torch_threads
from conversion.s3gen.hift import host as host_hift

REPO = Path(__file__).resolve().parents[3]
# Lower case and an ellipsis: punc_norm capitalises and rewrites them; 65 ids together, past the
# reduced text budget of 60, so the front end splits them into two chunks.
TEXT = "hello there, how are you today... It is a test of two sentences!"
SEED = 3
# Empty, only spaces, characters the tokenizer does not know, one word longer than the budget.
BAD_TEXTS = ("", "  \n\t ", "中文 ☃ Ж", "Supercalifragilisticexpialidocious" * 3)


def bundle_path() -> Path:
    folder, config = PORT.resolve("random", "reduced", 0)
    return PORT.ensure_bundle(folder, config, "reduced", "fp32").resolve()


def chunk_draws(kb: ChatterboxPipeline, result, index: int) -> dict[str, np.ndarray]:
    """The draws `synthesize` made from (SEED, index), made again the way the Swift fixtures'
    writer makes them, and checked against what the chunk used."""
    redraw = ChunkDraws.from_seed(SEED, index)
    uniforms = np.stack([redraw.uniforms(s) for s in range(result.t3.steps)])
    hift = host_hift.draw_source_noise(result.hift.source.shape[-1], SEED * 1000 + index)
    if not np.array_equal(
        host_hift.harmonic_source(kb.arrays["hift"], result.hift.f0, hift), result.hift.source
    ):
        raise SystemExit(f"chunk {index}: HiFT's source was made from other draws")
    return {
        "uniforms": uniforms.astype(np.float32),
        "noise": result.flow.xs[0],
        "phase": hift["phase"],
        "sine_noise": hift["sine_noise"],
    }


def front_end(kb: ChatterboxPipeline, text: str) -> dict:
    """What the pipeline's front end says to `text`: its error's wording, or its chunks."""
    try:
        chunks = kb.chunks(text)
    except UserError as err:
        return {"text": text, "error": str(err)}
    return {
        "text": text,
        "chunks": [{"text": c.text, "ids": [int(i) for i in c.ids]} for c in chunks],
    }


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundle = bundle_path()
    print(bundle, file=OUT, flush=True)
    with ChatterboxPipeline(bundle) as kb:
        chunks = kb.chunks(TEXT)
        spoken = kb.speak(TEXT, SpeakOptions(seed=SEED))
        results = spoken.pieces
        for i, r in enumerate(results):
            np.savez(out / f"chunk{i}.npz", **chunk_draws(kb, r, i))
        bad = [front_end(kb, t) for t in BAD_TEXTS]
    spoken.audio.astype("<f4").tofile(out / "audio.f32")
    case = {
        "bundle": str(bundle),
        "text": TEXT,
        "seed": SEED,
        "chunks": [
            {
                "text": r.text,
                "ids": [int(i) for i in c.ids],
                "tokens": [int(t) for t in r.t3.tokens],
                "stopped": bool(r.t3.stopped),
                "speech_tokens": [int(t) for t in r.speech_tokens],
                "samples": int(r.wav.size),
            }
            for c, r in zip(chunks, results, strict=True)
        ],
        "samples": int(spoken.audio.size),
        "bad": bad,
    }
    (out / "case.json").write_text(json.dumps(case, ensure_ascii=False, indent=1) + "\n")


def protocol_stdout():
    """A file on the real stdout for this script's own lines; fd 1 itself then goes to stderr,
    so what the converter and the runtime print (Python or C) never mixes into them."""
    real = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    return real


if __name__ == "__main__":
    OUT = protocol_stdout()
    pin_torch_threads()
    command, path = sys.argv[1], Path(sys.argv[2])
    if command != "make":
        raise SystemExit(f"unknown command {command!r}: make OUT")
    make(path)
