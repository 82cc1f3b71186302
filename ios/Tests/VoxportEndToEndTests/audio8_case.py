"""The Python side of VoxportEndToEndTests' Audio8 case, through the real Core AI runtime.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/audio8_case.py make OUT

`make` reuses the reduced random-weight bundle (weights seed 0) with the graphs the Swift host
runs — `ar` (prefill + frame) and `codec`, the encoder left out (a voice needs it, this case
does not) — at its default path (bundles/audio8_tts-fp32-reduced-seed0-host), exported there first
when missing or stale. It speaks SENTENCE as `voxport speak audio8_tts SENTENCE --seed SEED
--stream -o speak.wav` does once its bundle is open (the CLI's own options, its `WavSink`
writing the 16-bit wav; the CLI itself refuses this graph subset as a --bundle), decodes the same
codes whole, asks the front end about BAD_TEXTS, and writes into OUT:

    case.json       bundle, text, seed, the frame budget the CLI's options gave, each piece's
                    text and token ids (what the Swift host takes, as `voxport tokenize
                    audio8_tts` gives them), frame codes [10, T] (row-major), semantic draws,
                    whether eos was drawn, prefill calls; the codec window; the streamed chunks'
                    lengths; both audios' lengths; and what the front end says to each bad text
                    (its error's wording, or the pieces it makes)
    speak.wav       the CLI's wav (PCM_16)
    whole.f32       the whole-decoded audio, float32 little-endian
    stream.f32      the streamed audio (every emitted chunk, joined), float32 little-endian
    long_voice.npz  a voice whose reference clip leaves no room for any text (a bad case)
"""

from __future__ import annotations

import json
import sys
import time
from argparse import Namespace
from pathlib import Path

import numpy as np

from conversion.audio8_tts import cli
from conversion.audio8_tts.pipeline import Audio8Pipeline
from conversion.audio8_tts.port import PORT
from conversion.audio8_tts.prompt import clean_text
from conversion.audio8_tts.voice import Voice, transcript_ids
from conversion.core.errors import UserError
from conversion.core.host.audio_io import WavSink
from conversion.core.speak import SpeakListener
from conversion.core.threads import pin_torch_threads

REPO = Path(__file__).resolve().parents[3]
# Two pieces (Audio8 keeps sentences apart); with SEED the first draws 39 frames (two codec
# windows of the reduced 32) and the second 13, each ending on its own eos.
SENTENCE = "Hello there. How are you?"
SEED = 1
GRAPHS = ("ar", "codec")
VARIANT = "host"
# Empty, only spaces, characters outside the tokenizer's words, one word past the KV rows
# (split inside the word); then one that asks for more frames than the rows hold, and one whose
# voice leaves no room: (text, frames, voice file or None).
LONG_WORD = "Supercalifragilisticexpialidocious" * 40
BAD_TEXTS = (
    ("", None, None),
    ("  \n\t ", None, None),
    ("中文 ☃ Ж", None, None),
    (LONG_WORD, None, None),
    ("Hello there.", 512, None),
    ("Hello there.", None, "long_voice.npz"),
)
LONG_VOICE_FRAMES = 400  # past the 512 rows less the 128-frame budget


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


def speak_as_the_cli(ab: Audio8Pipeline, wav: Path):
    """`voxport speak audio8_tts SENTENCE --seed SEED --stream -o wav` past its bundle: the
    result, the chunks handed out and the frame budget the pipeline used."""
    args = Namespace(seed=SEED, stream=True, ref=None, ref_text=None)
    folder, config = PORT.resolve("random", "reduced", 0)
    options = PORT.options_for_pipeline(cli.speak_options(args, config), ab, folder, config)
    budgets: list[int] = []
    split = ab.pieces

    def pieces(text, max_frames, voice=None):
        budgets.append(max_frames)
        return split(text, max_frames, voice)

    ab.pieces = pieces
    chunks: list[np.ndarray] = []

    class Both(SpeakListener):
        """The CLI's sink, and every streamed chunk kept for case.json."""

        def __init__(self, sink: WavSink) -> None:
            self.sink = sink

        def audio(self, piece: np.ndarray) -> None:
            chunks.append(piece)
            self.sink.audio(piece)

    try:
        with WavSink(wav, ab.sample_rate, options.stream, time.perf_counter()) as sink:
            result = ab.speak(SENTENCE, options, listener=Both(sink))
            sink.finish(result.audio)
    finally:
        del ab.pieces
    return result, chunks, budgets[0]


def front_end(ab: Audio8Pipeline, text: str, frames: int, voice: Voice | None) -> dict:
    """What the pipeline's front end says to `text`: its error's wording, or its pieces."""
    try:
        pieces = ab.pieces(text, frames, voice)
        ab.prompt(pieces[0], voice, frames)  # the budget check a piece's prompt makes
    except UserError as err:
        return {"error": str(err)}
    ids = [ab.tokenizer.encode(clean_text(p), add_special_tokens=False).ids for p in pieces]
    return {"pieces": [{"text": p, "ids": list(i)} for p, i in zip(pieces, ids, strict=True)]}


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundle, export_s = bundle_path()
    t0 = time.perf_counter()
    with Audio8Pipeline(bundle) as ab:
        stream, chunks, max_frames = speak_as_the_cli(ab, out / "speak.wav")
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
        text = "Hi."
        long_voice = Voice(
            np.zeros((ab.config.num_codebooks, LONG_VOICE_FRAMES), np.int32),
            text,
            "long",
            transcript_ids(ab.tokenizer, text),
        )
        long_voice.save(out / "long_voice.npz")
        bad = [
            {
                "text": t,
                "max_frames": frames,
                "voice": voice,
                **front_end(ab, t, frames or max_frames, long_voice if voice else None),
            }
            for t, frames, voice in BAD_TEXTS
        ]
    whole = np.concatenate(wholes).astype(np.float32)
    whole.astype("<f4").tofile(out / "whole.f32")
    stream.audio.astype("<f4").tofile(out / "stream.f32")
    case = {
        "bundle": str(bundle),
        "graphs": list(GRAPHS),
        "text": SENTENCE,
        "seed": SEED,
        "max_frames": max_frames,
        "codec_window": window,
        "pieces": pieces,
        "whole_samples": int(whole.size),
        "stream_samples": int(stream.audio.size),
        "stream_chunks": [int(c.size) for c in chunks],
        "bad": bad,
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
