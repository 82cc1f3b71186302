"""Measure which ops survive voxport's export path and the Linux Core AI runtime, and how fast.

Each case is one tiny module. For every case the script records: does it convert (or does the
lint / torch.export / the converter refuse it, and with what message), does it run, the max
absolute error against eager torch on the same inputs, and the median time per call on the
Linux runtime (`Session.run`) next to eager torch (`torch.no_grad()`, one thread, like the
runtime).

The cases run in a worker process; if the runtime aborts the worker (a Swift fatal error kills
the whole process) the case is recorded as a crash and a fresh worker takes the rest.

    .venv/bin/python docs/tools/op_table.py > /tmp/op_table.md       # the whole table
    .venv/bin/python docs/tools/op_table.py --only atan2 cumsum       # a few cases
    .venv/bin/python docs/tools/op_table.py --list                    # case names

Markdown goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
MARK = "@@op_table "
CASE_TIMEOUT_S = 240.0
TIME_BUDGET_S = 3.0  # per case and side (runtime / eager), after one warm-up call
MIN_REPS, MAX_REPS = 5, 25
EAGER_THREADS = 1


# -- modules ---------------------------------------------------------------------------------


class Fn(nn.Module):
    """Wrap a function of the inputs (plus optional submodules) as a module."""

    def __init__(self, fn: Callable, **mods: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleDict(mods)

    def forward(self, *args):
        return self.fn(self.mods, *args)


class FirstOutput(nn.Module):
    """An RNN's output sequence only (not its final state)."""

    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


class ZeroInsertConvT1d(nn.Module):
    """ConvTranspose1d as stride-1 zero insertion + (cat-with-zeros) padding + conv1d."""

    def __init__(self, convt: nn.ConvTranspose1d) -> None:
        super().__init__()
        (k,), (s,), (p,), (op,) = (
            convt.kernel_size,
            convt.stride,
            convt.padding,
            convt.output_padding,
        )
        self.k, self.s, self.p, self.op = k, s, p, op
        self.register_buffer("w", convt.weight.detach().transpose(0, 1).flip(-1).contiguous())
        self.register_buffer("b", convt.bias.detach().clone())

    def forward(self, x):
        b, c, n = x.shape
        z = torch.zeros_like(x)
        up = torch.stack([x] + [z] * (self.s - 1), dim=-1).reshape(b, c, n * self.s)
        up = up[..., : (n - 1) * self.s + 1]
        edge = self.k - 1 - self.p
        left = up.new_zeros((b, c, edge))
        right = up.new_zeros((b, c, edge + self.op))
        return F.conv1d(torch.cat([left, up, right], dim=-1), self.w, self.b)


class StateIndexCopy(nn.Module):
    """A KV-cache-like state buffer written with index_copy_ (static length)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 4, 32, 16), persistent=False)

    def forward(self, x, pos):
        self.cache.index_copy_(2, pos.long(), x)
        return self.cache.sum(dim=2)


class StateIndexPut(nn.Module):
    """The same state written by advanced indexing (the lint refuses it)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 4, 32, 16), persistent=False)

    def forward(self, x, pos):
        self.cache[:, :, pos.long()] = x
        return self.cache.sum(dim=2)


# -- cases -----------------------------------------------------------------------------------


@dataclass
class Built:
    module: nn.Module
    inputs: dict[str, torch.Tensor]
    outputs: list[str] = field(default_factory=lambda: ["y"])
    reference: nn.Module | None = None  # eager module to compare with (default: module)
    calls: list[dict[str, torch.Tensor]] | None = None  # stateful: call sequence, last compared


@dataclass
class Case:
    name: str
    shape: str
    build: Callable[[], Built]
    group: str = "ops"  # "ops", "unsupported" or "precision"
    precision: str = "fp32"


def r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def fn(f: Callable, inputs: dict[str, torch.Tensor], **mods: nn.Module) -> Built:
    return Built(Fn(f, **mods), inputs)


