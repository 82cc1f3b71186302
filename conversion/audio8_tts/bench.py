"""`voxport bench audio8_tts`: one utterance through the bundle (streamed) and the reference.

Runtime calls per frame (the fused graph's point: 1), frame ms, prefill ms per window, codec
window ms, time to first audio, RTF, the reference's eager ms per frame, peak RSS.
"""

from __future__ import annotations

import resource
import statistics
import time
from pathlib import Path

from conversion.core.profile import add_profile, profile_calls
from conversion.core.threads import EAGER_THREADS

from . import reference as R
from .gate import GATE_FRAMES, GATE_TEXT
from .weights import Loaded


def run_bench(
    loaded: Loaded,
    bundle: Path,
    seed: int,
    json_path: Path | None = None,
    profile: bool = False,
) -> int:
    """One utterance through the reference (eager) and `bundle` (streamed); figures."""
    from conversion.core.paths import write_json
    from gates.report import bench_table_markdown

    from .pipeline import Audio8Bundle

    config = loaded.config
    frames = GATE_FRAMES[config.name]
    with Audio8Bundle(bundle) as ab:
        prompt = ab.prompt(GATE_TEXT, None, frames)
        t = time.perf_counter()
        ref = R.generate(loaded.lm, prompt, frames, R.seeded_uniforms(seed, config))
        eager_s = time.perf_counter() - t
        result = ab.speak(GATE_TEXT, seed=seed, max_frames=frames, stream=True)
        ms = ab.session.function_ms
        ops = profile_calls(ab.session) if profile else None
    n_frames = sum(p.frames.codes.shape[1] + p.frames.finished for p in result.pieces)
    audio_s = result.audio.size / ab.codec_config.sample_rate
    frame_calls = len(ms.get("ar.frame", []))
    figures = {
        "config": config.name,
        "text": GATE_TEXT,
        "frames": n_frames,
        "audio_s": round(audio_s, 3),
        "runtime_calls_per_frame": round(frame_calls / max(n_frames, 1), 3),
        "frame_ms": round(statistics.median(ms["ar.frame"]), 1),
        "prefill_ms_per_window": round(statistics.median(ms["ar.prefill"]), 1),
        "prefill_windows": len(ms["ar.prefill"]),
        "codec_window_ms": round(statistics.median(ms["codec.main"]), 1),
        "codec_windows": len(ms["codec.main"]),
        "time_to_first_audio_s": round(result.first_audio_s or float("nan"), 3),
        "coreai_bundle_rtf": round(result.seconds / max(audio_s, 1e-9), 3),
        "reference_eager_ms_per_frame": round(eager_s * 1e3 / max(len(ref.frames), 1), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "threads": EAGER_THREADS,
    }
    print(bench_table_markdown(figures))
    add_profile(figures, ops)
    write_json(json_path, figures)
    return 0
