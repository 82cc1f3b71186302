"""S3Gen's flow (speech tokens -> mel) as two export-ready graphs over static buckets.

    flow_encoder    tokens [1,N] int32 (prompt tokens + speech tokens, zero-padded),
                    length [1] int32 (real tokens) -> mu [1,80,2N] (zero past 2·length)
    (host)          Euler loop over the CFM (cosine t schedule, CFG batch 2, rate 0.7)
    flow_estimator  x, mu, cond [2,80,F], mask [2,1,F], t [2], spks [2,80] -> velocity [2,80,F]

The mean-flow estimator (`ConditionalDecoder(meanflow=True)`, Chatterbox Turbo's distilled
S3Gen) takes one more input, the step's end time `r`, and runs without CFG, batch 1:

    flow_estimator  x, mu, cond [1,80,F], mask [1,1,F], t [1], spks [1,80], r [1]
                    -> velocity [1,80,F]  (the mean velocity over [t, r]; host: x += (r-t)·v)

Both wrap the publisher's own modules (`CausalMaskedDiffWithXvec`'s embedding, encoder and
projection; the CFM's `ConditionalDecoder`) and re-author only their top-level forwards, because
those build their attention masks with `add_optional_chunk_mask`, whose all-masked-row guard
(`(mask.sum(-1) == 0).sum().item()`) is data-dependent control flow torch.export refuses. With
no chunking (static_chunk_size 0, as the publisher runs them) that function returns the padding
mask unchanged, so the re-authored forwards pass the padding mask straight through.

Padding is exact on the real region:
  * encoder: token embeddings are zeroed past `length` (the publisher's `* mask`), attention
    masks the pad keys, the upsample convolution is causal, and the embedded sequence is
    zeroed past `length` before the pre-lookahead convolution, which reads 3 tokens ahead: at
    the real length (the publisher's call, batch 1, no padding) those reads are its zero pad.
  * estimator: every convolution is causal, every block multiplies by the mask, attention
    masks the pad keys; the caller puts mask = 1 only on the real frames.

At fp16 the estimator's own arithmetic tracks eager fp16 torch (cos 0.99997 on the reduced
random model); what is lost is `t` itself, rounded to half on the way in (an fp16 graph takes
fp16 inputs), which alone costs cos ~0.9995 at t ≈ 0.5 (the sinusoid's top frequency is 1000·t).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.export.program import GraphSpec, bucketed_functions
from conversion.core.export.rewrites import (
    ConcatPadConv1d,
    concat_padded_conv,
    replace_modules,
    zero_pad,
)
from conversion.core.host.buckets import Bucket, BucketTable

from ..sizes import S3GenBuckets

ENCODER_GRAPH = "flow_encoder"
ESTIMATOR_GRAPH = "flow_estimator"
ENCODER_FUNCTION = "encode"
ESTIMATOR_FUNCTION = "estimate"
MEL_CHANNELS = 80


def encoder_buckets(config: S3GenBuckets, sizes: Sequence[int] | None = None) -> BucketTable:
    return BucketTable.one_dim("N", sizes or config.encoder_tokens)


def estimator_buckets(config: S3GenBuckets, sizes: Sequence[int] | None = None) -> BucketTable:
    return BucketTable.one_dim("F", sizes or config.estimator_frames)


def function_name(base: str, bucket: Bucket) -> str:
    """The entrypoint at `bucket`, as `bucketed_functions` names it (`encode_N64`)."""
    return f"{base}_{bucket.label}"


def flow_of(model: nn.Module) -> nn.Module:
    """`CausalMaskedDiffWithXvec` from a ChatterboxTTS, an S3Gen, or the flow itself."""
    s3gen = getattr(model, "s3gen", model)
    return getattr(s3gen, "flow", s3gen)


class FlowEncoder(nn.Module):
    """Token embedding, UpsampleConformerEncoder and encoder_proj, over a token bucket."""

    INPUTS = ("tokens", "length")
    OUTPUTS = ("mu",)

    def __init__(self, flow: nn.Module) -> None:
        super().__init__()
        self.input_embedding = flow.input_embedding
        self.encoder = flow.encoder
        self.encoder_proj = flow.encoder_proj
        self.stride = int(flow.encoder.up_layer.stride)

    def forward(self, tokens: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        enc = self.encoder
        n = tokens.shape[1]
        dtype = self.encoder_proj.weight.dtype
        keep = torch.arange(n, device=tokens.device)[None, :] < length[:, None]  # [1, N]
        keep_f = keep.unsqueeze(-1).to(dtype)
        xs = self.input_embedding(tokens) * keep_f
        masks = keep.unsqueeze(1)  # [1, 1, N]
        xs, pos_emb, masks = enc.embed(xs, masks)
        xs = self._pre_lookahead(xs * keep_f)
        for layer in enc.encoders:
            xs = layer(xs, masks, pos_emb, masks)[0]
        xs = self._upsample(xs.transpose(1, 2)).transpose(1, 2)
        up_n = self.stride * n
        up_keep = torch.arange(up_n, device=tokens.device)[None, :] < self.stride * length[:, None]
        up_masks = up_keep.unsqueeze(1)
        xs, pos_emb, up_masks = enc.up_embed(xs, up_masks)
        for layer in enc.up_encoders:
            xs = layer(xs, up_masks, pos_emb, up_masks)[0]
        xs = enc.after_norm(xs)
        h = self.encoder_proj(xs) * up_keep.unsqueeze(-1).to(dtype)
        return h.transpose(1, 2)

    # The publisher's PreLookaheadLayer and Upsample1D forwards, written out with the same
    # weights: their F.pads as concatenated zeros (the runtime's `pad` is slow) and the nearest
    # x2 interpolation as expand + reshape, the same values (F.interpolate lowers to a gather_nd
    # that took 110 ms of a 589 ms encode_N64 call here; docs/speed.md).

    def _pre_lookahead(self, xs: torch.Tensor) -> torch.Tensor:
        """xs [B, N, C] -> conv2(pad_left_2(leaky_relu(conv1(pad_right(x))))) + xs."""
        pre = self.encoder.pre_lookahead_layer
        x = xs.transpose(1, 2)
        y = zero_pad(x, 0, pre.pre_lookahead_len)
        y = F.leaky_relu(F.conv1d(y, pre.conv1.weight, pre.conv1.bias))
        y = F.conv1d(zero_pad(y, 2), pre.conv2.weight, pre.conv2.bias)
        return y.transpose(1, 2) + xs

    def _upsample(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, C, N] -> conv(pad_left(nearest_x_stride(x))) [B, C', stride * N]."""
        conv = self.encoder.up_layer.conv
        b, c, n = x.shape
        s = self.stride
        up = x.unsqueeze(-1).expand(b, c, n, s).reshape(b, c, n * s)
        return F.conv1d(zero_pad(up, 2 * s), conv.weight, conv.bias)

    def example_inputs(self, bucket: Mapping[str, int]) -> dict[str, torch.Tensor]:
        n = bucket["N"]
        return {
            "tokens": torch.zeros(1, n, dtype=torch.int32),
            "length": torch.tensor([n], dtype=torch.int32),
        }


