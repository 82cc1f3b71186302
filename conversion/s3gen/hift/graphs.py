"""S3Gen's HiFT vocoder as two export-ready graphs over static mel-frame buckets.

    hift_f0     mel [1,80,F], n_frames [1] int32 -> f0 [1,F] (Hz; zero past n_frames)
    (host)      f0 -> harmonic source [1,1,480n] -> STFT (n_fft 16, hop 4): source_stft
                [1,18,120n+1] = cat(real, imag), zero-padded to 120F+1 (hift/host.py)
    hift_trunk  mel, source_stft [1,18,120F+1], n_frames -> magnitude, phase [1,9,120F+1]
    (host)      iSTFT(min(magnitude, 100) * exp(i*phase)) -> 480n samples, clamp +-0.99

The publisher's `HiFTGenerator` (`mel2wav`) is built from plain convolutions with zero
padding, so a mel right-padded to a bucket would leak its pad into the last real frames
(every conv reads a few frames past the real end, where the publisher reads its zero
padding). Each convolution here therefore zeroes its input past the real length first
(`n_frames` -> one mask per time resolution: F, 8F, 40F, 120F+1), which makes the real span
exact at any bucket; outputs past the real span are meaningless and the host drops them.

Geometry (publisher: upsample 8*5*3 = 120, iSTFT hop 4, n_fft 16): the trunk's last
upsampler gives 120F frames and `ReflectionPad1d((1, 0))` one more, matching the source's
STFT frames 480F/4 + 1 = 120F + 1, whose iSTFT gives 480F samples.

Rewrites (all exact in real arithmetic, measured ~1e-6 on the Linux runtime):
* weight norm (`torch.nn.utils.parametrizations`) folded: each layer copies the weight its
  parametrization computes. (Not `remove_parametrizations` on a deep copy: the copy shares
  the original's injected `Parametrized*` class, whose `weight` property removal deletes,
  which breaks the caller's model.)
* `ConvTranspose1d` as zero insertion + conv1d (exact, and 1.3-2x faster on the Linux runtime:
  `docs/tools/op_table.py --only conv_transpose1d zero_insert_conv1d`; strided ConvTranspose1d
  is reported to return zeros on Apple devices: docs/core-ai-on-linux.md section 4, trap 2);
* conv padding as concatenated zeros (the Linux runtime's `pad` op costs 3.5-8x a concat with
  zeros: `docs/tools/op_table.py --only constant_pad cat_zeros_pad`);
* `ReflectionPad1d((1, 0))` as a concat of x[..., 1]: it is load-bearing (it is what makes
  the trunk's and the source's frame counts meet at every bucket);
* ELU as where(x > 0, x, expm1(x)).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.export.program import GraphSpec, bucketed_functions
from conversion.core.export.rewrites import zero_pad
from conversion.core.host.buckets import Bucket, BucketTable

from ..sizes import MEL_HOP, S3GenBuckets

F0_GRAPH = "hift_f0"
TRUNK_GRAPH = "hift_trunk"
F0_FUNCTION = "f0"
TRUNK_FUNCTION = "trunk"
BUCKET_DIM = "F"
N_MELS = 80


def function_name(function: str, bucket: Bucket) -> str:
    """The entrypoint `bucketed_functions` gives `function` at `bucket` (e.g. `trunk_F256`)."""
    return f"{function}_{bucket.label}"


def bucket_table(config: S3GenBuckets) -> BucketTable:
    return BucketTable.one_dim(BUCKET_DIM, config.vocoder_frames)


def hift_of(model: nn.Module) -> nn.Module:
    """The HiFTGenerator of a ChatterboxTTS, an S3Gen (S3Token2Wav) or the generator itself."""
    if hasattr(model, "s3gen"):
        model = model.s3gen
    if hasattr(model, "mel2wav"):
        model = model.mel2wav
    if not hasattr(model, "f0_predictor") or not hasattr(model, "m_source"):
        raise TypeError(f"{type(model).__name__} is not a HiFTGenerator (nor holds one)")
    return model


def length_mask(n_frames: torch.Tensor, size: int, scale: int = 1, offset: int = 0):
    """float [1, 1, size]: 1 where position < n_frames * scale + offset (integer arithmetic)."""
    n = n_frames.to(torch.int32).reshape(-1, 1, 1) * scale + offset
    return (torch.arange(size, dtype=torch.int32).reshape(1, 1, -1) < n).float()


class MaskedConv1d(nn.Module):
    """`nn.Conv1d` (zero padding) whose input is zeroed past the real span first."""

    def __init__(self, conv: nn.Conv1d) -> None:
        super().__init__()
        if conv.padding_mode != "zeros" or conv.groups != 1:
            raise ValueError("only zero-padded, ungrouped convolutions are supported")
        self.weight = nn.Parameter(conv.weight.detach().clone(), requires_grad=False)
        bias = conv.bias.detach().clone() if conv.bias is not None else None
        self.bias = nn.Parameter(bias, requires_grad=False) if bias is not None else None
        # The publisher's source_downs carry numpy ints in their geometry: make them plain.
        self.stride = int(conv.stride[0])
        self.dilation = int(conv.dilation[0])
        self.pad = int(conv.padding[0])

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is not None:
            x = x * mask
        x = zero_pad(x, self.pad, self.pad)
        return F.conv1d(x, self.weight, self.bias, stride=self.stride, dilation=self.dilation)


class ZeroInsertConvTranspose1d(nn.Module):
    """`nn.ConvTranspose1d` (groups 1, no dilation) as zero insertion + conv1d with the
    flipped kernel; margins are concatenated zeros. Input is masked first (see module doc)."""

    def __init__(self, ct: nn.ConvTranspose1d) -> None:
        super().__init__()
        if ct.groups != 1 or ct.dilation[0] != 1 or ct.padding_mode != "zeros":
            raise ValueError("only ungrouped, undilated, zero-padded transposed convs")
        (k,), (s,), (p,), (op,) = ct.kernel_size, ct.stride, ct.padding, ct.output_padding
        w = ct.weight.detach().transpose(0, 1).flip(-1).contiguous()  # [C_out, C_in, K]
        self.weight = nn.Parameter(w, requires_grad=False)
        bias = ct.bias.detach().clone() if ct.bias is not None else None
        self.bias = nn.Parameter(bias, requires_grad=False) if bias is not None else None
        self.stride = int(s)
        self.left = int(k - 1 - p)
        # The stride-1 zeros inserted after the last sample count towards the right margin.
        self.right = int(k - 1 - p + op - (s - 1))
        if self.left < 0 or self.right < 0:
            raise ValueError(f"transposed conv geometry k={k} s={s} p={p} is not supported")

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x * mask
        b, c, t = x.shape
        if self.stride > 1:
            gap = x.new_zeros(b, c, t, self.stride - 1)
            x = torch.cat([x.unsqueeze(-1), gap], dim=-1).reshape(b, c, t * self.stride)
        x = zero_pad(x, self.left, self.right)
        return F.conv1d(x, self.weight, self.bias)


def elu(x: torch.Tensor) -> torch.Tensor:
    """nn.ELU(alpha=1): aten.elu has no Core AI lowering; expm1 does and is exact near 0."""
    return torch.where(x > 0, x, torch.expm1(x))


class F0Predictor(nn.Module):
    """The publisher's ConvRNNF0Predictor: 5 x (conv k3, ELU), linear, abs; masked."""

    INPUTS = ("mel", "n_frames")
    OUTPUTS = ("f0",)

    def __init__(self, predictor: nn.Module) -> None:
        super().__init__()
        convs = [m for m in predictor.condnet if isinstance(m, nn.Conv1d)]
        acts = [m for m in predictor.condnet if not isinstance(m, nn.Conv1d)]
        if len(convs) != len(acts) or not all(isinstance(a, nn.ELU) for a in acts):
            raise ValueError("unexpected ConvRNNF0Predictor layout (conv, ELU pairs)")
        if any(a.alpha != 1.0 for a in acts):
            raise ValueError("ELU with alpha != 1 is not supported")
        self.convs = nn.ModuleList(MaskedConv1d(c) for c in convs)
        self.classifier = copy.deepcopy(predictor.classifier).eval().requires_grad_(False)
        self.in_channels = convs[0].in_channels

    def forward(self, mel: torch.Tensor, n_frames: torch.Tensor) -> torch.Tensor:
        mask = length_mask(n_frames, mel.shape[-1])
        x = mel
        for conv in self.convs:
            x = elu(conv(x, mask))
        f0 = torch.abs(self.classifier(x.transpose(1, 2))[..., 0])  # Linear(C, 1): [B, T, 1]
        return f0 * mask[:, 0]

    def example_inputs(self, bucket: Mapping[str, int]) -> dict[str, torch.Tensor]:
        frames = bucket[BUCKET_DIM]
        return {
            "mel": torch.zeros(1, self.in_channels, frames),
            "n_frames": torch.tensor([frames], dtype=torch.int32),
        }


