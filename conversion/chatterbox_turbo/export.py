"""Build a Chatterbox Turbo bundle: five graphs at their buckets, the host's tables and voice
(the S3Gen bundle, `conversion/s3gen/export.py`, with Turbo's T3).

    t3              prefill_P{P} + decode, one KV state (batch 1, no CFG)   int8 | fp32
    flow_estimator  estimate_F{f}: one mean-flow velocity (x, t, r)        fp32 | fp16

The S3Gen graphs are the shared ones (`conversion/s3gen/`): the estimator's spec sees the
mean-flow decoder and exports it at batch 1 with its `r` input. `--dtype` picks the mix as for
Chatterbox: fp32 (the parity reference), int8 (T3 int8), fp16 (T3 int8, the estimator fp16).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from conversion.core.export.program import AssetInfo
from conversion.s3gen.export import DEFAULT_VOICE as DEFAULT_VOICE  # the layout, re-exported
from conversion.s3gen.export import HOST_ARRAYS as HOST_ARRAYS
from conversion.s3gen.export import TOKENIZER as TOKENIZER
from conversion.s3gen.export import s3gen_graph_spec, write_s3gen_bundle

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


def _spec(model: ChatterboxTurboTTS, config: TurboConfig, graph: str) -> Any:
    if graph == "t3":
        return t3_graph_spec(model.t3, config.kv_length, config.prefill_buckets)
    return s3gen_graph_spec(model, config, graph)


def export_bundle(
    model: ChatterboxTurboTTS, config: TurboConfig, dest: Path, dtype: str = "fp32", **options: Any
) -> Path:
    """Export `model` into a bundle at `dest` (atomically): the S3Gen bundle with Turbo's T3;
    `options` are `write_s3gen_bundle`'s (`graphs`, `precisions`: the gate's int8-T3 and
    fp16-estimator side bundles override the per-graph precision of `dtype`)."""
    return write_s3gen_bundle(
        "chatterbox_turbo",
        model,
        config,
        dest,
        spec=lambda graph: _spec(model, config, graph),
        t3_arrays=lambda: t3_host_arrays(model),
        default_voice=lambda conds: TurboVoice.from_conditionals(conds, source="conds.pt"),
        readme=README,
        dtype=dtype,
        **options,
    )
