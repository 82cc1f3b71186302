"""The Python side of VoxportEndToEndTests' Chatterbox case, through the real Core AI runtime.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/chatterbox_case.py make OUT

`make` reuses the reduced random-weight T3 bundle (`--weights random --config reduced`, weights
seed 0, the `t3` graph only: the port's graph subset at its default path,
bundles/chatterbox-fp32-reduced-seed0-t3, exported there first when missing or stale), tokenizes
SENTENCE, runs its first chunk's T3 loop through the Python pipeline (ChatterboxPipeline.t3) with
uniforms it records as they are drawn, and writes into OUT (the bundle's path goes to stdout,
one line, as soon as it is current, so a worker may start on it while this runs):

    case.json      bundle, text, the chunk's text ids, T3's tokens, whether the stop token
                   ended them, the speech tokens S3Gen would get
    uniforms.npy   T3's uniforms, one [8194] row per draw (float32): the Swift host replays them
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from conversion.chatterbox.pipeline import ChatterboxPipeline, SpeakOptions, speech_tokens_for_s3gen
from conversion.chatterbox.port import PORT
from conversion.chatterbox.t3.graphs import T3_VOCAB
from conversion.core.threads import pin_torch_threads

REPO = Path(__file__).resolve().parents[3]
SENTENCE = "Hello there, this is a test."
SEED = 3
GRAPHS = ("t3",)
VARIANT = "t3"


def bundle_path() -> Path:
    folder, config = PORT.resolve("random", "reduced", 0)
    path = REPO / PORT.bundle_path("reduced", "fp32", VARIANT, PORT.weights_tag(folder))
    return PORT.ensure_bundle(
        folder, config, "reduced", "fp32", path=path, graphs=GRAPHS, variant=VARIANT
    )


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundle = bundle_path()
    print(bundle, file=OUT, flush=True)
    rng = np.random.default_rng(SEED)
    rows: list[np.ndarray] = []

    def recording(_step: int) -> np.ndarray:
        rows.append(rng.random(T3_VOCAB, dtype=np.float32))
        return rows[-1]

    with ChatterboxPipeline(bundle) as kb:
        voice = kb.default_voice
        if voice is None:
            raise SystemExit(f"{bundle} has no default voice")
        chunk = kb.chunks(SENTENCE)[0]
        result = kb.t3(chunk.ids, voice, SpeakOptions(), recording)
    np.save(out / "uniforms.npy", np.stack(rows).astype(np.float32))
    case = {
        "bundle": str(bundle),
        "text": chunk.text,
        "text_ids": [int(i) for i in chunk.ids],
        "seed": SEED,
        "tokens": [int(t) for t in result.tokens],
        "stopped": bool(result.stopped),
        "speech_tokens": [int(t) for t in speech_tokens_for_s3gen(result.tokens)],
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
