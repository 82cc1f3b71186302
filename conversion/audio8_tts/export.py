"""Build an Audio8 bundle: the fused `ar` graph, the codec decoder and encoder, host files
(`host_files`: the tables, licence note and README a device host reads).

    ar       prefill (32 columns at `pos`) + frame (slow step, RAS draw, fast AR's nine draws)
             over one KV state; int8 or fp32
    codec    main(codes [1,10,W]) -> wav [1, W·2048]   (W = 160 published)           fp32
    encoder  main(audio [1,1,N]) -> codes [1,10,N/2048] (10 s bucket published)      fp32

`--dtype int8` quantizes the whole `ar` graph's weights (coreai-opt per-channel). The port
notes' choice (slow AR int8, fast AR fp16, one graph) is the `ar` precision "mixed"
(`mixed.py`), exported for the gate's side bundle (`precisions={"ar": "mixed"}`); `--dtype`
does not offer it.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import torch

from conversion.core.bundle import BundleWriter
from conversion.core.export.precision import Precision
from conversion.core.export.program import AssetInfo
from conversion.core.progress import progress_steps

from .ar.graphs import ar_graph_spec
from .codec.graphs import codec_graph_spec, encoder_graph_spec
from .host_files import add_host_files
from .mixed import MIXED, mixed_ar_spec, slow_only_int8
from .tokenizer import TOKENIZER_FILE, load_tokenizer
from .weights import Loaded

# What each exported asset's metadata says (the port's `asset_info`; a mutant's bundle too).
ASSET_INFO = AssetInfo(
    author="Audio8 AI (Audio8-TTS-Preview-0.6b); exported to Core AI by voxport",
    # the publisher's code states none; its model card is the source
    license="as on the publisher's model card (Audio8/Audio8-TTS-Preview-0.6b)",
    description="Audio8-TTS DualAR text-to-speech with a streaming codec",
)


GRAPHS = ("ar", "codec", "encoder")
CONFIG_FILE = "audio8_config.json"


def graph_precisions(dtype: str) -> dict[str, str]:
    return {
        "ar": dtype if dtype in ("int8", "fp16") else "fp32",
        "codec": "fp32",
        "encoder": "fp32",
    }


def export_bundle(
    loaded: Loaded,
    dest: Path,
    dtype: str = "fp32",
    overwrite: bool = False,
    weights_sha256: str | None = None,
    graphs=GRAPHS,
    progress: bool = True,
    key: dict | None = None,
    info: AssetInfo | None = None,
    precisions: dict[str, str] | None = None,
) -> Path:
    per_graph = {**graph_precisions(dtype), **(precisions or {})}
    mixed = per_graph.get("ar") == MIXED
    builders = {
        "ar": lambda: mixed_ar_spec(loaded.lm) if mixed else ar_graph_spec(loaded.lm),
        "codec": lambda: codec_graph_spec(loaded.codec),
        "encoder": lambda: encoder_graph_spec(loaded.codec),
    }
    with torch.no_grad():
        specs = [builders[g]() for g in graphs]
    total = sum(len(s.functions) for s in specs)
    config = {
        "config": loaded.config.to_json(),
        "codec_config": loaded.codec_config.to_json(),
        "graphs": {g: per_graph[g] for g in graphs},
    }
    with (
        progress_steps(total, "export audio8_tts", enabled=progress) as bar,
        BundleWriter(
            dest,
            "audio8_tts",
            precision=Precision.parse(dtype),
            overwrite=overwrite,
            weights_sha256=weights_sha256,
            config=config,
            key=key,
            info=info,
        ) as bundle,
        torch.no_grad(),
    ):
        for spec in specs:
            precision = per_graph[spec.name]
            with slow_only_int8() if precision == MIXED else contextlib.nullcontext():
                bundle.add_graph(
                    spec,
                    # mixed: int8 quantization (of the slow AR's f32 constants only)
                    precision="int8" if precision == MIXED else precision,
                    on_function=lambda fn, g=spec.name: bar.step(f"{g}.{fn}"),
                )
        bundle.add_file(loaded.folder / TOKENIZER_FILE)
        add_host_files(bundle, load_tokenizer(loaded.folder), loaded.config, loaded.codec_config)
        with tempfile.TemporaryDirectory(prefix="voxport-a8-export-") as tmp:
            cfg = Path(tmp) / CONFIG_FILE
            cfg.write_text(json.dumps(config, indent=2) + "\n")
            bundle.add_file(cfg)
    return Path(dest)