def attention_bias(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The publisher's `mask_to_bias`: 0 on kept keys, -1e10 on the pad ([B,1,T]).

    -1e10 is not a float16 number (it rounds to -inf); at half precision the most negative
    finite value is used instead, which softmax maps to exactly 0 all the same.
    """
    big = 1.0e10 if dtype != torch.float16 else float(torch.finfo(torch.float16).max)
    return (1.0 - (mask > 0).to(dtype)) * -big


def _concat_padded(module: nn.Module) -> nn.Module:
    """Every conv's zero padding as concatenated zeros (docs/speed.md: the Linux runtime's `pad`
    is slow): the publisher's `CausalConv1d` pads (k-1, 0) with F.pad in its forward, the
    others are plain padded `nn.Conv1d`s."""

    def rule(child: nn.Module) -> nn.Module | None:
        causal = getattr(child, "causal_padding", None)
        if isinstance(child, nn.Conv1d) and causal is not None:
            return ConcatPadConv1d(child, *causal)
        return concat_padded_conv(child)

    return replace_modules(module, rule)


class FlowEstimator(nn.Module):
    """The CFM velocity UNet (`ConditionalDecoder.forward`) over a frame bucket; with the
    publisher's `meanflow` decoder it also takes `r` (MEANFLOW_INPUTS)."""

    INPUTS = ("x", "mask", "mu", "t", "spks", "cond")
    MEANFLOW_INPUTS = (*INPUTS, "r")
    OUTPUTS = ("velocity",)

    def __init__(self, estimator: nn.Module) -> None:
        super().__init__()
        self.meanflow = bool(getattr(estimator, "meanflow", False))
        # A copy: the oracle keeps the publisher's own modules.
        self.estimator = _concat_padded(copy.deepcopy(estimator))

    def _time_embedding(self, t: torch.Tensor, r: torch.Tensor | None, dtype: torch.dtype):
        """`time_mlp(time_embeddings(t))`, and for mean-flow the same of `r`, mixed with t's by
        the publisher's `time_embed_mixer` (a bias-free Linear over [t; r])."""
        est = self.estimator
        # the sinusoid runs in float32 (the publisher promotes t against its float32 frequencies;
        # an fp16 graph must not compute 1000·t·f, up to 1000 rad, in half precision)
        temb = est.time_mlp(est.time_embeddings(t.float()).to(dtype))
        if not self.meanflow:
            return temb
        if r is None:
            raise ValueError("the mean-flow estimator needs `r`, the step's end time")
        remb = est.time_mlp(est.time_embeddings(r.float()).to(dtype))
        return est.time_embed_mixer(torch.cat([temb, remb], dim=1))

    @staticmethod
    def _transformers(blocks: nn.ModuleList, x: torch.Tensor, mask: torch.Tensor, temb):
        x = x.transpose(1, 2)
        bias = attention_bias(mask, x.dtype)
        for block in blocks:
            x = block(hidden_states=x, attention_mask=bias, timestep=temb)
        return x.transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        mu: torch.Tensor,
        t: torch.Tensor,
        spks: torch.Tensor,
        cond: torch.Tensor,
        r: torch.Tensor | None = None,
    ) -> torch.Tensor:
        est = self.estimator
        temb = self._time_embedding(t, r, x.dtype)
        frames = x.shape[-1]
        spks_t = spks.unsqueeze(-1).expand(-1, -1, frames)
        h = torch.cat([x, mu, spks_t, cond], dim=1)

        hiddens = []
        masks = [mask]
        for resnet, blocks, downsample in est.down_blocks:
            m = masks[-1]
            h = resnet(h, m, temb)
            h = self._transformers(blocks, h, m, temb)
            hiddens.append(h)
            h = downsample(h * m)
            masks.append(m[:, :, ::2])
        masks = masks[:-1]
        m = masks[-1]
        for resnet, blocks in est.mid_blocks:
            h = resnet(h, m, temb)
            h = self._transformers(blocks, h, m, temb)
        for resnet, blocks, upsample in est.up_blocks:
            m = masks.pop()
            skip = hiddens.pop()
            h = torch.cat([h[:, :, : skip.shape[-1]], skip], dim=1)
            h = resnet(h, m, temb)
            h = self._transformers(blocks, h, m, temb)
            h = upsample(h * m)
        h = est.final_block(h, m)
        return est.final_proj(h * m) * mask

    @staticmethod
    def example_inputs(
        bucket: Mapping[str, int], meanflow: bool = False
    ) -> dict[str, torch.Tensor]:
        """The CFG batch of 2 rows; mean-flow's one row and its `r`."""
        f, rows = bucket["F"], 1 if meanflow else 2
        inputs = {
            "x": torch.zeros(rows, MEL_CHANNELS, f),
            "mask": torch.ones(rows, 1, f),
            "mu": torch.zeros(rows, MEL_CHANNELS, f),
            "t": torch.zeros(rows),
            "spks": torch.zeros(rows, MEL_CHANNELS),
            "cond": torch.zeros(rows, MEL_CHANNELS, f),
        }
        if meanflow:
            inputs["r"] = torch.zeros(rows)
        return inputs


