"""Audio8-TTS's codec as two export-ready graphs at static frame buckets.

    codec    main(codes int32 [1,10,W]) -> wav [1, W*2048]      (W = 160 published, 32 reduced)
    encoder  main(audio [1,1,N]) -> codes int32 [1,10,N/2048]    (N = 442,368 = 216 frames)

Both are stateless and every op is causal (codec/model.py), so the host decodes a stream in
windows (codec/host.py) and pads a reference clip on the right without touching its real frames.

Rewrites from the eager re-author (`codec.model.Codec`), all exact in real arithmetic:
* weight norm folded: every conv holds the weight g * v / ||v|| computes (own module
  classes, so a deep copy is safe to fold);
* causal transposed convs (k = 2s and k = s) as one polyphase conv1d with k/s taps producing
  s * C_out channels, interleaved in time by reshape/transpose: no ConvTranspose (the device
  trap where strided conv_transpose1d returns zeros) and no zero insertion (s-fold fewer
  multiplies than the zero-insertion form);
* padding as concatenated zeros (the Linux runtime's pad op is slow);
* the ten books' lookups + 1x1 out projections as one embedding over the stacked codebooks
  (int32 offsets) and one linear over the concatenated 80-dim code vectors (biases summed);
  the publisher's clamp (book 0 to 0..4095, books 1..9 to 0..1023) is in the graph;
* the transformers' band masks and bf16-rounded RoPE tables as constants for the bucket
  (no arange / cos / sin / bf16 casts in the graph).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.export.program import FunctionSpec, GraphSpec

from .layers import CausalConvTranspose1d, ConvParams, WindowTransformer
from .model import Codec

CODEC_GRAPH = "codec"
ENCODER_GRAPH = "encoder"
FUNCTION = "main"


def export_copy(codec: Codec, frames: int) -> Codec:
    """A deep copy in export form for a bucket of `frames` code frames."""
    m = copy.deepcopy(codec).eval().requires_grad_(False)
    for mod in list(m.modules()):
        if isinstance(mod, CausalConvTranspose1d):
            mod.to_polyphase()  # folds its own weight into the polyphase form
    for mod in m.modules():
        if isinstance(mod, ConvParams) and not mod.folded:
            mod.fold()
    cfg = m.cfg
    m.quantizer.pre_module.set_static_length(frames)
    m.quantizer.post_module.set_static_length(frames)
    steps = frames * (cfg.frame_size // cfg.hop_length)
    for mod in m.encoder.modules():
        if isinstance(mod, WindowTransformer):
            mod.set_static_length(steps)
    return m


class CodecDecode(nn.Module):
    """codes int32 [1,10,W] -> wav [1, W*frame_size]."""

    INPUTS = ("codes",)
    OUTPUTS = ("wav",)

    def __init__(self, codec: Codec, frames: int) -> None:
        super().__init__()
        m = export_copy(codec, frames)
        self.frames, self.cfg = frames, m.cfg
        quantizers = list(m.quantizer.semantic_quantizer.quantizers) + list(
            m.quantizer.quantizer.quantizers
        )
        sizes = [q.size for q in quantizers]
        offsets = torch.tensor([sum(sizes[:i]) for i in range(len(sizes))], dtype=torch.int32)
        self.register_buffer("offsets", offsets.reshape(1, -1, 1), persistent=False)
        self.register_buffer(
            "max_code",
            torch.tensor(sizes, dtype=torch.int32).reshape(1, -1, 1) - 1,
            persistent=False,
        )
        self.table = nn.Parameter(
            torch.cat([q.codebook.weight.detach() for q in quantizers]), requires_grad=False
        )
        # out_proj weights [D, code_dim, 1] per book -> one [D, books*code_dim] projection
        self.proj = nn.Parameter(
            torch.cat([q.out_proj.effective_weight()[..., 0] for q in quantizers], dim=1),
            requires_grad=False,
        )
        self.proj_bias = nn.Parameter(
            torch.stack([q.out_proj.bias.detach() for q in quantizers]).sum(0),
            requires_grad=False,
        )
        self.post_module = m.quantizer.post_module
        self.upsample = m.quantizer.upsample
        self.decoder = m.decoder

    def forward(self, codes: torch.Tensor) -> torch.Tensor:
        codes = torch.minimum(codes.clamp(min=0), self.max_code) + self.offsets
        b, books, length = codes.shape
        vec = F.embedding(codes.long(), self.table)  # [B, 10, W, code_dim]
        vec = vec.permute(0, 2, 1, 3).reshape(b, length, -1)
        z = F.linear(vec, self.proj, self.proj_bias).transpose(1, 2)
        wav = self.decoder(self.upsample(self.post_module(z)))
        return wav.reshape(b, -1)

    def example_inputs(self) -> dict[str, torch.Tensor]:
        return {"codes": torch.zeros(1, self.cfg.num_books, self.frames, dtype=torch.int32)}


class CodecEncode(nn.Module):
    """audio [1,1,N] (N = frames*frame_size) -> codes int32 [1,10,frames]."""

    INPUTS = ("audio",)
    OUTPUTS = ("codes",)

    def __init__(self, codec: Codec, frames: int) -> None:
        super().__init__()
        m = export_copy(codec, frames)
        self.frames, self.cfg = frames, m.cfg
        self.encoder = m.encoder
        self.quantizer = m.quantizer

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.quantizer.encode(self.encoder(audio)).to(torch.int32)

    def example_inputs(self) -> dict[str, torch.Tensor]:
        return {"audio": torch.zeros(1, 1, self.frames * self.cfg.frame_size)}


def codec_graph_spec(codec: Codec, frames: int | None = None) -> GraphSpec:
    frames = frames or codec.cfg.graph_frames
    module = CodecDecode(codec, frames)
    fn = FunctionSpec(FUNCTION, module, module.example_inputs(), list(module.OUTPUTS))
    meta = {"frames": frames, "frame_size": codec.cfg.frame_size, "config": codec.cfg.name}
    return GraphSpec(CODEC_GRAPH, [fn], meta=meta)


def encoder_graph_spec(codec: Codec, frames: int | None = None) -> GraphSpec:
    frames = frames or codec.cfg.encoder_frames
    module = CodecEncode(codec, frames)
    fn = FunctionSpec(FUNCTION, module, module.example_inputs(), list(module.OUTPUTS))
    meta = {"frames": frames, "frame_size": codec.cfg.frame_size, "config": codec.cfg.name}
    return GraphSpec(ENCODER_GRAPH, [fn], meta=meta)
