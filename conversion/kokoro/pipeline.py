"""Text to speech over a Kokoro bundle: the host steps between the three graphs.

    chunk ids ─▶ predictor[T] ─▶ durations ─▶ alignment (host) ─▶ prosody[T, L] ─▶ F0
    F0 ─▶ harmonic source + STFT (host) ─▶ vocoder[L] ─▶ trim to L·600 ─▶ join ─▶ wav

Each graph runs at the smallest of its buckets that fits (the tables travel in the bundle's
manifest). Randomness (the SineGen phases and noise) is drawn on the host from a seed, or
given, so a run can replay the oracle's draws exactly.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conversion.core.errors import BucketOverflowError, UserError
from conversion.core.host.buckets import BucketTable, pad_to
from conversion.core.runtime.loaded_pipeline import LoadedPipeline
from conversion.core.runtime.workers import WorkerPool
from conversion.core.speak import SpeakListener, SpeakResult, WordTiming

from . import host
from .export import HOST_DATA
from .graphs import GRAPHS, function_name
from .host_files import read_bundle_voices
from .text.chunks import WordToken
from .text.timings import shifted, word_timings


@dataclass(frozen=True)
class SpeakOptions:
    """What `voxport speak kokoro` asks of a speak: a voice (a name, a pack file, or a blend
    `a:0.6,b:0.4`), the speaking rate, the draws' seed, folders holding more voice packs, and
    the G2P's out-of-vocabulary fallback (`g2p.FALLBACKS`; None: `g2p.selected_fallback()`)."""

    voice: str = "jf_alpha"
    speed: float = 1.0
    seed: int = 0
    voice_dirs: tuple[Path, ...] = ()
    fallback: str | None = None


@dataclass
class ChunkResult:
    audio: np.ndarray
    pred_dur: np.ndarray
    graph_ms: dict[str, float]
    host_ms: float
    # The chunk's G2P tokens (`Chunk.tokens`): what its words are timed over.
    tokens: tuple[WordToken, ...] = ()

    @property
    def words(self) -> list[WordTiming]:
        """Each word's time in this chunk's audio (the publisher's rule, `text/timings.py`)."""
        return word_timings(self.tokens, self.pred_dur)


def utterance_words(results: list[ChunkResult], gap_samples: int, sr: int) -> list[WordTiming]:
    """Every chunk's words placed in the joined audio (each chunk after the ones before it and
    the pause between)."""
    words: list[WordTiming] = []
    at = 0
    for k, r in enumerate(results):
        if k:
            at += gap_samples
        words += shifted(r.words, at / sr)
        at += r.audio.size
    return words


