"""Chatterbox T3 (Llama backbone + speech head) as one export-ready, stateful graph.

The graph is embeds-in: the host builds every input row (conditioning prefix, text and speech
embeddings with their learned positional embeddings, `t3.host`), the graph runs the Llama
stack over a KV cache and returns the speech logits of one row for both CFG rows:

    prefill_P{P}  embeds [2, P, 1024] f32, length [1] int32 (real rows; the rest is padding)
                  writes KV rows 0..P-1, causal inside the prompt
                  -> logits [2, 8194] of row length-1
    decode        embeds [2, 1, 1024] f32, position [1] int32 (the row this step writes)
                  writes KV row `position`, attends to rows 0..position
                  -> logits [2, 8194]

Row 0 is the conditional batch, row 1 the unconditional one (text embeddings zeroed); they are
independent sequences that share the weights. Padding rows of a prefill bucket write garbage
into KV rows length..P-1: decode writes row `length` first and masks every row past its own,
so each such row is overwritten before anything reads it.

The re-authoring is the publisher's `LlamaModel` with nothing data-dependent left:
RMSNorm as written by transformers (float32, eps from the config), q/k/v and gate/up fused into
one matmul each (same rows as the publisher's weights, so the same products), RoPE tables
precomputed by the publisher's own `LlamaRotaryEmbedding` (llama3 scaling, theta 5e5) for
absolute positions 0..kv_length-1, SDPA with an explicit boolean mask, SiLU MLP, the final norm
and `speech_head` on the one row the host needs.

KV caches are non-persistent buffers, one pair per layer, `layers.{i}.k_cache` / `v_cache`
[2, heads, kv_length, head_dim] f32 (runtime state `layers_{i}_k_cache`, ...), written with
`index_copy_` along the position axis; both functions share them by name. One stacked
[layers, 2, heads, kv, head_dim] buffer per k/v was tried first: writing layer i through
`cache[i].index_copy_` functionalises into a `select_scatter`, which decomposes into a `where`
over the WHOLE stacked cache per layer and per step (at the published size 30 x 2 x 250 MB a
step). Measured on the reduced model (2 layers, kv 256, Linux runtime): decode 300 ms stacked
against 100 ms per layer, prefill(96) 840 ms against 500 ms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.export.program import FunctionSpec, GraphSpec
from conversion.core.host.buckets import BucketTable

from ..config import ChatterboxConfig

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS

GRAPH = "t3"
T3_VOCAB = 8194  # T3Config.speech_tokens_dict_size
START_SPEECH = 6561  # T3Config.start_speech_token
STOP_SPEECH = 6562  # T3Config.stop_speech_token
HIDDEN = 1024
STATES = ("k_cache", "v_cache")


def prefill_table(config: ChatterboxConfig) -> BucketTable:
    return BucketTable.one_dim("P", config.prefill_buckets)


def prefill_function_name(rows: int) -> str:
    return f"prefill_P{rows}"


class _RMSNorm(nn.Module):
    """transformers' LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * weight, in float32."""

    def __init__(self, weight: torch.Tensor, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone().float(), requires_grad=False)
        self.eps = float(eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = (x * x).mean(-1, keepdim=True)  # x * x, not pow: docs/speed.md
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def _linear(*weights: torch.Tensor) -> nn.Linear:
    """A bias-free Linear whose output rows are the given weights' rows, concatenated."""
    w = torch.cat([t.detach().float() for t in weights], dim=0)
    lin = nn.Linear(w.shape[1], w.shape[0], bias=False)
    with torch.no_grad():
        lin.weight.copy_(w)
    lin.weight.requires_grad_(False)
    return lin


class _Layer(nn.Module):
    def __init__(
        self, layer: nn.Module, eps: float, heads: int, head_dim: int, kv_length: int
    ) -> None:
        super().__init__()
        attn, mlp = layer.self_attn, layer.mlp
        for lin in (attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj):
            if lin.bias is not None:
                raise NotImplementedError("T3's Llama has no attention biases (attention_bias)")
        self.heads, self.head_dim = heads, head_dim
        self.input_norm = _RMSNorm(layer.input_layernorm.weight, eps)
        self.qkv = _linear(attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight)
        self.o = _linear(attn.o_proj.weight)
        self.post_norm = _RMSNorm(layer.post_attention_layernorm.weight, eps)
        self.gate_up = _linear(mlp.gate_proj.weight, mlp.up_proj.weight)
        self.down = _linear(mlp.down_proj.weight)
        self.intermediate = mlp.gate_proj.weight.shape[0]
        # The KV cache of this layer for both CFG rows: runtime state (non-persistent, mutated).
        shape = (2, heads, kv_length, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

    def qkv_heads(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """q, k (rotated) and v as [B, heads, S, head_dim]."""
        b, s, _ = x.shape
        q, k, v = self.qkv(self.input_norm(x)).view(b, s, 3, self.heads, self.head_dim).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        return _rope(q, cos, sin), _rope(k, cos, sin), v

    def finish(self, x: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
        b, _, s, _ = att.shape
        x = x + self.o(att.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))
        gate, up = self.gate_up(self.post_norm(x)).split(self.intermediate, dim=-1)
        return x + self.down(F.silu(gate) * up)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """transformers' apply_rotary_pos_emb for one tensor; cos/sin [S, head_dim]."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class T3Graph(nn.Module):
    """T3's backbone + speech head over a KV cache; one instance serves prefill and decode.

    `forward(embeds [2, S, 1024], index [1] int32)`: with S > 1 it is a prefill from row 0 and
    `index` is the number of real rows; with S == 1 it is a decode step and `index` is the row
    it writes. (The two functions are this one forward traced at two static shapes.)
    """

    def __init__(self, t3: nn.Module, kv_length: int) -> None:
        super().__init__()
        tfmr = t3.tfmr
        cfg = tfmr.config
        if getattr(t3, "is_gpt", False):
            raise NotImplementedError("only T3's Llama backbone is ported (not the GPT-2 one)")
        heads = cfg.num_attention_heads
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
        if cfg.num_key_value_heads != heads:
            raise NotImplementedError("T3's Llama_520M has as many KV heads as query heads")
        eps = cfg.rms_norm_eps
        self.kv_length = int(kv_length)
        self.heads, self.head_dim = heads, head_dim
        self.layers = nn.ModuleList(
            _Layer(layer, eps, heads, head_dim, self.kv_length) for layer in tfmr.layers
        )
        self.norm = _RMSNorm(tfmr.norm.weight, eps)
        self.speech_head = _linear(t3.speech_head.weight)
        if t3.speech_head.bias is not None:
            raise NotImplementedError("T3's Llama speech_head has no bias")
        # RoPE tables from the publisher's own rotary module: absolute positions 0..kv-1.
        positions = torch.arange(self.kv_length).unsqueeze(0)
        probe = torch.zeros(1, dtype=torch.float32)
        with torch.no_grad():
            cos, sin = tfmr.rotary_emb(probe, position_ids=positions)
        self.register_buffer("rope_cos", cos[0].float().clone())
        self.register_buffer("rope_sin", sin[0].float().clone())

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
        cos, sin = self.rope_cos[:rows], self.rope_sin[:rows]
        causal = positions.unsqueeze(1) >= positions.unsqueeze(0)  # [P, P]: row i sees j <= i
        x = embeds
        for layer in self.layers:
            q, k, v = layer.qkv_heads(x, cos, sin)
            layer.k_cache.index_copy_(2, positions, k)
            layer.v_cache.index_copy_(2, positions, v)
            # Attention over the prompt's own keys: from row 0 they are the whole history.
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
            x = layer.finish(x, att)
        last = x.index_select(1, length.long() - 1)  # [2, 1, D]
        return self.speech_head(self.norm(last))[:, 0]

    def decode(self, embeds: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        pos = position.long()
        cos = self.rope_cos.index_select(0, pos)
        sin = self.rope_sin.index_select(0, pos)
        visible = (torch.arange(self.kv_length) <= pos).unsqueeze(0)  # [1, kv]: rows 0..position
        x = embeds
        for layer in self.layers:
            q, k, v = layer.qkv_heads(x, cos, sin)
            layer.k_cache.index_copy_(2, pos, k)
            layer.v_cache.index_copy_(2, pos, v)
            att = F.scaled_dot_product_attention(q, layer.k_cache, layer.v_cache, attn_mask=visible)
            x = layer.finish(x, att)
        return self.speech_head(self.norm(x))[:, 0]


def build_t3_graph(model: ChatterboxTTS, config: ChatterboxConfig) -> T3Graph:
    """The re-authored module (fp32, eval, caches zeroed) from a loaded ChatterboxTTS."""
    t3 = model.t3
    if t3.speech_head.weight.shape[0] != T3_VOCAB:
        raise ValueError(f"speech vocabulary {t3.speech_head.weight.shape[0]} != {T3_VOCAB}")
    if t3.hp.start_speech_token != START_SPEECH or t3.hp.stop_speech_token != STOP_SPEECH:
        raise ValueError("T3Config speech start/stop tokens differ from the ported ones")
    return T3Graph(t3, config.kv_length).eval()


def t3_graph_spec(model: ChatterboxTTS, config: ChatterboxConfig) -> GraphSpec:
    """Graph "t3": prefill_P{P} per prefill bucket + decode, one module (weights and KV state)."""
    module = build_t3_graph(model, config)
    if min(config.prefill_buckets) < 2:
        raise ValueError("prefill buckets must hold at least 2 rows (1 row is a decode)")
    if max(config.prefill_buckets) > config.kv_length:
        raise ValueError("a prefill bucket is longer than the KV cache")
    states = [f"layers.{i}.{name}" for i in range(len(module.layers)) for name in STATES]
    functions = []
    for bucket in prefill_table(config):
        rows = bucket["P"]
        inputs = {
            "embeds": torch.zeros(2, rows, HIDDEN),
            "length": torch.full((1,), rows, dtype=torch.int32),
        }
        functions.append(
            FunctionSpec(prefill_function_name(rows), module, inputs, ["logits"], states, bucket)
        )
    decode_inputs = {
        "embeds": torch.zeros(2, 1, HIDDEN),
        "position": torch.zeros(1, dtype=torch.int32),
    }
    functions.append(FunctionSpec("decode", module, decode_inputs, ["logits"], states))
    meta = {
        "kv_length": config.kv_length,
        "prefill_buckets": list(config.prefill_buckets),
        "layers": len(module.layers),
        "vocab": T3_VOCAB,
        "start_speech": START_SPEECH,
        "stop_speech": STOP_SPEECH,
    }
    return GraphSpec(GRAPH, functions, meta)
