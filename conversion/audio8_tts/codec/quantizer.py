"""The codec's quantizer: cosine-nearest vector quantizers, the residual stack over them and the
down/upsampling wrapper with its pre/post transformers (latent [B,1024,N/512] <-> codes
[B,10,T]); the layers come from layers.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .config import CodecConfig
from .layers import (
    CausalConv1d,
    CausalConvTranspose1d,
    ConvNeXtBlock,
    ConvParams,
    WindowTransformer,
)


class VectorQuantizer(nn.Module):
    def __init__(self, dim: int, size: int, code_dim: int) -> None:
        super().__init__()
        self.size = size
        self.in_proj = ConvParams((code_dim, dim, 1), "legacy")
        self.out_proj = ConvParams((dim, code_dim, 1), "legacy")
        self.codebook = nn.Embedding(size, code_dim)

    def project_out(self, vectors: torch.Tensor) -> torch.Tensor:
        """[B, code_dim, T] -> [B, dim, T] (the 1x1 out_proj)."""
        return F.conv1d(vectors, self.out_proj.effective_weight(), self.out_proj.bias)

    def decode_code(self, idx: torch.Tensor) -> torch.Tensor:
        return self.project_out(self.codebook(idx).transpose(1, 2))

    def nearest(self, projected: torch.Tensor) -> torch.Tensor:
        """[B, code_dim, T] -> indices [B, T]: the publisher's distance form on unit vectors."""
        b, _, length = projected.shape
        # F.normalize written out (x / max(||x||, 1e-12)): the converter may drop its eps clamp.
        flat = projected.transpose(1, 2).reshape(b * length, -1)
        flat = flat / torch.linalg.vector_norm(flat, dim=1, keepdim=True).clamp_min(1e-12)
        book = self.codebook.weight
        book = book / torch.linalg.vector_norm(book, dim=1, keepdim=True).clamp_min(1e-12)
        dist = (
            flat.pow(2).sum(1, keepdim=True)
            - 2 * flat @ book.t()
            + book.pow(2).sum(1, keepdim=True).t()
        )
        return (-dist).argmax(1).reshape(b, length)

    def forward(self, z: torch.Tensor):
        projected = F.conv1d(z, self.in_proj.effective_weight(), self.in_proj.bias)
        idx = self.nearest(projected)
        quantized = self.codebook(idx).transpose(1, 2)
        quantized = projected + (quantized - projected)  # the straight-through form's values
        return self.project_out(quantized), idx


class ResidualQuantizer(nn.Module):
    def __init__(self, dim: int, books: int, size: int, code_dim: int) -> None:
        super().__init__()
        self.size = size
        self.quantizers = nn.ModuleList(VectorQuantizer(dim, size, code_dim) for _ in range(books))

    def forward(self, z):
        total, residual, codes = 0.0, z, []
        for q in self.quantizers:
            quantized, idx = q(residual)
            total = total + quantized
            residual = residual - quantized
            codes.append(idx)
        return total, torch.stack(codes, dim=1)

    def from_codes(self, codes: torch.Tensor) -> torch.Tensor:
        out = 0.0
        for i, q in enumerate(self.quantizers):
            out = out + q.decode_code(codes[:, i])
        return out


class DownsampleQuantizer(nn.Module):
    def __init__(self, cfg: CodecConfig) -> None:
        super().__init__()
        d = cfg.latent_dim
        self.semantic_quantizer = ResidualQuantizer(
            d, cfg.semantic_books, cfg.semantic_size, cfg.codebook_dim
        )
        self.quantizer = ResidualQuantizer(
            d, cfg.residual_books, cfg.residual_size, cfg.codebook_dim
        )
        self.downsample = nn.Sequential(
            *(
                nn.Sequential(CausalConv1d(d, d, s, stride=s, norm="none"), ConvNeXtBlock(d))
                for s in cfg.quant_strides
            )
        )
        self.upsample = nn.Sequential(
            *(
                nn.Sequential(CausalConvTranspose1d(d, d, s, s, norm="none"), ConvNeXtBlock(d))
                for s in cfg.quant_strides
            )
        )
        self.pre_module = WindowTransformer(d, cfg.quant_layers, cfg.window, cfg)
        self.post_module = WindowTransformer(d, cfg.quant_layers, cfg.window, cfg)
        self.semantic_books = cfg.semantic_books

    def encode(self, z: torch.Tensor) -> torch.Tensor:
        z = self.pre_module(self.downsample(z))
        semantic, semantic_codes = self.semantic_quantizer(z)
        _, residual_codes = self.quantizer(z - semantic)
        return torch.cat((semantic_codes, residual_codes), dim=1)

    def clamp(self, codes: torch.Tensor) -> torch.Tensor:
        n = self.semantic_books
        return torch.cat(
            (
                codes[:, :n].clamp(0, self.semantic_quantizer.size - 1),
                codes[:, n:].clamp(0, self.quantizer.size - 1),
            ),
            dim=1,
        )

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        codes = self.clamp(codes)
        n = self.semantic_books
        z = self.semantic_quantizer.from_codes(codes[:, :n]) + self.quantizer.from_codes(
            codes[:, n:]
        )
        return self.upsample(self.post_module(z))
