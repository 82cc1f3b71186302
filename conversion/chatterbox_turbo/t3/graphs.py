"""Chatterbox Turbo's T3 (GPT-2 backbone + speech head) as one export-ready, stateful graph.

The graph is embeds-in, like Chatterbox's (`conversion/chatterbox/t3/graphs.py`): the host
builds every input row as the publisher's `T3.prepare_input_embeds` does (conditioning prefix,
text embeddings, the start-of-speech embedding; Turbo has no T3 positional tables of its own),
and the graph adds GPT-2's learned positions (`wpe`) from the row index, so a position that is
off by one changes the logits. One sequence (Turbo has no CFG):

    prefill_P{P}  embeds [1, P, D] f32, length [1] int32 (real rows; the rest is padding)
                  writes KV rows 0..P-1, causal inside the prompt
                  -> logits [1, 6563] of row length-1
    decode        embeds [1, 1, D] f32, position [1] int32 (the row this step writes)
                  writes KV row `position`, attends to rows 0..position
                  -> logits [1, 6563]

Padding rows of a prefill bucket write garbage into KV rows length..P-1: decode writes row
`length` first and masks every row past its own, so each such row is overwritten before
anything reads it.

The re-authoring is transformers' `GPT2Model` as `inference_turbo` calls it (no attention
mask, no token types, eval): pre-LayerNorm blocks; `c_attn` is a `Conv1D` (weight [in, out]),
kept fused as one Linear of the transposed weight (q, k, v columns in the publisher's order,
so the same products); SDPA with an explicit boolean mask and GPT-2's 1/sqrt(head_dim) scale
(SDPA's default); gelu_new, the tanh approximation; `ln_f`, then T3's `speech_head` (with
bias for GPT-2) on the one row the host needs. Only the first kv_length rows of `wpe` are
kept: no row past the KV cache is ever written (the published table has 8,196 rows, 4 KB of
fp32 each).

KV caches are non-persistent buffers, one pair per layer, `layers.{i}.k_cache` / `v_cache`
[1, heads, kv_length, head_dim] f32 (runtime state `layers_{i}_k_cache`, ...), written with
`index_copy_` along the position axis; both functions share them by name (one buffer per
layer, not one stacked buffer: Chatterbox's docstring has the measurement).

Every size comes from the publisher's module (`t3.tfmr.config`, the weights' shapes), so the
same code exports the published GPT-2 medium (24 layers, 1024 wide, 16 heads) and a reduced
one built by the publisher's own `T3(hp)` over a patched `GPT2_MEDIUM_CONFIG`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.export.program import FunctionSpec, GraphSpec
from conversion.core.host.buckets import BucketTable

GRAPH = "t3"
T3_VOCAB = 6563  # ChatterboxTurboTTS.from_local: hp.speech_tokens_dict_size
START_SPEECH = 6561  # T3Config.start_speech_token
STOP_SPEECH = 6562  # T3Config.stop_speech_token
STATES = ("k_cache", "v_cache")


def prefill_table(buckets: Sequence[int]) -> BucketTable:
    return BucketTable.one_dim("P", tuple(buckets))


def prefill_function_name(rows: int) -> str:
    return f"prefill_P{rows}"


def _linear_from_conv1d(conv: nn.Module) -> nn.Linear:
    """transformers' Conv1D (y = x @ W + b, W [in, out]) as an nn.Linear (weight W^T)."""
    w = conv.weight.detach().float()
    lin = nn.Linear(w.shape[0], w.shape[1], bias=True)
    with torch.no_grad():
        lin.weight.copy_(w.t())
        lin.bias.copy_(conv.bias.detach().float())
    lin.requires_grad_(False)
    return lin


def _layer_norm(norm: nn.LayerNorm) -> nn.LayerNorm:
    out = nn.LayerNorm(norm.normalized_shape, eps=norm.eps)
    out.load_state_dict({k: v.detach().float() for k, v in norm.state_dict().items()})
    out.requires_grad_(False)
    return out