class Snake(nn.Module):
    """x + 1/(alpha + 1e-9) * sin(alpha x)^2, the publisher's expression and order."""

    def __init__(self, snake: nn.Module) -> None:
        super().__init__()
        if snake.alpha_logscale:
            raise ValueError("log-scale Snake alphas are not supported")
        alpha = snake.alpha.detach().clone().reshape(1, -1, 1)
        self.alpha = nn.Parameter(alpha, requires_grad=False)
        self.eps = float(snake.no_div_by_zero)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.sin(x * self.alpha)
        return x + (1.0 / (self.alpha + self.eps)) * (s * s)  # x * x, not pow: docs/speed.md


class ResBlock(nn.Module):
    """HiFi-GAN ResBlock with Snake; every conv input masked (Snake keeps 0 at 0)."""

    def __init__(self, blk: nn.Module) -> None:
        super().__init__()
        self.convs1 = nn.ModuleList(MaskedConv1d(c) for c in blk.convs1)
        self.convs2 = nn.ModuleList(MaskedConv1d(c) for c in blk.convs2)
        self.acts1 = nn.ModuleList(Snake(a) for a in blk.activations1)
        self.acts2 = nn.ModuleList(Snake(a) for a in blk.activations2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for c1, c2, a1, a2 in zip(self.convs1, self.convs2, self.acts1, self.acts2, strict=True):
            xt = c2(a2(c1(a1(x), mask)), mask)
            x = xt + x
        return x


class Trunk(nn.Module):
    """HiFTGenerator.decode up to (and including) its exp/sin: forward(mel, source_stft,
    n_frames) -> (magnitude, phase), each [1, n_fft/2+1, 120F+1]. The host clips the
    magnitude at 100 and runs the iSTFT, as the publisher's `_istft` does."""

    INPUTS = ("mel", "source_stft", "n_frames")
    OUTPUTS = ("magnitude", "phase")

    def __init__(self, hift: nn.Module) -> None:
        super().__init__()
        h = hift
        self.rates = [int(u.stride[0]) for u in h.ups]
        self.slope = float(h.lrelu_slope)
        self.num_kernels = int(h.num_kernels)
        self.n_fft = int(h.istft_params["n_fft"])
        self.hop = int(h.istft_params["hop_len"])
        self.bins = self.n_fft // 2 + 1
        self.in_channels = h.conv_pre.in_channels
        self.conv_pre = MaskedConv1d(h.conv_pre)
        self.ups = nn.ModuleList(ZeroInsertConvTranspose1d(u) for u in h.ups)
        self.source_downs = nn.ModuleList(MaskedConv1d(c) for c in h.source_downs)
        self.source_resblocks = nn.ModuleList(ResBlock(b) for b in h.source_resblocks)
        self.resblocks = nn.ModuleList(ResBlock(b) for b in h.resblocks)
        self.conv_post = MaskedConv1d(h.conv_post)
        pad = h.reflection_pad.padding
        if tuple(pad) != (1, 0):
            raise ValueError(f"expected ReflectionPad1d((1, 0)), got {pad}")

    def source_frames(self, frames: int) -> int:
        """STFT frames of the harmonic source for `frames` mel frames: 120F + 1."""
        return frames * math.prod(self.rates) + 1

    def forward(
        self, mel: torch.Tensor, source_stft: torch.Tensor, n_frames: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        frames = mel.shape[-1]
        n_up = len(self.ups)
        # One mask per time resolution: F, 8F, 40F, then 120F + 1 (the reflection pad's frame).
        masks = [length_mask(n_frames, frames)]
        rate = 1
        for i, r in enumerate(self.rates):
            rate *= r
            last = int(i == n_up - 1)
            masks.append(length_mask(n_frames, rate * frames + last, rate, last))
        s = source_stft * masks[-1]  # the host pads with zeros; enforce it
        x = self.conv_pre(mel, masks[0])
        for i in range(n_up):
            x = self.ups[i](F.leaky_relu(x, self.slope), masks[i])
            if i == n_up - 1:
                x = torch.cat([x[..., 1:2], x], dim=-1)  # ReflectionPad1d((1, 0))
            si = self.source_resblocks[i](self.source_downs[i](s), masks[i + 1])
            x = x + si
            xs = None
            for blk in self.resblocks[i * self.num_kernels : (i + 1) * self.num_kernels]:
                y = blk(x, masks[i + 1])
                xs = y if xs is None else xs + y
            x = xs / self.num_kernels
        x = self.conv_post(F.leaky_relu(x), masks[-1])  # default slope 0.01, as the publisher
        magnitude = torch.exp(x[:, : self.bins, :])
        phase = torch.sin(x[:, self.bins :, :])
        return magnitude, phase

    def example_inputs(self, bucket: Mapping[str, int]) -> dict[str, torch.Tensor]:
        frames = bucket[BUCKET_DIM]
        return {
            "mel": torch.zeros(1, self.in_channels, frames),
            "source_stft": torch.zeros(1, 2 * self.bins, self.source_frames(frames)),
            "n_frames": torch.tensor([frames], dtype=torch.int32),
        }


def _meta(table: BucketTable, module: nn.Module) -> dict:
    return {
        "buckets": table.to_json(),
        "bucket_dim": BUCKET_DIM,
        "inputs": list(module.INPUTS),
        "samples_per_frame": MEL_HOP,
    }


def f0_graph_spec(model: nn.Module, config: S3GenBuckets) -> GraphSpec:
    """Graph `hift_f0`: a function `f0_F{n}` per bucket of `config.vocoder_frames`."""
    module = F0Predictor(hift_of(model).f0_predictor).eval()
    table = bucket_table(config)
    functions = bucketed_functions(
        F0_FUNCTION, module, table, module.example_inputs, module.OUTPUTS
    )
    return GraphSpec(F0_GRAPH, functions, meta=_meta(table, module))


def trunk_graph_spec(model: nn.Module, config: S3GenBuckets) -> GraphSpec:
    """Graph `hift_trunk`: a function `trunk_F{n}` per bucket of `config.vocoder_frames`."""
    hift = hift_of(model)
    module = Trunk(hift).eval()
    rate = math.prod(module.rates) * module.hop
    if rate != MEL_HOP:
        raise ValueError(f"HiFT makes {rate} samples per mel frame, expected {MEL_HOP}")
    table = bucket_table(config)
    functions = bucketed_functions(
        TRUNK_FUNCTION, module, table, module.example_inputs, module.OUTPUTS
    )
    return GraphSpec(TRUNK_GRAPH, functions, meta=_meta(table, module))