def encoder_graph_spec(
    model: nn.Module, config: S3GenBuckets, sizes: Sequence[int] | None = None
) -> GraphSpec:
    """graph `flow_encoder`: one `encode_N{n}` per token bucket in `config.encoder_tokens`
    (or in `sizes`, a subset for a quick export)."""
    module = FlowEncoder(flow_of(model)).eval()
    table = encoder_buckets(config, sizes)
    functions = bucketed_functions(
        ENCODER_FUNCTION, module, table, module.example_inputs, FlowEncoder.OUTPUTS
    )
    meta = {"buckets": table.to_json(), "frames_per_token": module.stride}
    return GraphSpec(ENCODER_GRAPH, functions, meta)


def estimator_graph_spec(
    model: nn.Module, config: S3GenBuckets, sizes: Sequence[int] | None = None
) -> GraphSpec:
    """graph `flow_estimator`: one `estimate_F{f}` per frame bucket in `config.estimator_frames`
    (or in `sizes`): CFG batch 2, or for a mean-flow decoder batch 1 with `r` (meta
    `meanflow: true`)."""
    module = FlowEstimator(flow_of(model).decoder.estimator).eval()
    table = estimator_buckets(config, sizes)
    make_inputs = functools.partial(FlowEstimator.example_inputs, meanflow=module.meanflow)
    functions = bucketed_functions(
        ESTIMATOR_FUNCTION, module, table, make_inputs, FlowEstimator.OUTPUTS
    )
    meta = {"buckets": table.to_json(), "cfg_batch": 2}
    if module.meanflow:
        meta.update(cfg_batch=1, meanflow=True)  # one row: no CFG
    return GraphSpec(ESTIMATOR_GRAPH, functions, meta)
