"""The Python side of VoxportEndToEndTests' Kokoro case, through the real Core AI runtime.

    .venv/bin/python ios/Tests/VoxportEndToEndTests/kokoro_case.py make OUT
    .venv/bin/python ios/Tests/VoxportEndToEndTests/kokoro_case.py wer WAV

`make` reuses the reduced real-weight bundle at its default path (bundles/kokoro-fp32-reduced,
exported there first when missing or stale, as `voxport speak` would), speaks SENTENCE through
the Python pipeline (KokoroPipeline; words in no lexicon read by the letter rules, as the Swift
KokoroSpeaker reads them from the bundle's own g2p/) and writes into OUT:

    case.json       bundle, text, voice, each chunk's text / phonemes / ids / seed, the Python
                    audio's length, transcript and WER, and `words`: each word's [text, start,
                    end] in seconds as `voxport speak kokoro --timings` writes them
                    (`pipeline.utterance_words` over the chunks' durations and tokens)
    noise{i}.npz    chunk i's source draws (rand_ini, sine_noise), written first (then one JSON
                    line on stdout: bundle and chunks): the Swift host takes them as its
                    SourceNoise, so both hosts feed the vocoder the same noise
    folded.f32      the joined Python audio, float32 little-endian, with the source's -π phases
                    folded to +π (the sign of π in the STFT's first, exactly real frame is a
                    rounding coin flip: see the Swift HarmonicSource.foldingNegativePi; unfolded,
                    the two hosts differed by 3.2e-4 of the peak on this sentence)

`wer` prints {"transcript", "wer"} of a wav against SENTENCE through gates.asr (Whisper), the
same ASR the gates use.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import soundfile as sf
from case_stdout import protocol_stdout

from conversion.core.threads import pin_torch_threads
from conversion.kokoro import host, source
from conversion.kokoro.pipeline import ChunkResult, KokoroPipeline, utterance_words
from conversion.kokoro.port import PORT
from gates import asr

REPO = Path(__file__).resolve().parents[3]
# Two chunks, so a word timing is also placed after a chunk and the pause between.
SENTENCE = "Hello there. Hi!"
VOICE = "jf_alpha"


def bundle_path() -> Path:
    folder, config = PORT.resolve(None, "reduced", 0)
    return PORT.ensure_bundle(
        folder, config, "reduced", "fp32", path=REPO / PORT.bundle_path("reduced", "fp32")
    )


def folded_spectrum(src: np.ndarray, config: source.SourceConfig = source.PUBLISHED) -> np.ndarray:
    """`source.source_spectrum` with every float32 phase of exactly -π set to +π."""
    har = _SPECTRUM(src, config)
    phase = har[:, config.bins :]
    phase[phase == np.float32(-np.pi)] = np.float32(np.pi)
    return har


_SPECTRUM = source.source_spectrum


def draw_first(kb: KokoroPipeline, chunks: list, pack: np.ndarray, out: Path) -> None:
    """Each chunk's source draws, saved before the pipeline runs: they depend only on the frames
    (the predictor's durations) and the seed, so the Swift side can start its own vocoder calls
    while the Python pipeline makes its reference (two cores, two processes)."""
    for i, chunk in enumerate(chunks):
        ref_s = np.asarray(host.ref_s_for(pack, chunk.n_phonemes), np.float32).reshape(1, -1)
        frames = int(host.pred_durations(kb.predictor(chunk.ids, ref_s)["duration"], 1.0).sum())
        d = host.draw_source_noise(2 * frames, i)
        np.savez(out / f"noise{i}.npz", rand_ini=d["rand_ini"], sine_noise=d["sine_noise"])


def speak_chunks(
    kb: KokoroPipeline, chunks: list, pack: np.ndarray, out: Path
) -> tuple[np.ndarray, list[ChunkResult]]:
    """The chunks through the pipeline, chunk i with seed i; its draws must be the saved ones.
    Also each chunk's result with its tokens (what its words are timed over)."""
    audios, results = [], []
    for i, chunk in enumerate(chunks):
        ref_s = host.ref_s_for(pack, chunk.n_phonemes)
        draws: dict = {}
        saved = host.draw_source_noise

        def recording(frames: int, seed: int, draw=saved, draws=draws) -> dict:
            draws.update(draw(frames, seed))
            return draws

        host.draw_source_noise = recording
        try:
            result = kb.synthesize_ids(chunk.ids, ref_s, seed=i)
            results.append(dataclasses.replace(result, tokens=chunk.tokens))
            audios.append(result.audio)
        finally:
            host.draw_source_noise = saved
        with np.load(out / f"noise{i}.npz") as saved_draws:
            for name in ("rand_ini", "sine_noise"):
                if not np.array_equal(saved_draws[name], draws[name]):
                    raise SystemExit(f"chunk {i}: the pipeline drew other {name} than draw_first")
    return host.join_audio(audios).astype("<f4"), results


def _chunks_json(chunks: list) -> list[dict]:
    return [
        {"text": c.text, "phonemes": c.phonemes, "ids": list(c.ids), "seed": i}
        for i, c in enumerate(chunks)
    ]


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundle = bundle_path()
    with KokoroPipeline(bundle) as kb:
        chunks = kb.chunks(SENTENCE, fallback="rules")
        pack = host.load_voice(VOICE, packs=kb.voices)
        draw_first(kb, chunks, pack, out)
        # One line on stdout: what the Swift side needs to start while the reference is made.
        early = {"bundle": str(bundle), "chunks": _chunks_json(chunks)}
        print(json.dumps(early, ensure_ascii=False), file=OUT, flush=True)
        source.source_spectrum = folded_spectrum
        try:
            folded, results = speak_chunks(kb, chunks, pack, out)
        finally:
            source.source_spectrum = _SPECTRUM
    folded.tofile(out / "folded.f32")
    transcript = asr.transcribe(folded, host.SAMPLE_RATE)
    case = {
        "bundle": str(bundle),
        "text": SENTENCE,
        "voice": VOICE,
        "chunks": _chunks_json(chunks),
        "samples": int(folded.size),
        "transcript": transcript,
        "wer": asr.word_error_rate(SENTENCE, transcript),
        "words": [
            [w.text, w.start, w.end]
            for w in utterance_words(results, host.pause().size, host.SAMPLE_RATE)
        ],
    }
    (out / "case.json").write_text(json.dumps(case, ensure_ascii=False, indent=1) + "\n")


def wer(wav: Path) -> None:
    audio, sr = sf.read(wav, dtype="float32")
    transcript = asr.transcribe(audio, sr)
    print(
        json.dumps({"transcript": transcript, "wer": asr.word_error_rate(SENTENCE, transcript)}),
        file=OUT,
    )


if __name__ == "__main__":
    OUT = protocol_stdout()
    pin_torch_threads()
    command, path = sys.argv[1], Path(sys.argv[2])
    make(path) if command == "make" else wer(path)
