"""The Python side of VoxportEndToEndTests' Chatterbox Turbo case, through the real Core AI runtime.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/chatterbox_turbo_case.py make OUT

`make` reuses the whole reduced random-weight bundle (`voxport export chatterbox_turbo --config
reduced --weights random`, weights seed 0: bundles/chatterbox_turbo-fp32-reduced-seed0, exported
there first when missing or stale), speaks TEXT through the Python pipeline
(`TurboPipeline.speak`, what `voxport speak chatterbox_turbo TEXT --seed SEED` runs) and writes
into OUT (the bundle's path goes to stdout, one line, as soon as it is current, so a worker may
start on it while this runs):

    case.json       bundle, text, seed, each chunk's text (after punc_norm), ids, T3 tokens,
                    whether the stop token ended them, the speech tokens S3Gen got (the silence
                    tail included), its samples; and BAD_TEXTS with the front end's error
    chunk{i}.npz    chunk i's draws as `speak` made them from (SEED, i) (T3's uniforms, one
                    [6563] row per draw; the flow's noise; HiFT's phase and sine noise: the names
                    chatterbox_case.py uses), the Swift host replays them
    audio.f32       the utterance (every chunk's audio, joined), float32 little-endian
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from conversion.chatterbox_turbo.pipeline import ChunkDraws, SpeakOptions, TurboPipeline
from conversion.chatterbox_turbo.port import PORT
from conversion.core.errors import UserError
from conversion.core.threads import pin_torch_threads
from conversion.s3gen.hift import host as host_hift

# Lower case, an ellipsis and a semicolon (Turbo's punc_norm capitalises and keeps both): 28
# GPT-2 ids together, past the reduced text budget of 24, so the front end makes two chunks.
TEXT = (
    "hello there, how are you today... It is a quiet evening by the sea; this is a test of the "
    "split into two chunks!"
)
SEED = 3
BAD_TEXTS = ("", "  \n\t ")


def bundle_path() -> Path:
    folder, config = PORT.resolve("random", "reduced", 0)
    return PORT.ensure_bundle(folder, config, "reduced", "fp32").resolve()


def chunk_draws(kb: TurboPipeline, result, index: int) -> dict[str, np.ndarray]:
    """The draws `synthesize` made from (SEED, index), made again and checked against what the
    chunk used."""
    redraw = ChunkDraws.from_seed(SEED, index)
    uniforms = np.stack([redraw.uniforms(s) for s in range(result.t3.steps)])
    frames = kb.noise_frames(kb.default_voice, result.speech_tokens.size)
    noise = np.random.default_rng([SEED, index, 1]).standard_normal((1, 80, frames), np.float32)
    if not np.array_equal(noise, result.flow.xs[0]):
        raise SystemExit(f"chunk {index}: the flow started from other noise")
    hift = host_hift.draw_source_noise(result.hift.source.shape[-1], SEED * 1000 + index)
    if not np.array_equal(
        host_hift.harmonic_source(kb.arrays["hift"], result.hift.f0, hift), result.hift.source
    ):
        raise SystemExit(f"chunk {index}: HiFT's source was made from other draws")
    return {
        "uniforms": uniforms.astype(np.float32),
        "noise": noise,
        "phase": hift["phase"],
        "sine_noise": hift["sine_noise"],
    }


def front_end_error(kb: TurboPipeline, text: str) -> dict:
    try:
        kb.chunks(text)
    except UserError as err:
        return {"text": text, "error": str(err)}
    raise SystemExit(f"the front end took {text!r}")


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundle = bundle_path()
    print(bundle, file=OUT, flush=True)
    with TurboPipeline(bundle) as kb:
        chunks = kb.chunks(TEXT)
        spoken = kb.speak(TEXT, SpeakOptions(seed=SEED))
        results = spoken.pieces
        for i, r in enumerate(results):
            np.savez(out / f"chunk{i}.npz", **chunk_draws(kb, r, i))
        bad = [front_end_error(kb, t) for t in BAD_TEXTS]
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
