"""The Python side of VoxportEndToEndTests' Audio8 case, through the real Core AI runtime.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/audio8_case.py make OUT

`make` reuses the reduced random-weight bundle (weights seed 0) with the graphs the Swift host
runs — `ar` (prefill + frame) and `codec`, the encoder left out (a voice needs it, this case
does not) — at its default path (bundles/audio8_tts-fp32-reduced-seed0-host), exported there first
when missing or stale. It speaks SENTENCE through the Python pipeline (Audio8Pipeline.speak) with
SEED and MAX_FRAMES, streamed, and decodes the same codes whole, and writes into OUT:

    case.json       bundle, text, seed, max frames, each piece's token ids (what the Swift host
                    takes, as `voxport tokenize audio8_tts` gives them), frame codes [10, T]
                    (row-major), semantic draws, whether eos was drawn, prefill calls; the
                    codec window; the streamed chunks' lengths; both audios' lengths
    whole.f32       the whole-decoded audio, float32 little-endian
    stream.f32      the streamed audio (every emitted chunk, joined), float32 little-endian
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from conversion.audio8_tts.pipeline import Audio8Pipeline, SpeakOptions
from conversion.audio8_tts.port import PORT
from conversion.audio8_tts.prompt import clean_text
from conversion.core.threads import pin_torch_threads

REPO = Path(__file__).resolve().parents[3]
SENTENCE = "Hello there."
SEED = 3
MAX_FRAMES = 40  # the reduced codec window is 32 frames: a stream spans two windows
GRAPHS = ("ar", "codec")
VARIANT = "host"


def bundle_path() -> tuple[Path, float]:
    """The bundle, and the seconds spent making it (0 when reused)."""
    t0 = time.perf_counter()
    folder, config = PORT.resolve("random", "reduced", 0)
    path = PORT.ensure_bundle(
        folder,
        config,
        "reduced",
        "fp32",
        path=REPO / PORT.bundle_path("reduced", "fp32", VARIANT, PORT.weights_tag(folder)),
        graphs=GRAPHS,
        variant=VARIANT,
    )
    return path, time.perf_counter() - t0


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundle, export_s = bundle_path()
    t0 = time.perf_counter()
    with Audio8Pipeline(bundle) as ab:
        chunks: list[np.ndarray] = []
        options = SpeakOptions(seed=SEED, max_frames=MAX_FRAMES, stream=True)
        stream = ab.speak(SENTENCE, options, on_audio=chunks.append)
        window = ab.codec_window
        pieces: list[dict] = []
        wholes: list[np.ndarray] = []
        for p in stream.pieces:
            # the whole path's decode over the same codes (speak(stream=False) is
            # generate + decode_whole; the codes do not depend on how audio is decoded)
            wav, report = ab.decode_whole(p.frames.codes)
            wholes.append(wav)
            ids = ab.tokenizer.encode(clean_text(p.text), add_special_tokens=False).ids
            pieces.append(
                {
                    "text": p.text,
                    "ids": list(ids),
                    "prompt_columns": p.prompt_columns,
                    "frames": int(p.frames.codes.shape[1]),
                    "codes": p.frames.codes.astype(int).reshape(-1).tolist(),
                    "semantics": [int(f.semantic) for f in p.frames.frames],
                    "finished": bool(p.frames.finished),
                    "prefill_calls": p.frames.prefill_calls,
                    "windows_whole": report.windows,
                    "windows_stream": p.decode.windows,
                }
            )
    whole = np.concatenate(wholes).astype(np.float32)
    whole.astype("<f4").tofile(out / "whole.f32")
    stream.audio.astype("<f4").tofile(out / "stream.f32")
    case = {
        "bundle": str(bundle),
        "graphs": list(GRAPHS),
        "text": SENTENCE,
        "seed": SEED,
        "max_frames": MAX_FRAMES,
        "codec_window": window,
        "pieces": pieces,
        "whole_samples": int(whole.size),
        "stream_samples": int(stream.audio.size),
        "stream_chunks": [int(c.size) for c in chunks],
        "export_s": export_s,
        "python_s": time.perf_counter() - t0,
    }
    (out / "case.json").write_text(json.dumps(case, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    pin_torch_threads()
    command, path = sys.argv[1], Path(sys.argv[2])
    if command != "make":
        raise SystemExit(f"usage: {sys.argv[0]} make OUT")
    make(path)
