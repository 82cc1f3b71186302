"""What chatterbox_case.py and chatterbox_turbo_case.py share: speak TEXT through a model's
Python pipeline with SEED's draws and write what the Swift side replays and compares.

    case.json       bundle, text, seed, each chunk's text (after punc_norm), ids, T3 tokens,
                    whether the stop token ended them, the speech tokens S3Gen got, its samples;
                    and the bad texts with what the pipeline's front end says to each (its
                    error's wording, or the chunks it makes)
    chunk{i}.npz    chunk i's draws as `speak` made them from (SEED, i): T3's uniforms (one row
                    per draw), the flow's noise, HiFT's phase and sine noise
    audio.f32       the utterance (every chunk's audio, joined), float32 little-endian

The bundle's path goes to the protocol stdout first, one line, as soon as it is current, so a
worker may start on it while the rest runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from case_stdout import protocol_stdout

from conversion.core.errors import UserError
from conversion.core.threads import pin_torch_threads
from conversion.s3gen.hift import host as host_hift


def reduced_bundle(port: Any) -> Path:
    """The port's whole reduced random-weight bundle (weights seed 0, fp32), exported first when
    missing or stale."""
    folder, config = port.resolve("random", "reduced", 0)
    return port.ensure_bundle(folder, config, "reduced", "fp32").resolve()


def chunk_draws(
    kb: Any, result: Any, index: int, seed: int, chunk_draws_type: Any, noise: np.ndarray
) -> dict:
    """The draws `synthesize` made from (seed, index), made again and checked against what the
    chunk used (the flow's `noise` the caller's, made or checked its model's way)."""
    redraw = chunk_draws_type.from_seed(seed, index)
    uniforms = np.stack([redraw.uniforms(s) for s in range(result.t3.steps)])
    hift = host_hift.draw_source_noise(result.hift.source.shape[-1], seed * 1000 + index)
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


def front_end(kb: Any, text: str) -> dict:
    """What the pipeline's front end says to `text`: its error's wording, or its chunks."""
    try:
        chunks = kb.chunks(text)
    except UserError as err:
        return {"text": text, "error": str(err)}
    return {
        "text": text,
        "chunks": [{"text": c.text, "ids": [int(i) for i in c.ids]} for c in chunks],
    }


def make(
    out: Path,
    stdout: Any,
    bundle: Path,
    open_pipeline: Callable[[Path], Any],
    speak_options: Any,
    text: str,
    seed: int,
    bad_texts: tuple[str, ...],
    draws: Callable[[Any, Any, int], dict],
) -> None:
    """Speak `text` with `speak_options` (seeded `seed`) and write OUT's files; `draws(kb,
    result, i)` gives chunk i's."""
    out.mkdir(parents=True, exist_ok=True)
    print(bundle, file=stdout, flush=True)
    with open_pipeline(bundle) as kb:
        chunks = kb.chunks(text)
        spoken = kb.speak(text, speak_options)
        results = spoken.pieces
        for i, r in enumerate(results):
            np.savez(out / f"chunk{i}.npz", **draws(kb, r, i))
        bad = [front_end(kb, t) for t in bad_texts]
    spoken.audio.astype("<f4").tofile(out / "audio.f32")
    case = {
        "bundle": str(bundle),
        "text": text,
        "seed": seed,
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


def main(make_case: Callable[[Path, Any], None]) -> None:
    """`SCRIPT make OUT`: `make_case(OUT, the protocol stdout)`."""
    stdout = protocol_stdout()
    pin_torch_threads()
    command, path = sys.argv[1], Path(sys.argv[2])
    if command != "make":
        raise SystemExit(f"unknown command {command!r}: make OUT")
    make_case(path, stdout)
