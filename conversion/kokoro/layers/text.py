"""Kokoro's token-rate encoders re-authored for a padded token bucket.

`TextEncoder` (embedding, CNN, bi-LSTM -> t_en) and the prosody predictor's
`DurationEncoder` (bi-LSTM / AdaLayerNorm stack -> d). The publisher packs its LSTM inputs
to the real length; here the masked bi-LSTM does the same on a static length, and every
convolution sees zeros at the pad, as it would see its own zero padding unpadded.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .lstm import MaskedBiLSTM
from .norm import AdaLayerNorm, ChannelLayerNorm


class TextEncoder(nn.Module):
    """forward(ids [B, T] int, mask [B, T] float) -> t_en [B, C, T], zero at pad tokens."""

    def __init__(self, enc: nn.Module) -> None:
        super().__init__()
        self.embedding = enc.embedding
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        self.slopes: list[float] = []
        for block in enc.cnn:  # Sequential(conv, LayerNorm, LeakyReLU, Dropout)
            conv, norm, act = block[0], block[1], block[2]
            self.convs.append(conv)
            self.norms.append(ChannelLayerNorm(norm))
            self.slopes.append(float(act.negative_slope))
        self.lstm = MaskedBiLSTM(enc.lstm)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.unsqueeze(1)  # [B, 1, T]
        x = self.embedding(ids).transpose(1, 2) * m
        for conv, norm, slope in zip(self.convs, self.norms, self.slopes, strict=True):
            x = F.leaky_relu(norm(conv(x)), slope) * m
        return self.lstm(x.transpose(1, 2), mask).transpose(1, 2)


class DurationEncoder(nn.Module):
    """forward(d_en [B, T, C], s [B, S], mask [B, T] float) -> d [B, T, C + S], zero at pad."""

    def __init__(self, enc: nn.Module) -> None:
        super().__init__()
        blocks = list(enc.lstms)  # alternating nn.LSTM, AdaLayerNorm
        self.lstms = nn.ModuleList(MaskedBiLSTM(b) for b in blocks[0::2])
        self.norms = nn.ModuleList(AdaLayerNorm(b) for b in blocks[1::2])

    def forward(self, d_en: torch.Tensor, s: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        bsz, t, _ = d_en.shape
        style = s.unsqueeze(1).expand(bsz, t, s.shape[-1])
        m = mask.unsqueeze(-1)
        x = torch.cat([d_en, style], dim=-1) * m
        for lstm, norm in zip(self.lstms, self.norms, strict=True):
            x = torch.cat([norm(lstm(x, mask), s), style], dim=-1) * m
        return x
