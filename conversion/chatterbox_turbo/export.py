"""Build a Chatterbox Turbo bundle: five graphs at their buckets, the host's tables and voice.

    t3              prefill_P{P} + decode, one KV state (batch 1, no CFG)   int8 | fp32
    flow_encoder    encode_N{n}: tokens -> mu                              fp32
    flow_estimator  estimate_F{f}: one mean-flow velocity (x, t, r)        fp32 | fp16
    hift_f0         f0_F{f}: mel -> f0                                     fp32
    hift_trunk      trunk_F{f}: mel + source STFT -> magnitude, phase      fp32

The S3Gen graphs are the shared ones (`conversion/s3gen/`): the estimator's spec sees the
mean-flow decoder and exports it at batch 1 with its `r` input. `--dtype` picks the mix as for
Chatterbox: fp32 (the parity reference), int8 (T3 int8), fp16 (T3 int8, the estimator fp16).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conversion.core.bundle import BundleWriter
from conversion.core.export.precision import Precision
from conversion.core.export.program import AssetInfo
from conversion.core.progress import progress_steps
from conversion.s3gen.flow.graphs import encoder_graph_spec, estimator_graph_spec
from conversion.s3gen.flow.host import flow_host_arrays
from conversion.s3gen.hift.graphs import f0_graph_spec, trunk_graph_spec
from conversion.s3gen.hift.host import hift_host_arrays
from conversion.s3gen.host_files import add_license_and_readme

from .config import TurboConfig
from .t3.graphs import t3_graph_spec
from .t3.host import t3_host_arrays
from .voice import TurboVoice

if TYPE_CHECKING:
    from chatterbox.tts_turbo import ChatterboxTurboTTS

ASSET_INFO = AssetInfo(
    author="Resemble AI (Chatterbox Turbo); exported to Core AI by voxport",
    license="MIT",
    description="Chatterbox Turbo text-to-speech (GPT-2 T3, mean-flow S3Gen) with voice cloning",
)
GRAPHS = ("t3", "flow_encoder", "flow_estimator", "hift_f0", "hift_trunk")
HOST_ARRAYS = {"t3": "t3_host.npz", "flow": "flow_host.npz", "hift": "hift_host.npz"}
DEFAULT_VOICE = "voice_default.npz"
TOKENIZER = "tokenizer.json"
MIXES: dict[str, dict[str, str]] = {
    "fp32": {},
    "int8": {"t3": "int8"},
    "fp16": {"t3": "int8", "flow_estimator": "fp16"},
}

README = """\
# Chatterbox Turbo bundle (voxport)

Chatterbox Turbo by Resemble AI (MIT, see LICENSE), exported to Core AI by voxport. Five
graphs; the host steps between them (`conversion/chatterbox_turbo/`):

1. text -> ids: `voxport tokenize chatterbox_turbo "TEXT"` (the publisher's Turbo punc_norm,
   then `tokenizer.json`, GPT-2's byte-level BPE; no start or stop text token).
2. voice: `voice_default.npz` or a file from `voxport voice chatterbox_turbo --ref WAV`.
3. `t3` (`t3_host.npz` tables; GPT-2 adds its learned positions in the graph): prefill rows =
   spkr_enc(speaker_emb) + speech_emb(prompt tokens) + text_emb(ids) + speech_emb(6561),
   zero-padded to `prefill_P*`; then `decode` per token at its position. Each draw:
   temperature 0.8, top-k 1000, top-p 0.95, then repetition penalty 1.2 on the kept scores
   (history: the start token at draw 0, then the drawn tokens), argmax(p / -log u) over host
   uniforms. Draw 0 is never a stop; stop token 6562 from draw 1 on.
4. `flow_encoder` (prompt + speech tokens < 6561, `encode_N*`) -> mu; 2 mean-flow steps of
   `flow_estimator` on one row, t = 0, 0.5, 1 (`r` the step's end), x += (r - t) v; drop the
   prompt frames.
5. `hift_f0` -> f0; harmonic source (`hift_host.npz`) and its 16-point STFT (hop 4);
   `hift_trunk` -> magnitude, phase; clip magnitude at 100, iSTFT, clamp, keep 480 n samples,
   multiply the first 960 by `trim_fade`.

Every file is hashed in `manifest.json` (`meta.files`); verify before loading.
"""


def graph_precisions(dtype: str) -> dict[str, str]:
    """Each graph's precision in a bundle of `dtype`."""
    return {g: MIXES[dtype].get(g, "fp32") for g in GRAPHS}


def _spec(model: ChatterboxTurboTTS, config: TurboConfig, graph: str) -> Any:
    if graph == "t3":
        return t3_graph_spec(model.t3, config.kv_length, config.prefill_buckets)
    builders = {
        "flow_encoder": encoder_graph_spec,
        "flow_estimator": estimator_graph_spec,
        "hift_f0": f0_graph_spec,
        "hift_trunk": trunk_graph_spec,
    }
    return builders[graph](model, config)


def export_bundle(
    model: ChatterboxTurboTTS,
    config: TurboConfig,
    dest: Path,
    dtype: str = "fp32",
    overwrite: bool = False,
    weights_sha256: str | None = None,
    snapshot: Path | None = None,
    graphs: Sequence[str] = GRAPHS,
    precisions: dict[str, str] | None = None,
    progress: bool = True,
    key: dict | None = None,
    info: AssetInfo | None = None,
) -> Path:
    """Export `graphs` of `model` into a bundle at `dest` (atomically); `precisions` overrides
    the per-graph precision of `dtype` (the gate's int8-T3 and fp16-estimator side bundles)."""
    per_graph = {**graph_precisions(dtype), **(precisions or {})}
    specs = [_spec(model, config, g) for g in graphs]
    total = sum(len(s.functions) for s in specs)
    bundle_config = {
        "config": config.to_json(),
        "graphs": {g: per_graph[g] for g in graphs},
        "buckets": {s.name: s.meta.get("buckets") for s in specs},
    }
    with (
        progress_steps(total, "export chatterbox_turbo", enabled=progress) as bar,
        BundleWriter(
            dest,
            "chatterbox_turbo",
            precision=Precision.parse(dtype),
            overwrite=overwrite,
            weights_sha256=weights_sha256,
            config=bundle_config,
            key=key,
            info=info,
        ) as bundle,
    ):
        for spec in specs:
            bundle.add_graph(
                spec,
                precision=per_graph[spec.name],
                on_function=lambda fn, g=spec.name: bar.step(f"{g}.{fn}"),
            )
        bundle.add_arrays(HOST_ARRAYS["t3"], t3_host_arrays(model))
        bundle.add_arrays(HOST_ARRAYS["flow"], flow_host_arrays(model))
        bundle.add_arrays(HOST_ARRAYS["hift"], hift_host_arrays(model))
        with tempfile.TemporaryDirectory(prefix="voxport-turbo-export-") as tmp:
            if model.conds is not None:
                default = TurboVoice.from_conditionals(model.conds, source="conds.pt")
                bundle.add_file(default.save(Path(tmp) / DEFAULT_VOICE))
        if snapshot is not None:
            bundle.add_file(Path(snapshot) / TOKENIZER)
        add_license_and_readme(bundle, README)
    return Path(dest)
