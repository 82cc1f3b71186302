"""Small graphs that exercise the toolkit end to end: doctor, `gate core`, `bench core`, tests.

They are at toy size so they run in seconds through the Linux runtime, but each stands for a
real pattern: a conv stack with ELU (vocoders), a Linear stack big enough for int8 to matter,
and a 2-layer decoder whose prefill and decode share one KV state (T3, the slow AR).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.export.precision import Precision
from conversion.core.export.program import FunctionSpec, GraphSpec
from conversion.core.host.dsp import ConvISTFT, ConvSTFT
from conversion.core.host.sampling import GumbelSampler, SamplingConfig


class ConvElu(nn.Module):
    """conv1d -> ELU -> conv1d -> tanh: the vocoder pattern, ELU included (decomposed)."""

    def __init__(self, channels: int = 16, hidden: int = 32) -> None:
        super().__init__()
        self.pre = nn.Conv1d(channels, hidden, 7, padding=3)
        self.act = nn.ELU()
        self.post = nn.Conv1d(hidden, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.post(self.act(self.pre(x))))


class Mlp(nn.Module):
    """Two Linear layers with enough weights (> 1,024 each) to be int8-quantized."""

    def __init__(self, width: int = 256, hidden: int = 512) -> None:
        super().__init__()
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class _Layer(nn.Module):
    def __init__(self, dim: int, heads: int, max_len: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = Mlp(dim, 2 * dim)
        shape = (1, heads, max_len, self.head_dim)
        # Non-persistent buffers mutated in forward become runtime state.
        self.register_buffer("k_cache", torch.zeros(shape), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape), persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        # index_copy_ at positions: the state write the runtime takes (advanced-index
        # assignment converts but is a known runtime trap).
        self.k_cache.index_copy_(2, positions, k)
        self.v_cache.index_copy_(2, positions, v)
        att = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=mask)
        x = x + self.out(att.transpose(1, 2).reshape(b, s, d))
        return x + self.ff(self.norm2(x))


class TinyDecoder(nn.Module):
    """A 2-layer causal LM over a KV cache of `max_len` positions.

    `forward(tokens [1, S] int32, start [1] int32)` writes positions start..start+S-1 and
    returns the logits of every row. Prefill and decode are the same forward at S = P and
    S = 1: exported as two entrypoints of one asset, they share the caches by name.
    """

    def __init__(
        self, vocab: int = 64, dim: int = 64, heads: int = 4, layers: int = 2, max_len: int = 32
    ) -> None:
        super().__init__()
        self.max_len = max_len
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(_Layer(dim, heads, max_len) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        s = tokens.shape[1]
        positions = start.long() + torch.arange(s)
        # Row i sees cache slots 0..start+i: causal inside the new rows, everything before.
        mask = torch.arange(self.max_len).unsqueeze(0) <= positions.unsqueeze(1)
        x = self.embed(tokens.long())
        for layer in self.layers:
            x = layer(x, positions, mask)
        return self.head(self.norm(x))


def seeded(module: nn.Module, seed: int) -> nn.Module:
    """Re-initialise `module` from `seed`: deterministic weights that give non-trivial outputs.

    Matrices get N(0, 1/fan_in) (embeddings N(0, 1)), vectors N(0, 0.02²); norms stay at 1/0.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm1d)):
                continue
            for p in m.parameters(recurse=False):
                if isinstance(m, nn.Embedding):
                    scale = 1.0
                elif p.dim() >= 2:
                    scale = p[0].numel() ** -0.5
                else:
                    scale = 0.02
                p.copy_(torch.randn(p.shape, generator=g) * scale)
    return module.eval()


def conv_graph(seed: int = 0, frames: int = 64) -> tuple[GraphSpec, dict[str, torch.Tensor]]:
    torch.manual_seed(seed)
    module = seeded(ConvElu(), seed)
    inputs = {"x": torch.randn(1, 16, frames)}
    return GraphSpec("conv", [FunctionSpec("main", module, inputs, ["y"])]), inputs


def mlp_graph(seed: int = 0, rows: int = 8) -> tuple[GraphSpec, dict[str, torch.Tensor]]:
    torch.manual_seed(seed)
    module = seeded(Mlp(), seed)
    inputs = {"x": torch.randn(rows, 256)}
    return GraphSpec("mlp", [FunctionSpec("main", module, inputs, ["y"])]), inputs


def decoder_graph(seed: int = 0, prompt: int = 8) -> tuple[GraphSpec, TinyDecoder]:
    module = seeded(TinyDecoder(), seed)
    zero = torch.zeros(1, dtype=torch.int32)
    prefill = FunctionSpec(
        "prefill",
        module,
        {"tokens": torch.zeros(1, prompt, dtype=torch.int32), "start": zero},
        ["logits"],
    )
    decode = FunctionSpec(
        "decode",
        module,
        {"tokens": torch.zeros(1, 1, dtype=torch.int32), "start": zero},
        ["logits"],
    )
    return GraphSpec("decoder", [prefill, decode], meta={"prompt": prompt}), module