def _conv_t(op: int) -> Callable[[], Built]:
    def build() -> Built:
        if op:
            m = nn.ConvTranspose1d(64, 64, 10, stride=5, padding=3, output_padding=op)
            return Built(m, {"x": r(1, 64, 256)})
        return Built(nn.ConvTranspose1d(128, 128, 12, stride=6, padding=3), {"x": r(1, 128, 800)})

    return build


def _zero_insert() -> Built:
    convt = nn.ConvTranspose1d(128, 128, 12, stride=6, padding=3)
    return Built(ZeroInsertConvT1d(convt), {"x": r(1, 128, 800)}, reference=convt)


def _masked_bilstm() -> Built:
    """Kokoro's masked, unrolled bi-LSTM against the native LSTM it is built from (no pad)."""
    from conversion.kokoro.layers.lstm import MaskedBiLSTM

    lstm = nn.LSTM(64, 64, batch_first=True, bidirectional=True)
    ref = Fn(lambda m, x, mask: m["lstm"](x)[0], lstm=lstm)
    inputs = {"x": r(1, 128, 64), "mask": torch.ones(1, 128)}
    return Built(MaskedBiLSTM(lstm), inputs, reference=ref)


def _sdpa() -> Built:
    def f(_, q, k, v, lens):
        n = q.shape[-2]
        keep = torch.arange(n)[None, :] < lens[:, None]  # [B, S] key padding
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        mask = causal[None, None] & keep[:, None, None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    lens = torch.tensor([40], dtype=torch.int32)
    return fn(f, {"q": r(1, 4, 64, 32), "k": r(1, 4, 64, 32), "v": r(1, 4, 64, 32), "lens": lens})


def _topk() -> Built:
    b = fn(lambda _, x: torch.topk(x, 50, dim=-1), {"x": r(1, 4097)})
    b.outputs = ["values", "indices"]
    return b


def _gather() -> Built:
    idx = torch.randint(0, 4097, (4, 50), dtype=torch.int32)
    return fn(lambda _, x, i: torch.gather(x, -1, i.long()), {"x": r(4, 4097), "idx": idx})


def _masked_fill() -> Built:
    mask = torch.rand(8, 1024) > 0.5
    return fn(lambda _, x, m: x.masked_fill(m, -1e4), {"x": r(8, 1024), "mask": mask})


def _state_copy() -> Built:
    calls = [{"x": r(1, 4, 1, 16), "pos": torch.tensor([p], dtype=torch.int32)} for p in (0, 5, 1)]
    return Built(StateIndexCopy(), calls[0], calls=calls)


def _state_put() -> Built:
    pos = torch.tensor([3], dtype=torch.int32)
    return Built(StateIndexPut(), {"x": r(1, 4, 1, 16), "pos": pos})


def _stft() -> Built:
    win = torch.hann_window(64)
    return fn(
        lambda _, x: torch.stft(x, 64, 16, window=win, return_complex=True).abs(), {"x": r(1, 4096)}
    )


def _repeat_interleave() -> Built:
    reps = torch.tensor([1, 3, 2, 2], dtype=torch.int32)
    return fn(lambda _, x, n: x.repeat_interleave(n.long(), dim=0), {"x": r(4, 8), "n": reps})


def _precision(kind: str) -> Callable[[], Built]:
    def build() -> Built:
        if kind == "linear":
            return Built(nn.Linear(256, 256), {"x": r(64, 256)})
        if kind == "matmul":
            return fn(lambda _, a, b: a @ b, {"a": r(64, 256), "b": r(256, 256) / 16})
        if kind == "gelu":
            return fn(lambda _, x: F.gelu(x), {"x": r(8, 4096)})
        return Built(nn.Conv1d(64, 64, 7, padding=3), {"x": r(1, 64, 1024)})

    return build


def _nearest_mix() -> Built:
    """Non-integer ratios both ways: the index rounding is where engines differ."""

    def f(_, x):
        outs = [F.interpolate(x, size=n, mode="nearest") for n in (37, 77, 300, 511, 1000)]
        outs += [F.interpolate(x, scale_factor=k, mode="nearest") for k in (0.3, 2.5)]
        return torch.cat(outs, dim=-1)

    return fn(f, {"x": torch.arange(128, dtype=torch.float32).reshape(1, 1, 128)})


X = r  # readability in the table below
PAD_X = (1, 128, 4800)
EW = (8, 4096)  # elementwise ops

CASES: list[Case] = [
    Case(
        "add_scalar",
        "x + 1, x [1,16] (the per-call floor)",
        lambda: fn(lambda _, x: x + 1, {"x": X(1, 16)}),
    ),
    Case(
        "linear",
        "Linear 256→256, x [16,256]",
        lambda: Built(nn.Linear(256, 256), {"x": X(16, 256)}),
    ),
    Case(
        "conv1d",
        "Conv1d 128→128 k7, no padding, x [1,128,4800]",
        lambda: Built(nn.Conv1d(128, 128, 7), {"x": X(*PAD_X)}),
    ),
    Case(
        "conv1d_pad",
        "Conv1d 128→128 k7, padding=3, x [1,128,4800]",
        lambda: Built(nn.Conv1d(128, 128, 7, padding=3), {"x": X(*PAD_X)}),
    ),
    Case(
        "conv2d",
        "Conv2d 32→32 k3 pad 1, x [1,32,64,64]",
        lambda: Built(nn.Conv2d(32, 32, 3, padding=1), {"x": X(1, 32, 64, 64)}),
    ),
    Case("conv_transpose1d", "ConvTranspose1d 128→128 k12 s6 p3, x [1,128,800]", _conv_t(0)),
    Case(
        "conv_transpose1d_outpad",
        "ConvTranspose1d 64→64 k10 s5 p3 output_padding=1, x [1,64,256]",
        _conv_t(1),
    ),
    Case("zero_insert_conv1d", "zero insertion + cat-pad + conv1d ≡ the k12 s6 row", _zero_insert),
    Case(
        "lstm",
        "LSTM 64→64 bidirectional, batch_first, x [1,128,64]",
        lambda: Built(
            FirstOutput(nn.LSTM(64, 64, batch_first=True, bidirectional=True)), {"x": X(1, 128, 64)}
        ),
    ),
    Case(
        "masked_bilstm",
        "MaskedBiLSTM (unrolled, masked) from the lstm row's LSTM, x [1,128,64], mask all real",
        _masked_bilstm,
    ),
    Case(
        "gru",
        "GRU 64→64, batch_first, x [1,128,64]",
        lambda: Built(FirstOutput(nn.GRU(64, 64, batch_first=True)), {"x": X(1, 128, 64)}),
    ),
    Case(
        "instance_norm",
        "InstanceNorm1d(128, affine), x [1,128,512]",
        lambda: Built(nn.InstanceNorm1d(128, affine=True), {"x": X(1, 128, 512)}),
    ),
    Case(
        "group_norm",
        "GroupNorm(8, 128), x [1,128,512]",
        lambda: Built(nn.GroupNorm(8, 128), {"x": X(1, 128, 512)}),
    ),
    Case(
        "layer_norm",
        "LayerNorm(256), x [1,128,256]",
        lambda: Built(nn.LayerNorm(256), {"x": X(1, 128, 256)}),
    ),
    Case(
        "reflection_pad1d",
        "ReflectionPad1d(3), x [1,128,4800]",
        lambda: Built(nn.ReflectionPad1d(3), {"x": X(*PAD_X)}),
    ),
    Case(
        "replication_pad1d",
        "ReplicationPad1d(3), x [1,128,4800]",
        lambda: Built(nn.ReplicationPad1d(3), {"x": X(*PAD_X)}),
    ),
    Case(
        "constant_pad",
        "F.pad(x, (3, 3)), x [1,128,4800]",
        lambda: fn(lambda _, x: F.pad(x, (3, 3)), {"x": X(*PAD_X)}),
    ),
    Case(
        "cat_zeros_pad",
        "cat([zeros 3, x, zeros 3]), x [1,128,4800]",
        lambda: fn(
            lambda _, x: torch.cat([x.new_zeros(1, 128, 3), x, x.new_zeros(1, 128, 3)], dim=-1),
            {"x": X(*PAD_X)},
        ),
    ),
    Case(
        "constant_pad_1200",
        "F.pad(x, (3, 3)), x [1,128,1200]",
        lambda: fn(lambda _, x: F.pad(x, (3, 3)), {"x": X(1, 128, 1200)}),
    ),
    Case(
        "constant_pad_24000",
        "F.pad(x, (3, 3)), x [1,128,24000]",
        lambda: fn(lambda _, x: F.pad(x, (3, 3)), {"x": X(1, 128, 24000)}),
    ),
    Case(
        "cat_zeros_pad_24000",
        "cat([zeros 3, x, zeros 3]), x [1,128,24000]",
        lambda: fn(
            lambda _, x: torch.cat([x.new_zeros(1, 128, 3), x, x.new_zeros(1, 128, 3)], dim=-1),
            {"x": X(1, 128, 24000)},
        ),
    ),
    Case(
        "interp_nearest_x2",
        "interpolate nearest ×2, x [1,64,100]",
        lambda: fn(
            lambda _, x: F.interpolate(x, scale_factor=2.0, mode="nearest"), {"x": X(1, 64, 100)}
        ),
    ),
    Case(
        "interp_nearest_mix",
        "nearest 128→37/77/300/511/1000 and ×0.3/×2.5, x = arange",
        _nearest_mix,
    ),
    Case(
        "interp_linear_x2",
        "interpolate linear ×2 (align_corners=False), x [1,64,100]",
        lambda: fn(
            lambda _, x: F.interpolate(x, scale_factor=2.0, mode="linear"), {"x": X(1, 64, 100)}
        ),
    ),
    Case(
        "atan2",
        "atan2(y, x), [8,4096] each",
        lambda: fn(lambda _, y, x: torch.atan2(y, x), {"y": X(*EW), "x": X(*EW)}),
    ),
    Case(
        "cumsum",
        "cumsum dim -1, x [4,1024]",
        lambda: fn(lambda _, x: torch.cumsum(x, dim=-1), {"x": X(4, 1024)}),
    ),
    Case(
        "logsumexp",
        "logsumexp dim -1, x [4,4097]",
        lambda: fn(lambda _, x: torch.logsumexp(x, dim=-1), {"x": X(4, 4097)}),
    ),
    Case("topk", "topk k=50, x [1,4097] (values, indices)", _topk),
    Case(
        "argmax",
        "argmax dim -1, x [4,4097]",
        lambda: fn(lambda _, x: torch.argmax(x, dim=-1), {"x": X(4, 4097)}),
    ),
    Case("gather", "gather dim -1, x [4,4097], int32 idx [4,50]", _gather),
    Case("masked_fill", "masked_fill(bool mask input, -1e4), x [8,1024]", _masked_fill),
    Case(
        "where",
        "where(c > 0, x, y), [8,4096] each",
        lambda: fn(
            lambda _, c, x, y: torch.where(c > 0, x, y), {"c": X(*EW), "x": X(*EW), "y": X(*EW)}
        ),
    ),
    Case("sdpa_bool_mask", "SDPA, causal & key-padding bool mask, q/k/v [1,4,64,32]", _sdpa),
    Case(
        "softmax",
        "softmax dim -1, x [8,1024]",
        lambda: fn(lambda _, x: torch.softmax(x, dim=-1), {"x": X(8, 1024)}),
    ),
    Case("gelu", "gelu, x [8,4096]", lambda: fn(lambda _, x: F.gelu(x), {"x": X(*EW)})),
    Case("silu", "silu, x [8,4096]", lambda: fn(lambda _, x: F.silu(x), {"x": X(*EW)})),
    Case("tanh", "tanh, x [8,4096]", lambda: fn(lambda _, x: torch.tanh(x), {"x": X(*EW)})),
    Case(
        "sin_cos",
        "sin(x) + cos(x), x = 4·randn [8,4096]",
        lambda: fn(lambda _, x: torch.sin(x) + torch.cos(x), {"x": 4 * X(*EW)}),
    ),
    Case("expm1", "expm1, x [8,4096]", lambda: fn(lambda _, x: torch.expm1(x), {"x": X(*EW)})),
    Case(
        "elu",
        "nn.ELU via our decomposition table, x [8,4096]",
        lambda: Built(nn.ELU(), {"x": X(*EW)}),
    ),
    Case(
        "leaky_relu",
        "leaky_relu(0.1), x [8,4096]",
        lambda: fn(lambda _, x: F.leaky_relu(x, 0.1), {"x": X(*EW)}),
    ),
    Case(
        "embedding_int32",
        "Embedding(1000, 64), int32 ids [1,128]",
        lambda: Built(
            nn.Embedding(1000, 64), {"ids": torch.randint(0, 1000, (1, 128), dtype=torch.int32)}
        ),
    ),
    Case("state_index_copy", "state [1,4,32,16] += index_copy_ at int32 pos; 3 calls", _state_copy),
    # -- refused ---------------------------------------------------------------------------
    Case("stft", "torch.stft n_fft 64, x [1,4096]", _stft, group="unsupported"),
    Case(
        "fft_rfft",
        "torch.fft.rfft, x [4,256]",
        lambda: fn(lambda _, x: torch.fft.rfft(x).abs(), {"x": X(4, 256)}),
        group="unsupported",
    ),
    Case(
        "rand_like",
        "x + rand_like(x)",
        lambda: fn(lambda _, x: x + torch.rand_like(x), {"x": X(4, 256)}),
        group="unsupported",
    ),
    Case(
        "randn",
        "x + randn(4, 256)",
        lambda: fn(lambda _, x: x + torch.randn(4, 256), {"x": X(4, 256)}),
        group="unsupported",
    ),
    Case(
        "multinomial",
        "multinomial(softmax(x), 1)",
        lambda: fn(lambda _, x: torch.multinomial(torch.softmax(x, -1), 1), {"x": X(4, 256)}),
        group="unsupported",
    ),
    Case(
        "repeat_interleave_tensor",
        "x.repeat_interleave(int32 counts, dim=0)",
        _repeat_interleave,
        group="unsupported",
    ),
    Case(
        "unfold",
        "x.unfold(-1, 16, 8), x [4,256]",
        lambda: fn(lambda _, x: x.unfold(-1, 16, 8), {"x": X(4, 256)}),
        group="unsupported",
    ),
    Case(
        "int64_input",
        "Embedding(1000, 64), int64 ids [1,128]",
        lambda: Built(nn.Embedding(1000, 64), {"ids": torch.randint(0, 1000, (1, 128))}),
        group="unsupported",
    ),
    Case(
        "state_index_put",
        "state[:, :, pos] = x (advanced-index write)",
        _state_put,
        group="unsupported",
    ),
    # -- precision ---------------------------------------------------------------------------
    Case(
        "linear_fp32", "Linear 256→256, x [64,256], fp32", _precision("linear"), group="precision"
    ),
    Case(
        "linear_fp16",
        "Linear 256→256, x [64,256], fp16",
        _precision("linear"),
        group="precision",
        precision="fp16",
    ),
    Case(
        "matmul_fp32",
        "a @ b, [64,256] @ [256,256] (both inputs), fp32",
        _precision("matmul"),
        group="precision",
    ),
    Case(
        "matmul_fp16",
        "a @ b, [64,256] @ [256,256] (both inputs), fp16",
        _precision("matmul"),
        group="precision",
        precision="fp16",
    ),
    Case("gelu_fp32", "gelu, x [8,4096], fp32", _precision("gelu"), group="precision"),
    Case(
        "gelu_fp16",
        "gelu, x [8,4096], fp16",
        _precision("gelu"),
        group="precision",
        precision="fp16",
    ),
    Case(
        "conv1d_fp32",
        "Conv1d 64→64 k7 p3, x [1,64,1024], fp32",
        _precision("conv"),
        group="precision",
    ),
    Case(
        "conv1d_fp16",
        "Conv1d 64→64 k7 p3, x [1,64,1024], fp16",
        _precision("conv"),
        group="precision",
        precision="fp16",
    ),
]
BY_NAME = {c.name: c for c in CASES}


# -- one case (in the worker) ------------------------------------------------------------------


def _first_line(e: BaseException, limit: int = 300) -> str:
    text = " ".join(str(e).split())
    return (text[:limit] + "…") if len(text) > limit else text


def _refusal(e: BaseException) -> dict:
    from conversion.core.errors import ExportLintError

    if isinstance(e, ExportLintError):
        # `where` would name this script's wrapper module: problem and workaround only.
        return {
            "converts": "lint",
            "message": "; ".join(f"{f.problem}: {f.workaround}" for f in e.findings),
            "short": "; ".join(f.problem for f in e.findings),
        }
    files = [f.filename for f in traceback.extract_tb(e.__traceback__)]
    where = "converter" if any("coreai" in f for f in files) else "torch.export"
    return {
        "converts": where,
        "message": f"{type(e).__name__}: {_first_line(e)}",
        "short": f"{type(e).__name__}: {_first_line(e, 120)}",
    }


def _median_ms(call: Callable[[], object]) -> tuple[float, int, float]:
    """Median ms per call, the number of calls, and the fastest call (kept in --json)."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MAX_REPS and (
        len(times) < MIN_REPS or time.perf_counter() - start < TIME_BUDGET_S
    ):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, len(times), min(times) * 1e3


def _as_list(out) -> list[torch.Tensor]:
    return list(out) if isinstance(out, tuple | list) else [out]


def _max_err(got: dict[str, np.ndarray], want: list[torch.Tensor], names: list[str]) -> str:
    worst = 0.0
    for name, w in zip(names, want, strict=True):
        g = np.asarray(got[name])
        w = w.detach().numpy()
        if g.shape != w.shape:
            return f"shape {list(g.shape)} vs eager {list(w.shape)}"
        if g.size:
            worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))))
    return f"{worst:.1e}"


def run_case(case: Case) -> dict:
    from conversion.core.runtime.session import Session
    from tests.roundtrip import export_single

    torch.manual_seed(0)
    built = case.build()
    res: dict = {
        "name": case.name,
        "shape": case.shape,
        "group": case.group,
        "precision": case.precision,
    }
    calls = built.calls or [built.inputs]
    reference = copy.deepcopy(built.reference or built.module).eval()
    with tempfile.TemporaryDirectory(prefix="op-table-") as tmp:
        dest = Path(tmp) / "bundle"
        t = time.perf_counter()
        try:
            export_single(
                copy.deepcopy(built.module),
                built.inputs,
                built.outputs,
                dest,
                precision=case.precision,
            )
        except Exception as e:  # noqa: BLE001 — every refusal is a result
            res.update(_refusal(e))
            return res
        res.update(converts="yes", export_s=round(time.perf_counter() - t, 2))
        with torch.no_grad():
            want = [_as_list(reference(*c.values())) for c in calls][-1]
        try:
            with Session(dest) as s:
                feed = [{k: v.numpy() for k, v in c.items()} for c in calls]
                for f in feed:
                    got = s.run("graph", "main", f)
                res["runs"] = "yes"
                res["max_abs_err"] = _max_err(got, want, built.outputs)
                res["ref_max_abs"] = f"{max(float(w.abs().max()) for w in want):.2g}"
                res["runtime_ms"], res["runtime_reps"], res["runtime_min_ms"] = _median_ms(
                    lambda: s.run("graph", "main", feed[-1])
                )
        except Exception as e:  # noqa: BLE001
            res["runs"] = "error"
            res["message"] = f"{type(e).__name__}: {_first_line(e)}"
            return res
    eager = copy.deepcopy(built.reference or built.module).eval()
    if case.precision == "fp16" and built.reference is None:
        eager = eager.half()
    args = tuple(
        v.half() if case.precision == "fp16" and v.is_floating_point() else v
        for v in calls[-1].values()
    )
    with torch.no_grad():
        res["eager_ms"], res["eager_reps"], res["eager_min_ms"] = _median_ms(lambda: eager(*args))
    return res


def worker(names: list[str]) -> None:
    sys.path.insert(0, str(ROOT))
    # The Core AI runtime uses one core: compare it with one-thread eager (and two threads on a
    # shared 2-core machine make eager timings jump by scheduler ticks).
    torch.set_num_threads(EAGER_THREADS)
    for name in names:
        print(MARK + json.dumps({"start": name}), flush=True)
        try:
            res = run_case(BY_NAME[name])
        except Exception as e:  # noqa: BLE001 — a bug in a case must not lose the others
            res = {
                "name": name,
                "shape": BY_NAME[name].shape,
                "group": BY_NAME[name].group,
                "converts": "?",
                "message": f"script error: {type(e).__name__}: {_first_line(e)}",
            }
        print(MARK + json.dumps({"result": res}), flush=True)


# -- driver (parent) ---------------------------------------------------------------------------


def _reader(stream, q: queue.Queue) -> None:
    for line in stream:
        q.put(line)
    q.put(None)


def _run_worker(todo: list[str], results: dict[str, dict]) -> None:
    """One worker process over `todo`, filling `results`; a crash is recorded on its case."""
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", *todo],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        q: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
        current, deadline = None, time.monotonic() + CASE_TIMEOUT_S
        while True:
            try:
                line = q.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                proc.kill()
                results[current or todo[0]] = {"runs": "timeout"}
                break
            if line is None:
                break
            if not line.startswith(MARK):
                continue
            msg = json.loads(line[len(MARK) :])
            if "start" in msg:
                current, deadline = msg["start"], time.monotonic() + CASE_TIMEOUT_S
                print(f"[op_table] {current} …", file=sys.stderr, flush=True)
            else:
                results[msg["result"]["name"]] = msg["result"]
                current = None
        code = proc.wait()
        if current is None and not any(n in results for n in todo):
            current = todo[0]  # the worker died before its first case: don't loop forever
        if current is not None and current not in results:
            err.seek(0)
            lines = err.read().splitlines()
            fatal = [ln.strip() for ln in lines if "Fatal error" in ln]
            tail = fatal[-1] if fatal else " ".join(" ".join(lines[-5:]).split())[-300:]
            how = f"exit {code}" if code >= 0 else signal.Signals(-code).name
            results[current] = {"runs": f"crash ({how})", "message": tail}


def run_all(names: list[str]) -> list[dict]:
    results: dict[str, dict] = {}
    todo = list(names)
    while todo:
        _run_worker(todo, results)
        for name, res in results.items():
            case = BY_NAME[name]
            res.setdefault("name", name)
            res.setdefault("shape", case.shape)
            res.setdefault("group", case.group)
            res.setdefault("precision", case.precision)
            res.setdefault("converts", "yes")
        todo = [n for n in todo if n not in results]
    return [results[n] for n in names]


def _fmt_ms(v) -> str:
    return "—" if v is None else (f"{v:.3g}" if v < 100 else f"{v:.0f}")


def _header() -> str:
    from conversion.core.versions import package_versions

    v = package_versions(("torch", "coreai-torch", "coreai-core", "coreai-opt", "numpy"))
    return (
        f"Measured {dt.date.today().isoformat()} with torch {v['torch']}, coreai-torch "
        f"{v['coreai-torch']}, coreai-core {v['coreai-core']}, coreai-opt {v['coreai-opt']}, "
        f"numpy {v['numpy']}, Python {platform.python_version()}, on {platform.system()} "
        f"{platform.machine()} with {os.cpu_count()} cores (eager torch: "
        f"{EAGER_THREADS} thread, `torch.no_grad()`; the Core AI runtime is single-threaded). "
        f"Times are medians of {MIN_REPS}–{MAX_REPS} calls after one warm-up call."
    )


def _converts(r: dict) -> str:
    return r["converts"] if r["converts"] == "yes" else f"{r['converts']} refuses"


def to_markdown(results: list[dict], elapsed_s: float) -> str:
    out = [_header()]
    notes = []
    ops = [r for r in results if r["group"] == "ops"]
    if ops:
        out += [
            "",
            "| op | shape | converts | runs | max abs err (max \\|ref\\|) "
            "| Linux runtime ms | eager ms | ratio |",
            "|---|---|---|---|---|---|---|---|",
        ]
    for r in ops:
        rt, eg = r.get("runtime_ms"), r.get("eager_ms")
        ratio = f"{rt / eg:.0f}×" if rt and eg else "—"
        err = r.get("max_abs_err", "—")
        if "ref_max_abs" in r:
            err = f"{err} ({r['ref_max_abs']})"
        out.append(
            f"| {r['name']} | {r['shape']} | {_converts(r)} | {r.get('runs', '—')} | "
            f"{err} | {_fmt_ms(rt)} | {_fmt_ms(eg)} | {ratio} |"
        )
        if r.get("message"):
            notes.append(f"- `{r['name']}`: {r['message']}")
    refused = [r for r in results if r["group"] == "unsupported"]
    if refused:
        out += [
            "",
            "Expected refusals (the message is what voxport prints; a case nobody "
            "refuses says what happened instead):",
            "",
            "| op | what | refused by | message |",
            "|---|---|---|---|",
        ]
    for r in refused:
        msg = r.get("message", "—").replace("|", "\\|")
        by = r["converts"] if r["converts"] != "yes" else f"**nobody** (runs: {r.get('runs')})"
        out.append(f"| {r['name']} | {r['shape']} | {by} | {msg} |")
    prec = [r for r in results if r["group"] == "precision"]
    if prec:
        out += [
            "",
            "fp16 on the Linux runtime (error vs fp32 eager for every row):",
            "",
            "| case | converts | runs | max abs err | Linux runtime ms "
            "| eager ms (same dtype, CPU) |",
            "|---|---|---|---|---|---|",
        ]
    for r in prec:
        out.append(
            f"| {r['shape']} | {_converts(r)} | {r.get('runs', '—')} | "
            f"{r.get('max_abs_err', '—')} | {_fmt_ms(r.get('runtime_ms'))} | "
            f"{_fmt_ms(r.get('eager_ms'))} |"
        )
        if r.get("message"):
            notes.append(f"- `{r['name']}`: {r['message']}")
    if notes:
        out += ["", "Notes:", "", *notes]
    out += ["", f"Whole run: {elapsed_s / 60:.1f} min."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="CASE", help="run these cases only")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    if args.list:
        print("\n".join(f"{c.name:28s} {c.shape}" for c in CASES))
        return 0
    names = args.only or [c.name for c in CASES]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; see --list")
    sys.path.insert(0, str(ROOT))
    start = time.perf_counter()
    results = run_all(names)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(to_markdown(results, time.perf_counter() - start), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
