"""`voxport bench kokoro`: one run, the same sentences through three engines.

Columns: the publisher's eager torch (KModel), the bundle through the Core AI runtime (per
graph and host), and onnxruntime on the reassembled int8 ONNX. Plus runtime calls per second
of audio, and the compute the bucket choice wastes on padding against one fixed 128/512 bucket.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

import numpy as np
import torch

from conversion.core.buckets import BucketTable, padding_waste
from conversion.core.progress import progress_steps
from conversion.core.threads import EAGER_THREADS

from . import host, weights
from .gate import FIXTURE_SENTENCES, SHORT_SENTENCES

# The one-bucket alternative the measured table is compared with: one fixed 512-frame bucket.
FIXED_VOCODER = BucketTable.one_dim("L", [512])
BENCH_SENTENCES = 3


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_bench(
    kmodel,
    bundle: Path,
    snapshot: Path,
    config_name: str,
    seed: int,
    repeats: int | None = None,
    dtype: str = "fp32",
    json_path: Path | None = None,
) -> int:
    """The same sentences through eager torch, onnxruntime int8 and `bundle`; figures."""
    from conversion.core.paths import write_json
    from gates.report import bench_table_markdown

    from .pipeline import KokoroBundle
    from .weights_onnx_reference import OnnxReference

    sentences = (
        SHORT_SENTENCES
        if config_name == "reduced"
        else FIXTURE_SENTENCES[: (repeats or BENCH_SENTENCES)]
    )
    pack = host.load_voice("jf_alpha", extra_dirs=[snapshot / weights.VOICES_DIR])
    cases = []
    for text in sentences:
        chunk = host.text_to_chunks(text)[0]
        cases.append((chunk, host.ref_s_for(pack, chunk.n_phonemes)))
    onnx_ref = OnnxReference(weights.assemble_onnx(), threads=1)

    eager_s = onnx_s = bundle_s = audio_s = 0.0
    graph_ms: dict[str, float] = {}
    host_ms = 0.0
    frames_needed: list[dict[str, int]] = []
    calls = 0
    with KokoroBundle(bundle) as kb, progress_steps(3 * len(cases), "bench kokoro") as bar:
        vocoder_table = kb.tables["vocoder"]
        for i, (chunk, ref_s) in enumerate(cases):
            t = time.perf_counter()
            with torch.no_grad():
                kmodel.forward_with_tokens(torch.tensor([chunk.ids]), torch.from_numpy(ref_s))
            eager_s += time.perf_counter() - t
            bar.step(f"eager {i + 1}")
            t = time.perf_counter()
            onnx_ref(np.array(chunk.ids), ref_s)
            onnx_s += time.perf_counter() - t
            bar.step(f"onnxruntime {i + 1}")
            t = time.perf_counter()
            r = kb.synthesize_ids(chunk.ids, ref_s, seed=seed)
            bundle_s += time.perf_counter() - t
            bar.step(f"bundle {i + 1}")
            audio_s += r.audio.size / host.SAMPLE_RATE
            calls += 3
            host_ms += r.host_ms
            for g, ms in r.graph_ms.items():
                graph_ms[g] = graph_ms.get(g, 0.0) + ms
            # The vocoder is where the compute is: padding waste is counted on its frames.
            frames_needed.append({"L": int(r.pred_dur.sum())})
    figures: dict[str, float | int | str] = {
        "sentences": len(cases),
        "audio_s": round(audio_s, 3),
        "eager_torch_rtf": round(eager_s / audio_s, 4),
        "onnxruntime_int8_rtf": round(onnx_s / audio_s, 4),
        "coreai_bundle_rtf": round(bundle_s / audio_s, 4),
        "coreai_host_share": round(host_ms / (bundle_s * 1e3), 4),
        "runtime_calls_per_audio_s": round(calls / audio_s, 3),
        "vocoder_padding_waste_chosen": round(padding_waste(frames_needed, vocoder_table), 4),
        "vocoder_padding_waste_fixed_512": round(padding_waste(frames_needed, FIXED_VOCODER), 4),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "threads": EAGER_THREADS,
        "bundle_dtype": dtype,
    }
    for g, ms in graph_ms.items():
        figures[f"{g}_ms_per_sentence"] = round(ms / len(cases), 1)
    print(bench_table_markdown(figures))
    write_json(json_path, figures)
    return 0