class _Block(nn.Module):
    """One GPT2Block: x + attn(ln_1(x)), then x + mlp(ln_2(x)); attention outside (caches)."""

    def __init__(self, block: nn.Module, heads: int, head_dim: int, kv_length: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.ln_1 = _layer_norm(block.ln_1)
        self.c_attn = _linear_from_conv1d(block.attn.c_attn)
        self.attn_proj = _linear_from_conv1d(block.attn.c_proj)
        self.ln_2 = _layer_norm(block.ln_2)
        self.c_fc = _linear_from_conv1d(block.mlp.c_fc)
        self.mlp_proj = _linear_from_conv1d(block.mlp.c_proj)
        # This layer's KV cache: runtime state (non-persistent, mutated in forward).
        shape = (1, heads, kv_length, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

    def qkv_heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v as [B, heads, S, head_dim] (the publisher's split of c_attn's columns)."""
        b, s, _ = x.shape
        qkv = self.c_attn(self.ln_1(x)).view(b, s, 3, self.heads, self.head_dim)
        q, k, v = qkv.unbind(2)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def finish(self, x: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
        b, _, s, _ = att.shape
        x = x + self.attn_proj(att.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))
        # gelu_new (transformers' NewGELUActivation) is the tanh approximation, not erf.
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


def _check_backbone(t3: nn.Module, kv_length: int) -> None:
    """What the re-authoring assumes of the publisher's GPT-2; each a one-line refusal."""
    cfg = t3.tfmr.config
    if not getattr(t3, "is_gpt", False):
        raise NotImplementedError("only Turbo's GPT-2 backbone is ported here (T3.is_gpt)")
    if cfg.activation_function != "gelu_new":
        raise NotImplementedError(f"activation {cfg.activation_function!r}: only gelu_new")
    if not cfg.scale_attn_weights or cfg.scale_attn_by_inverse_layer_idx:
        raise NotImplementedError("GPT-2 attention scaling other than 1/sqrt(head_dim)")
    if cfg.add_cross_attention:
        raise NotImplementedError("GPT-2 with cross-attention is not T3's backbone")
    if t3.speech_head.bias is None:
        raise NotImplementedError("Turbo's speech_head has a bias (bias=is_gpt)")
    if t3.speech_head.weight.shape[0] != T3_VOCAB:
        raise ValueError(f"speech vocabulary {t3.speech_head.weight.shape[0]} != {T3_VOCAB}")
    if t3.hp.start_speech_token != START_SPEECH or t3.hp.stop_speech_token != STOP_SPEECH:
        raise ValueError("T3Config speech start/stop tokens differ from the ported ones")
    if not 2 <= kv_length <= t3.tfmr.wpe.num_embeddings:
        raise ValueError(
            f"kv_length {kv_length} must be 2..{t3.tfmr.wpe.num_embeddings} "
            "(GPT-2's learned positions, n_positions)"
        )


class T3TurboGraph(nn.Module):
    """Turbo T3's GPT-2 + speech head over a KV cache; one instance serves prefill and decode.

    `forward(embeds [1, S, D], index [1] int32)`: with S > 1 it is a prefill from row 0 and
    `index` is the number of real rows; with S == 1 it is a decode step and `index` is the row
    it writes. (The two functions are this one forward traced at two static shapes.)
    """

    def __init__(self, t3: nn.Module, kv_length: int) -> None:
        super().__init__()
        _check_backbone(t3, kv_length)
        tfmr = t3.tfmr
        cfg = tfmr.config
        self.hidden = cfg.hidden_size
        self.heads = cfg.num_attention_heads
        self.head_dim = self.hidden // self.heads
        self.kv_length = int(kv_length)
        self.layers = nn.ModuleList(
            _Block(block, self.heads, self.head_dim, self.kv_length) for block in tfmr.h
        )
        self.ln_f = _layer_norm(tfmr.ln_f)
        self.speech_head = nn.Linear(self.hidden, T3_VOCAB, bias=True)
        self.speech_head.load_state_dict(
            {k: v.detach().float() for k, v in t3.speech_head.state_dict().items()}
        )
        self.speech_head.requires_grad_(False)
        self.register_buffer("wpe", tfmr.wpe.weight.detach()[: self.kv_length].float().clone())

    def reset(self) -> None:
        for layer in self.layers:
            layer.k_cache.zero_()
            layer.v_cache.zero_()

    def forward(self, embeds: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        if embeds.shape[1] == 1:
            return self.decode(embeds, index)
        return self.prefill(embeds, index)

    def prefill(self, embeds: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        rows = embeds.shape[1]
        positions = torch.arange(rows)
        causal = positions.unsqueeze(1) >= positions.unsqueeze(0)  # [P, P]: row i sees j <= i
        x = embeds + self.wpe[:rows]
        for layer in self.layers:
            q, k, v = layer.qkv_heads(x)
            layer.k_cache.index_copy_(2, positions, k)
            layer.v_cache.index_copy_(2, positions, v)
            # Attention over the prompt's own keys: from row 0 they are the whole history.
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
            x = layer.finish(x, att)
        last = x.index_select(1, length.long() - 1)  # [1, 1, D]
        return self.speech_head(self.ln_f(last))[:, 0]

    def decode(self, embeds: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        pos = position.long()
        visible = (torch.arange(self.kv_length) <= pos).unsqueeze(0)  # [1, kv]: rows 0..position
        x = embeds + self.wpe.index_select(0, pos)
        for layer in self.layers:
            q, k, v = layer.qkv_heads(x)
            layer.k_cache.index_copy_(2, pos, k)
            layer.v_cache.index_copy_(2, pos, v)
            att = F.scaled_dot_product_attention(q, layer.k_cache, layer.v_cache, attn_mask=visible)
            x = layer.finish(x, att)
        return self.speech_head(self.ln_f(x))[:, 0]


def build_t3_graph(t3: nn.Module, kv_length: int) -> T3TurboGraph:
    """The re-authored module (fp32, eval, caches zeroed) from the publisher's Turbo `T3`."""
    return T3TurboGraph(t3, kv_length).eval()


def t3_graph_spec(t3: nn.Module, kv_length: int, prefill_buckets: Sequence[int]) -> GraphSpec:
    """Graph "t3": prefill_P{P} per prefill bucket + decode, one module (weights and KV state)."""
    if not prefill_buckets or min(prefill_buckets) < 2:
        raise ValueError("prefill buckets must hold at least 2 rows (1 row is a decode)")
    if max(prefill_buckets) > kv_length:
        raise ValueError(f"a prefill bucket is longer than the KV cache ({kv_length} rows)")
    module = build_t3_graph(t3, kv_length)
    states = [f"layers.{i}.{name}" for i in range(len(module.layers)) for name in STATES]
    functions = []
    for bucket in prefill_table(prefill_buckets):
        rows = bucket["P"]
        inputs = {
            "embeds": torch.zeros(1, rows, module.hidden),
            "length": torch.full((1,), rows, dtype=torch.int32),
        }
        functions.append(
            FunctionSpec(prefill_function_name(rows), module, inputs, ["logits"], states, bucket)
        )
    decode_inputs = {
        "embeds": torch.zeros(1, 1, module.hidden),
        "position": torch.zeros(1, dtype=torch.int32),
    }
    functions.append(FunctionSpec("decode", module, decode_inputs, ["logits"], states))
    meta = {
        "kv_length": kv_length,
        "prefill_buckets": list(prefill_buckets),
        "layers": len(module.layers),
        "hidden": module.hidden,
        "vocab": T3_VOCAB,
        "start_speech": START_SPEECH,
        "stop_speech": STOP_SPEECH,
    }
    return GraphSpec(GRAPH, functions, meta)
