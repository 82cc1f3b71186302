"""Kokoro-82M as three export-ready graphs over static buckets.

The one data-dependent length (durations -> frames) is where the graph is cut:

    predictor  ids [1,T] int32, ref_s [1,256], n_tokens [1] int32
               -> duration [1,T] (sigmoid sum, before speed and rounding),
                  d [1,T,640], t_en [1,512,T]
    (host)     pred_dur = round(duration / speed).clamp(min=1); aln [1,T,L] one-hot
    prosody    d, t_en, aln, ref_s, n_frames [1] int32 -> asr [1,512,L], F0 [1,2L], N [1,2L]
    (host)     har [1,22,120L+1] = cat(|STFT|, angle STFT) of the harmonic source, computed over
               the real 600·n_frames samples and zero beyond
    vocoder    asr, F0, N, har, ref_s, n_frames -> waveform [1,600L] (zero past 600·n_frames)

Each graph is built from a loaded `kokoro.KModel` (copied, weight norm folded; the caller's
model is not touched) and runs at any bucket size: one asset per graph holds a function per
bucket (`graph_specs`). Inputs are right-padded to the bucket; outputs are exact on the real
span and zero on the pad. The bucket tables (`BUCKETS`) were chosen by measuring each graph
on the Linux Core AI runtime (the table beside them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from conversion.core.errors import UserError
from conversion.core.export.program import GraphSpec, bucketed_functions
from conversion.core.export.rewrites import concat_padded_convs
from conversion.core.host.buckets import Bucket, BucketTable

from .layers.albert import AlbertEncoder
from .layers.blocks import AdainResBlock
from .layers.conv import folded_copy
from .layers.generator import Generator
from .layers.lstm import MaskedBiLSTM
from .layers.norm import length_mask, make_span
from .layers.text import DurationEncoder, TextEncoder

GRAPHS = ("predictor", "prosody", "vocoder")

# Measured on the Linux Core AI runtime (its single-threaded reference backend) and in eager
# torch on one thread, seeded random weights, fp32, one call after a warm-up, on a shared
# 2-core machine (runtime/eager ≈ 15-17x, as docs/core-ai-on-linux.md says):
#
#   graph      bucket        runtime ms   eager ms   export s (this function)
#   predictor  T32                  476         90    13
#   predictor  T64                  694        160    21
#   predictor  T128               1,326        292    41
#   predictor  T256               2,815        575    81
#   predictor  T512               5,832      1,183   200
#   prosody    T32  L128            454         42     9
#   prosody    T64  L256            865         77    17
#   prosody    T128 L512          1,849        151    30
#   prosody    T512 L2048         7,673        634   148
#   vocoder    L16                4,222        283     7
#   vocoder    L32                8,743        539     7
#   vocoder    L64               18,964      1,045    10
#   vocoder    L128              37,606      2,215    10
#   vocoder    L256              73,389      4,383     9
#   vocoder    L2048         (~10 min)     ~35,000    11   (219 MB asset, fp32)
#
# (The table predates issue 12's rewrites, docs/speed.md.) Exporting every bucket took ~14 min
# here one graph after another before issue 12 (not re-timed since, with two processes): the
# unrolled LSTMs make the predictor and prosody exports grow with T and L; a graph loop would
# not, but coreai doctor rules it FATAL on devices (docs/speed.md).
#
# The vocoder dominates and is linear in L with no fixed cost to speak of (~290 ms a frame
# here), so every padded frame is paid in full: its table steps by ×1.5 (mean padding ~18%
# for lengths spread evenly in log, against ~28% at ×2), from 16 frames (0.4 s, a short
# phrase) to 2048 (51 s). Predictor and prosody cost a few percent of the vocoder at the
# same utterance and step by ×2. Token buckets reach ALBERT's 512 positions (510 phonemes +
# 2 boundary tokens); prosody pairs L = 4·T (~3-4 frames a token at speed 1, 25 ms a frame):
# slower speech selects a larger pair, and past (512, 2048) the host splits the text.
BUCKETS: dict[str, BucketTable] = {
    "predictor": BucketTable.one_dim("T", [32, 64, 128, 256, 512]),
    "prosody": BucketTable([{"T": t, "L": 4 * t} for t in (32, 64, 128, 256, 512)]),
    "vocoder": BucketTable.one_dim(
        "L", [16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048]
    ),
}


def function_name(graph: str, bucket: Bucket) -> str:
    """The entrypoint of `graph` at `bucket`, as `bucketed_functions` names it."""
    return f"{graph}_{bucket.label}"


def _style_dim(kmodel: nn.Module) -> int:
    return kmodel.predictor.F0[0].norm1.fc.in_features


class Predictor(nn.Module):
    """ALBERT + duration encoder + duration head + text encoder, over a token bucket."""

    NAME = "predictor"
    INPUTS = ("ids", "ref_s", "n_tokens")
    OUTPUTS = ("duration", "d", "t_en")

    def __init__(self, kmodel: nn.Module) -> None:
        super().__init__()
        self.style_dim = _style_dim(kmodel)
        self.bert = AlbertEncoder(folded_copy(kmodel.bert))
        self.bert_encoder = folded_copy(kmodel.bert_encoder)
        pred = kmodel.predictor
        self.duration_encoder = DurationEncoder(folded_copy(pred.text_encoder))
        self.lstm = MaskedBiLSTM(folded_copy(pred.lstm))
        self.duration_proj = folded_copy(pred.duration_proj.linear_layer)
        self.text_encoder = TextEncoder(folded_copy(kmodel.text_encoder))
        self.d_width = pred.lstm.input_size
        self.t_en_width = kmodel.text_encoder.lstm.hidden_size * 2
        concat_padded_convs(self)  # conv padding as concatenated zeros: docs/speed.md

    def forward(
        self, ids: torch.Tensor, ref_s: torch.Tensor, n_tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        t = ids.shape[1]
        real = length_mask(n_tokens, t)  # [1, T] bool
        mask = real.to(ref_s.dtype)
        s = ref_s[:, self.style_dim :]
        d_en = self.bert_encoder(self.bert(ids, real))
        d = self.duration_encoder(d_en, s, mask)
        logits = self.duration_proj(self.lstm(d, mask))
        duration = torch.sigmoid(logits).sum(-1) * mask
        t_en = self.text_encoder(ids, mask)
        return duration, d, t_en

    def example_inputs(self, bucket: Mapping[str, int]) -> dict[str, torch.Tensor]:
        t = bucket["T"]
        return {
            "ids": torch.zeros(1, t, dtype=torch.int32),
            "ref_s": torch.zeros(1, 2 * self.style_dim),
            "n_tokens": torch.tensor([t], dtype=torch.int32),
        }


class Prosody(nn.Module):
    """Alignment products, the shared frame-rate bi-LSTM and the F0 / N stacks."""

    NAME = "prosody"
    INPUTS = ("d", "t_en", "aln", "ref_s", "n_frames")
    OUTPUTS = ("asr", "F0", "N")

    def __init__(self, kmodel: nn.Module) -> None:
        super().__init__()
        pred = kmodel.predictor
        self.style_dim = _style_dim(kmodel)
        self.shared = MaskedBiLSTM(folded_copy(pred.shared))
        self.f0_blocks = nn.ModuleList(AdainResBlock(b) for b in folded_copy(pred.F0))
        self.n_blocks = nn.ModuleList(AdainResBlock(b) for b in folded_copy(pred.N))
        self.f0_proj = folded_copy(pred.F0_proj)
        self.n_proj = folded_copy(pred.N_proj)
        self.d_width = pred.shared.input_size
        self.t_en_width = kmodel.text_encoder.lstm.hidden_size * 2
        concat_padded_convs(self)  # conv padding as concatenated zeros: docs/speed.md

    def forward(
        self,
        d: torch.Tensor,
        t_en: torch.Tensor,
        aln: torch.Tensor,
        ref_s: torch.Tensor,
        n_frames: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        frames = aln.shape[-1]
        s = ref_s[:, self.style_dim :]
        spans = [make_span(n_frames, frames, ref_s.dtype)]
        en = torch.matmul(d.transpose(1, 2), aln)  # [1, 640, L]; pad frames are 0
        x = self.shared(en.transpose(1, 2), spans[0].mask[:, 0]).transpose(1, 2)
        curves = []
        for blocks, proj in ((self.f0_blocks, self.f0_proj), (self.n_blocks, self.n_proj)):
            y, span = x, spans[0]
            for blk in blocks:
                out = span
                if blk.upsample:
                    out = make_span(n_frames, 2 * frames, ref_s.dtype, scale=2)
                y, span = blk(y, s, span, out), out
            curves.append(proj(y)[:, 0] * span.mask[:, 0])
        asr = torch.matmul(t_en, aln)
        return asr, curves[0], curves[1]

    def example_inputs(self, bucket: Mapping[str, int]) -> dict[str, torch.Tensor]:
        t, frames = bucket["T"], bucket["L"]
        return {
            "d": torch.zeros(1, t, self.d_width),
            "t_en": torch.zeros(1, self.t_en_width, t),
            "aln": torch.zeros(1, t, frames),
            "ref_s": torch.zeros(1, 2 * self.style_dim),
            "n_frames": torch.tensor([frames], dtype=torch.int32),
        }


class Vocoder(nn.Module):
    """iSTFTNet decoder: F0/N convs, encode/decode AdaIN blocks, generator, in-graph iSTFT."""

    NAME = "vocoder"
    INPUTS = ("asr", "F0", "N", "har", "ref_s", "n_frames")
    OUTPUTS = ("waveform",)

    def __init__(self, kmodel: nn.Module) -> None:
        super().__init__()
        dec = folded_copy(kmodel.decoder)
        self.style_dim = _style_dim(kmodel)
        self.f0_conv, self.n_conv = dec.F0_conv, dec.N_conv
        self.encode = AdainResBlock(dec.encode)
        self.asr_res = dec.asr_res
        self.decode = nn.ModuleList(AdainResBlock(b) for b in dec.decode)
        self.generator = Generator(dec.generator)
        self.rates = Generator.upsample_factors(dec.generator)
        self.hop = dec.generator.stft.hop_length
        self.asr_width = dec.asr_res[0].in_channels
        self.har_width = dec.generator.noise_convs[0].in_channels
        concat_padded_convs(self)  # conv padding as concatenated zeros: docs/speed.md

    def har_frames(self, frames: int) -> int:
        """STFT frames of the harmonic source for `frames` alignment frames (120·L + 1)."""
        return 2 * frames * math.prod(self.rates) + 1

    def samples(self, frames: int) -> int:
        """Waveform samples for `frames` alignment frames (600·L)."""
        return 2 * frames * math.prod(self.rates) * self.hop

    def forward(
        self,
        asr: torch.Tensor,
        F0: torch.Tensor,  # noqa: N803 (the publisher's names)
        N: torch.Tensor,  # noqa: N803
        har: torch.Tensor,
        ref_s: torch.Tensor,
        n_frames: torch.Tensor,
    ) -> torch.Tensor:
        frames, dt = asr.shape[-1], ref_s.dtype
        s = ref_s[:, : self.style_dim]
        at_l = make_span(n_frames, frames, dt)
        at_2l = make_span(n_frames, 2 * frames, dt, scale=2)
        gen_spans = [at_2l]
        rate = 2
        for i, r in enumerate(self.rates):
            rate *= r
            last = i == len(self.rates) - 1  # the reflection pad adds one frame
            gen_spans.append(make_span(n_frames, rate * frames + last, dt, rate, int(last)))
        gen_spans.append(make_span(n_frames, rate * self.hop * frames, dt, rate * self.hop))
        f0 = self.f0_conv(F0.unsqueeze(1))
        n = self.n_conv(N.unsqueeze(1))
        x = self.encode(torch.cat([asr, f0, n], dim=1), s, at_l, at_l)
        asr_res = self.asr_res(asr)
        span, residual = at_l, True
        for blk in self.decode:
            if residual:
                x = torch.cat([x, asr_res, f0, n], dim=1)
            out = at_2l if blk.upsample else span
            x, span = blk(x, s, span, out), out
            residual = residual and not blk.upsample
        har = har * gen_spans[-2].mask  # the host's har is zero past the real frames; enforce it
        return self.generator(x, s, har, gen_spans)

    def example_inputs(self, bucket: Mapping[str, int]) -> dict[str, torch.Tensor]:
        frames = bucket["L"]
        return {
            "asr": torch.zeros(1, self.asr_width, frames),
            "F0": torch.zeros(1, 2 * frames),
            "N": torch.zeros(1, 2 * frames),
            "har": torch.zeros(1, self.har_width, self.har_frames(frames)),
            "ref_s": torch.zeros(1, 2 * self.style_dim),
            "n_frames": torch.tensor([frames], dtype=torch.int32),
        }


GRAPH_CLASSES: dict[str, type[nn.Module]] = {
    "predictor": Predictor,
    "prosody": Prosody,
    "vocoder": Vocoder,
}


def graph_specs(
    kmodel: nn.Module,
    buckets: Mapping[str, BucketTable] | None = None,
    graphs: Sequence[str] = GRAPHS,
) -> list[GraphSpec]:
    """One `GraphSpec` per graph, each holding a function per bucket of its table."""
    buckets = BUCKETS if buckets is None else buckets
    unknown = [g for g in graphs if g not in GRAPH_CLASSES]
    if unknown:
        raise UserError(f"unknown Kokoro graph(s) {unknown}: choose from {list(GRAPHS)}")
    specs = []
    for name in graphs:
        if name not in buckets:
            raise UserError(f"no bucket table for graph '{name}' (have {sorted(buckets)})")
        module = GRAPH_CLASSES[name](kmodel).eval()
        table = buckets[name]
        functions = bucketed_functions(name, module, table, module.example_inputs, module.OUTPUTS)
        meta = {"buckets": table.to_json(), "inputs": list(module.INPUTS)}
        specs.append(GraphSpec(name, functions, meta=meta))
    return specs