class KokoroPipeline(LoadedPipeline):
    """A loaded Kokoro bundle: one timed session over the three graphs, plus the host data."""

    model = "kokoro"
    sample_rate = host.SAMPLE_RATE

    def load_host(self) -> None:
        missing = [g for g in GRAPHS if g not in self.manifest.graphs]
        if missing:
            raise UserError(f"{self.path} lacks graph(s) {missing}: re-export it")
        self.tables = {g: BucketTable(self.manifest.graphs[g]["meta"]["buckets"]) for g in GRAPHS}
        with np.load(self.path / HOST_DATA) as data:
            self.source_weight = data["l_linear_weight"]
            self.source_bias = data["l_linear_bias"]
        # The bundle's own voices (None for a bundle exported before it carried them).
        self.voices = read_bundle_voices(self.path)

    def _run(self, graph: str, bucket, inputs: Mapping[str, np.ndarray], ms: dict | None) -> dict:
        t = time.perf_counter()
        # TimedSession widens an fp16 bundle's float16 outputs: the host works in fp32.
        out = self.session.run(graph, function_name(graph, bucket), inputs)
        if ms is not None:
            ms[graph] = ms.get(graph, 0.0) + (time.perf_counter() - t) * 1e3
        return out

    # One step per graph: real-length arrays in, padded to the bucket (the smallest that fits
    # unless one is given), real-length arrays out. The pipeline and the gate both call these.

    def predictor(
        self, ids: list[int], ref_s: np.ndarray, bucket=None, ms: dict | None = None
    ) -> dict[str, np.ndarray]:
        """duration [T] (before speed), d [1, T, 640], t_en [1, 512, T] for T ids."""
        n_tok = len(ids)
        bucket = bucket or self.tables["predictor"].select(T=n_tok)
        ids_b, n_tokens = host.padded_ids(ids, bucket["T"])
        out = self._run(
            "predictor", bucket, {"ids": ids_b, "ref_s": ref_s, "n_tokens": n_tokens}, ms
        )
        return {
            "duration": out["duration"][0, :n_tok],
            "d": out["d"][:, :n_tok],
            "t_en": out["t_en"][:, :, :n_tok],
        }

    def prosody(
        self,
        d: np.ndarray,
        t_en: np.ndarray,
        pred_dur: np.ndarray,
        ref_s: np.ndarray,
        bucket=None,
        ms: dict | None = None,
    ) -> dict[str, np.ndarray]:
        """asr [1, 512, L], F0 [1, 2L], N [1, 2L] for the L = sum(pred_dur) frames."""
        n_tok, frames = d.shape[1], int(np.sum(pred_dur))
        bucket = bucket or self.tables["prosody"].select(T=n_tok, L=frames)
        aln, _ = host.padded_alignment(pred_dur, bucket["T"], bucket["L"])
        out = self._run(
            "prosody",
            bucket,
            {
                "d": pad_to(d, bucket["T"], axis=1),
                "t_en": pad_to(t_en, bucket["T"], axis=2),
                "aln": aln,
                "ref_s": ref_s,
                "n_frames": np.array([frames], np.int32),
            },
            ms,
        )
        return {
            "asr": out["asr"][:, :, :frames],
            "F0": out["F0"][:, : 2 * frames],
            "N": out["N"][:, : 2 * frames],
        }

    def vocoder(
        self,
        asr: np.ndarray,
        F0: np.ndarray,  # noqa: N803 (the publisher's name)
        N: np.ndarray,  # noqa: N803
        har: np.ndarray,
        ref_s: np.ndarray,
        bucket=None,
        ms: dict | None = None,
    ) -> np.ndarray:
        """The waveform's real L·600 samples, float32 1-D."""
        frames = asr.shape[-1]
        bucket = bucket or self.tables["vocoder"].select(L=frames)
        lb = bucket["L"]
        out = self._run(
            "vocoder",
            bucket,
            {
                "asr": pad_to(asr, lb, axis=2),
                "F0": pad_to(F0, 2 * lb, axis=1),
                "N": pad_to(N, 2 * lb, axis=1),
                "har": host.pad_har(har, lb),
                "ref_s": ref_s,
                "n_frames": np.array([frames], np.int32),
            },
            ms,
        )
        return host.trim_audio(out["waveform"], frames)

    def synthesize_ids(
        self,
        ids: list[int],
        ref_s: np.ndarray,
        speed: float = 1.0,
        seed: int = 0,
        draws: Mapping[str, np.ndarray] | None = None,
    ) -> ChunkResult:
        """One chunk (ids with their two pads) to audio; `draws` replays the source noise."""
        start = time.perf_counter()
        ms: dict[str, float] = {}
        ref_s = np.asarray(ref_s, np.float32).reshape(1, -1)
        pred = self.predictor(ids, ref_s, ms=ms)
        pred_dur = host.pred_durations(pred["duration"], speed)
        frames = int(pred_dur.sum())
        pros = self.prosody(pred["d"], pred["t_en"], pred_dur, ref_s, ms=ms)
        noise = draws if draws is not None else host.draw_source_noise(2 * frames, seed)
        har = host.harmonic_source(
            pros["F0"],
            self.source_weight,
            self.source_bias,
            noise["rand_ini"],
            noise["sine_noise"],
        )
        audio = self.vocoder(pros["asr"], pros["F0"], pros["N"], har, ref_s, ms=ms)
        total_ms = (time.perf_counter() - start) * 1e3
        return ChunkResult(
            audio=audio,
            pred_dur=pred_dur,
            graph_ms=ms,
            host_ms=total_ms - sum(ms.values()),
        )

    def chunks(self, text: str, fallback: str | None = None) -> list[host.Chunk]:
        """`text` split so every chunk fits this bundle's largest token bucket; words misaki's
        lexicon lacks read by `fallback` (`g2p.FALLBACKS`; None: the selected one)."""
        max_ids = self.tables["predictor"].limits()["T"]
        g2p = host.english_g2p(fallback)
        return host.text_to_chunks(text, g2p=g2p, max_ids=min(max_ids, host.MAX_IDS))

    def speak(
        self,
        text: str,
        options: SpeakOptions,
        *,
        listener: SpeakListener | None = None,
        pool: WorkerPool[KokoroPipeline] | None = None,
        chunks: list[host.Chunk] | None = None,
    ) -> SpeakResult:
        """Text to 24 kHz audio: chunks (sentences, clauses) synthesised and joined; the
        speak half's one signature (`conversion/core/speak.py`).

        `chunks` are `self.chunks(text)` when the caller already has them (G2P is not free).
        `pool` (pipelines over this same bundle) speaks chunks side by side: each chunk's draws
        come from `options.seed + i` alone, so the audio is the same for any number of workers.
        `listener.audio` gets the joined waveform piece by piece in order, as soon as each chunk
        is ready (pauses included): the pieces end to end are the returned audio.
        """
        listener = SpeakListener() if listener is None else listener
        chunks = self.chunks(text, options.fallback) if chunks is None else chunks
        pack = host.load_voice(options.voice, extra_dirs=options.voice_dirs, packs=self.voices)
        results: list[ChunkResult] = []
        gap = host.pause()

        def work(pipeline: KokoroPipeline, i: int, chunk: host.Chunk) -> list[ChunkResult]:
            pipeline.between_utterances()  # stateless graphs: any chunk boundary is a restart point
            return pipeline._speak_chunk(
                chunk, pack, options.speed, options.seed + i, options.fallback
            )

        def deliver(_i: int, parts: list[ChunkResult]) -> None:
            for part in parts:
                if results:  # join_audio's pause: between chunks, none at the ends
                    listener.audio(gap)
                listener.audio(part.audio)
                results.append(part)

        def label(i: int, _parts: list[ChunkResult]) -> str:
            return chunks[i].text[:40]

        self.speak_in_order(chunks, work, deliver, label, listener, pool)
        audio = host.join_audio([r.audio for r in results])
        words = utterance_words(results, gap.size, self.sample_rate)
        return SpeakResult(
            audio, self.sample_rate, results, f"{len(results)} chunk(s)", words=words
        )

    def _speak_chunk(
        self,
        chunk: host.Chunk,
        pack: np.ndarray,
        speed: float,
        seed: int,
        fallback: str | None = None,
    ) -> list[ChunkResult]:
        """One chunk; when its frames outgrow every bucket (slow speech, a small table) it
        is split again at half its ids — frames are only known after the predictor."""
        ref_s = host.ref_s_for(pack, chunk.n_phonemes)
        try:
            result = self.synthesize_ids(chunk.ids, ref_s, speed, seed)
            return [dataclasses.replace(result, tokens=chunk.tokens)]
        except BucketOverflowError:
            limit = max(3, len(chunk.ids) // 2)
            g2p = host.english_g2p(fallback)
            parts = host.text_to_chunks(chunk.text, g2p=g2p, max_ids=limit) if chunk.text else []
            if len(parts) < 2:
                raise
            out: list[ChunkResult] = []
            for j, part in enumerate(parts):
                out += self._speak_chunk(part, pack, speed, seed + 1000 * (j + 1), fallback)
            return out