def reset_caches(module: nn.Module) -> None:
    for name, buf in module.named_buffers():
        if name.endswith("_cache"):
            buf.zero_()


@torch.no_grad()
def greedy_eager(module: TinyDecoder, prompt: list[int], steps: int) -> tuple[list[int], list]:
    """Eager greedy decode: the reference the exported decoder must reproduce token for token."""
    reset_caches(module)
    tokens = torch.tensor([prompt], dtype=torch.int32)
    logits = module(tokens, torch.zeros(1, dtype=torch.int32))[0, -1]
    out, all_logits = [], [logits.numpy().copy()]
    for i in range(steps):
        nxt = int(logits.argmax())
        out.append(nxt)
        start = torch.tensor([len(prompt) + i], dtype=torch.int32)
        logits = module(torch.tensor([[nxt]], dtype=torch.int32), start)[0, -1]
        all_logits.append(logits.numpy().copy())
    return out, all_logits


def greedy_runtime(session, prompt: list[int], steps: int, graph: str = "decoder"):
    """The same greedy loop through a Session (or IsolatedSession) over the exported asset."""
    import numpy as np

    session.reset_state(graph)
    zero = np.zeros(1, np.int32)
    logits = session.run(graph, "prefill", {"tokens": np.array([prompt]), "start": zero})
    logits = logits["logits"][0, -1]
    out, all_logits = [], [logits]
    for i in range(steps):
        nxt = int(logits.argmax())
        out.append(nxt)
        feed = {"tokens": np.array([[nxt]]), "start": np.array([len(prompt) + i])}
        logits = session.run(graph, "decode", feed)["logits"][0, -1]
        all_logits.append(logits)
    return out, all_logits


# -- the self-test bundle's graphs -----------------------------------------------------------

SAMPLER_VOCAB = 1024
SAMPLER_CONFIG = SamplingConfig(temperature=0.8, top_p=0.95, min_p=0.05, repetition_penalty=1.2)
STFT = {"n_fft": 20, "hop_length": 5}  # Kokoro's generator STFT
STFT_SAMPLES = 2400


class StftRoundTrip(torch.nn.Module):
    """Waveform -> conv-basis STFT -> magnitude/phase -> conv-basis iSTFT, all in-graph."""

    def __init__(self) -> None:
        super().__init__()
        frames = STFT_SAMPLES // STFT["hop_length"] + 1
        self.stft = ConvSTFT(**STFT, mag_phase=True)
        self.istft = ConvISTFT(**STFT, mag_phase=True, frames=frames, length=STFT_SAMPLES)

    def forward(self, x: torch.Tensor):
        mag, phase = self.stft(x)
        return mag, self.istft(mag, phase)


def test_signal(seed: int) -> np.ndarray:
    """A chirp plus a little noise: every STFT bin sees energy."""
    t = np.arange(STFT_SAMPLES) / 24000.0
    rng = np.random.default_rng(seed)
    chirp = np.sin(2 * np.pi * (200 + 4000 * t) * t)
    return (0.5 * chirp + 0.05 * rng.standard_normal(t.shape)).astype(np.float32)[None]


def graph_specs(seed: int) -> dict[str, tuple[GraphSpec, Precision]]:
    """Every self-test graph with the precision `gate core` checks it at."""
    conv, _ = conv_graph(seed)
    mlp, _ = mlp_graph(seed)
    dec, _ = decoder_graph(seed)
    sampler = GumbelSampler(SAMPLER_VOCAB, SAMPLER_CONFIG)
    sampler_inputs = sampler.example_inputs(batch=1, window=16)
    stft = GraphSpec(
        "stft",
        [
            FunctionSpec(
                "main", StftRoundTrip(), {"x": torch.from_numpy(test_signal(seed))}, ["mag", "y"]
            )
        ],
    )
    return {
        "conv": (conv, Precision.FP32),
        "mlp": (mlp, Precision.FP32),
        "mlp_fp16": (GraphSpec("mlp_fp16", mlp.functions), Precision.FP16),
        "mlp_int8": (GraphSpec("mlp_int8", mlp.functions), Precision.INT8),
        "decoder": (dec, Precision.FP32),
        "decoder_int8": (GraphSpec("decoder_int8", dec.functions, dec.meta), Precision.INT8),
        "sampler": (
            GraphSpec("sampler", [FunctionSpec("main", sampler, sampler_inputs, ["token"])]),
            Precision.FP32,
        ),
        "stft": (stft, Precision.FP32),
    }
