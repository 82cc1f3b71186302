"""The Python host's own time per audio second over stand-in graphs (the Swift host's figure's
counterpart; `models/audio8_tts/README.md`, "On device").

    .venv/bin/python -m conversion.audio8_tts.host_timing [REPEATS]

Runs `Audio8Pipeline.speak` on the Swift fixtures' two cases (reduced configuration, codec window
8, the same seeded stand-in session) and subtracts the time spent inside graph calls, so what is
left is the host: text split and prompt, uniforms, the frame loop's bookkeeping, codec windows.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from conversion.core.runtime.session import StandInSession

from . import swift_fixtures as fx
from .pipeline import SpeakOptions
from .voice import Voice, transcript_ids


class _Timed(StandInSession):
    def __init__(self, session) -> None:
        self.session, self.seconds = session, 0.0
        self.manifest = session.manifest

    def reset_state(self, graph: str, state: str = "default") -> None:
        self.session.reset_state(graph, state)

    def run(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.session.run(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


def host_ms_per_audio_second(name: str, repeats: int = 5) -> float:
    """Median over `repeats` of (wall - graph calls) / audio seconds for one fixture case."""
    text, with_voice, stream, eos_steps = fx.PIPELINES[name]
    tokenizer = fx.stand_in_tokenizer()
    voice = None
    if with_voice:
        ref = "A short clip, said slowly."
        voice = Voice(fx.formula_codes(5, k=9), ref, "formula", transcript_ids(tokenizer, ref))
    figures = []
    for _ in range(repeats):
        timed = _Timed(fx._RecordingSession(np.random.default_rng(len(name)), eos_steps))
        pipeline = fx._bundle(timed, tokenizer)
        t0 = time.perf_counter()
        options = SpeakOptions(voice, seed=fx.SEED, max_frames=fx.MAX_FRAMES, stream=stream)
        result = pipeline.speak(text, options)
        host = time.perf_counter() - t0 - timed.seconds
        figures.append(1000 * host / (result.audio.size / pipeline.codec_config.sample_rate))
    return statistics.median(figures)


def main(argv: list[str]) -> int:
    repeats = int(argv[0]) if argv else 5
    for name in fx.PIPELINES:
        ms = host_ms_per_audio_second(name, repeats)
        print(f"audio8 python host ({name}): {ms:.1f} ms per audio second")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
