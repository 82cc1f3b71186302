"""Kokoro's PL-BERT (an ALBERT encoder) re-authored for export over a padded token bucket.

The publisher runs `transformers.AlbertModel` unpadded. Here the same weights run at a static
length with the pad tokens masked out of every attention's keys, which leaves the real
tokens' outputs as they are unpadded (softmax over the real keys only; positions are
absolute). Plain ops only: embedding lookups, linears, layer norms and SDPA with a bool mask.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

# transformers' "gelu_new" is the tanh approximation of GELU.
_GELU_APPROXIMATE = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu": "none"}


class AlbertEncoder(nn.Module):
    """forward(ids [B, T] int, real [B, T] bool) -> last hidden state [B, T, hidden].

    Built from the publisher's `CustomAlbert` (an `AlbertModel`); the pooler is not used.
    """

    def __init__(self, bert: nn.Module) -> None:
        super().__init__()
        cfg = bert.config
        if cfg.num_hidden_groups != 1 or cfg.inner_group_num != 1:
            raise ValueError("only ALBERT with one shared layer (Kokoro's PL-BERT) is supported")
        if cfg.hidden_act not in _GELU_APPROXIMATE:
            raise ValueError(f"unsupported ALBERT activation {cfg.hidden_act!r}")
        emb = bert.embeddings
        self.word = emb.word_embeddings
        self.position = emb.position_embeddings
        # Token types are all zero in Kokoro: their embedding is one constant row.
        self.register_buffer("token_type", emb.token_type_embeddings.weight[0].detach().clone())
        self.emb_norm = emb.LayerNorm
        self.mapping = bert.encoder.embedding_hidden_mapping_in
        layer = bert.encoder.albert_layer_groups[0].albert_layers[0]
        att = layer.attention
        self.query, self.key, self.value, self.dense = att.query, att.key, att.value, att.dense
        self.att_norm = att.LayerNorm
        self.ffn, self.ffn_output = layer.ffn, layer.ffn_output
        self.ffn_norm = layer.full_layer_layer_norm
        self.gelu = _GELU_APPROXIMATE[cfg.hidden_act]
        self.heads = cfg.num_attention_heads
        self.layers = cfg.num_hidden_layers
        self.max_positions = cfg.max_position_embeddings

    def forward(self, ids: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        bsz, t = ids.shape
        if t > self.max_positions:
            raise ValueError(f"{t} tokens exceed ALBERT's {self.max_positions} positions")
        # Same summation order as the publisher: (word + token type) + position.
        x = self.word(ids) + self.token_type + self.position.weight[:t]
        h = self.mapping(self.emb_norm(x))
        keys = real.reshape(bsz, 1, 1, t)  # pad tokens are never attended to
        for _ in range(self.layers):  # one layer's weights, shared by every layer
            h = self._layer(h, keys)
        return h

    def _layer(self, h: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        bsz, t, width = h.shape
        head = width // self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.reshape(bsz, t, self.heads, head).transpose(1, 2)

        ctx = F.scaled_dot_product_attention(
            split(self.query(h)), split(self.key(h)), split(self.value(h)), attn_mask=keys
        )
        a = self.att_norm(h + self.dense(ctx.transpose(1, 2).reshape(bsz, t, width)))
        f = self.ffn_output(F.gelu(self.ffn(a), approximate=self.gelu))
        return self.ffn_norm(f + a)
