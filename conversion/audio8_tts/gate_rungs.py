"""Rung builders for the Audio8 gate ladder (the ladder itself and its fixtures: gate.py).

Each builder returns `Rung`s whose compute runs lazily inside `gates.ladder.run_ladder`:

1. `sampler_rungs`: the graph's sampler (`ar.graphs.draw_tokens`) exported alone into a
   temp bundle (functions `draw_20` / `draw_1000`, cached per process) vs the NumPy sampler
   (`conversion.core.sampling.sample`, `AUDIO8_ORDER`, top-k 50, top-p 0.9, T 0.7) on random
   [N, 4097] logits with the same uniforms: 20/20, then 1,000/1,000;
2. `teacher_forced_rung`: `reference.generate` free (seeded uniforms) gives the reference's
   columns and draws; the bundle's `ar` graph is teacher-forced on those columns with the same
   uniforms (`host_frames.generate(..., forced=...)`): agreement over every draw (the semantic
   after RAS + the nine fast codes per frame), each miss listed with its Gumbel margin;
3. `free_run_rung`: the graph's free run with the same uniforms == the reference's codes;
4. `codec_rung`: one codec window through the runtime vs the eager re-author, and
   `stream_vs_whole_rung`: the streamed chunks joined vs the eager one-shot decode of the whole
   sequence on the first window (exact math there; the rest's cosine goes in the note);
5. `precision_table` / `precision_rungs`: fp32 / fp16 / int8 on one AR at a time, teacher-
   forced on the fp32 reference's columns: draw agreement and logits cos min per AR.

Per-AR precision is an EAGER SIMULATION. coreai-opt 0.4.0's `quantize_weights` has no op-name
filter and no per-op config: its only selectors are `weight_num_threshold` (an element count)
and the module-level set of consumer op types (`passes._OPS_WEIGHT_NEED_COMPRESSION`), and the
fused `frame` function holds both ARs in one program, so a runtime export cannot make only the
slow AR int8 (nor cast only one AR to fp16: `precision.prepare_module` halves the whole module).
The simulation does what those would do to one AR: fp16 runs that AR's modules in half
(residual stream, KV and RoPE tables included; the sampler stays fp32 as in the graph), int8
fake-quantizes that AR's matmul / gather weights with coreai-opt's own rule (per output channel
= per row, symmetric, scale = (2 max|w| + 1e-6) / 254, round, clip to [-127, 127]; constants of
<= 1,024 elements, norms and biases untouched). Tied head rows are embedding rows, so one
per-row quantization covers the graph's separate head constant and the gather alike.
"""

from __future__ import annotations

import copy
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from conversion.audio8_tts.sampling import AUDIO8_ORDER
from conversion.core.sampling import U_MAX, U_MIN, SamplingConfig, sample
from gates.ladder import Measured, Rung
from gates.metrics import cosine as _cos

from . import reference as R
from .ar import host as host_frames
from .ar.graphs import draw_tokens
from .codec import host as host_codec
from .codec.graphs import CODEC_GRAPH, FUNCTION
from .codec.model import Codec, CodecConfig
from .config import Audio8Config

# -- thresholds ---------------------------------------------------------------------------------
SAMPLER_SIZES = (20, 1000)  # sampler rungs: all N draws equal
SAMPLER_WIDTH = 4097  # the slow draw's compact row (semantic ids then eos)
SAMPLER_SCALE = 3.0  # random logits' std: peaked enough that top-p (not only top-k) cuts
TEACHER_FORCED_MIN = 0.99  # share of draws (semantic + 9 codes per frame) equal, fp32 graph
FREE_RUN_MIN = 1.0  # fp32: identical code sequences
CODEC_COS_MIN = 0.9999  # one codec window, runtime vs eager re-author
STREAM_FIRST_WINDOW_COS_MIN = 0.9999  # streamed vs one-shot decode on the first window
STREAM_CONTEXT = 32  # frames of context a streamed window keeps (published window 160)
# Precision table (eager simulation, draws teacher-forced vs the fp32 reference's draws).
# fp32 rows: the simulation harness with nothing changed (teacher forcing on the reference's
# own columns) must reproduce every draw; the runtime graph's fp32 draws are teacher_forced_rung.
PRECISION_FP32_MIN = 1.0
# The rows gated are the mix meant for a device: slow AR int8 (the big one: 4x smaller) + fast
# AR fp16. No real weights are reachable here, so what those cost on a trained model is not
# measured. Measured here (reduced config, random weights, 40-column prompt, 12 frames, seeds
# 0..4, `precision_table`): slow int8 12,11,11,12,12 / 12 (logits cos min 0.99993), slow fp16
# 12/12 every seed (cos 1.0000), fast fp16 108,108,106,108,108 / 108 (cos 0.999999; both
# misses are top-50 boundary moves, not races among the reference's kept candidates), fast
# int8 103..107 / 108 (cos min 0.99980; 17 of its 18 misses are boundary moves: flat random
# logits make the top-50 edge the fragile place). fp16 is near-lossless on both ARs and int8
# costs the fast AR the most draws. Thresholds: slow int8 >= 0.95 and fast fp16 >= 0.98 of the
# draws, not 1.0, because a sampled draw can legitimately flip when the race is close (a
# Gumbel margin near 0) or when rounding moves a token across the top-k / top-p boundary;
# each miss is listed with its margin so a reader can tell the two apart.
# With few draws a share is coarse (12 slow draws: one miss = 0.917), so a gated row always
# allows at least one miss: threshold = min(share, 1 - 1/draws) (`precision_threshold`).
PRECISION_MIN = {
    ("slow", "fp32"): PRECISION_FP32_MIN,
    ("fast", "fp32"): PRECISION_FP32_MIN,
    ("slow", "int8"): 0.95,
    ("fast", "fp16"): 0.98,
}
PRECISIONS = ("fp32", "fp16", "int8")
ARS = ("slow", "fast")
INT8_WEIGHT_THRESHOLD = 1024  # coreai-opt's weight_num_threshold default
TABLE_LABEL = "eager simulation (coreai-opt quantize_weights has no per-op selection)"


# -- small helpers ------------------------------------------------------------------------------


def _sampling(config: Audio8Config) -> R.SamplingParams:
    return R.SamplingParams.from_config(config)


def gumbel_margin(scores: np.ndarray, u: np.ndarray) -> float:
    """Gap between the best and second-best log p - log(-log u) among the kept candidates.

    `scores` are processed (filtered, tempered; -inf where removed), so log p differs from them
    by one constant per row, which the gap cancels. One kept candidate -> inf (no race).
    """
    s = np.asarray(scores, np.float64).reshape(-1)
    u = np.clip(np.asarray(u, np.float64).reshape(-1), U_MIN, U_MAX)
    kept = np.isfinite(s)
    v = s[kept] - np.log(-np.log(u[kept]))
    if v.size < 2:
        return math.inf
    top2 = np.sort(v)[-2:]
    return float(top2[1] - top2[0])


def kept_indices(scores: np.ndarray) -> set[int]:
    return {int(i) for i in np.flatnonzero(np.isfinite(np.asarray(scores).reshape(-1)))}


def _processed(logits, top_p: float, temperature: float, top_k: int) -> np.ndarray:
    t = torch.as_tensor(np.asarray(logits, np.float32))[None]
    return R.process(t, top_k, top_p, temperature)[0].numpy()


def _semantic_kept(logits, rec_used_high: bool, sp: R.SamplingParams) -> set[int]:
    kept = kept_indices(_processed(logits, sp.top_p, sp.temperature, sp.top_k))
    if rec_used_high:
        kept |= kept_indices(_processed(logits, sp.ras_top_p, sp.ras_temperature, sp.top_k))
    return kept


def _compact(token: int, config: Audio8Config) -> int:
    if token == config.eos_token_id:
        return config.semantic_count
    return token - config.semantic_begin_id


def _semantic_miss(
    rec: R.FrameRecord,
    got: int,
    sp: R.SamplingParams,
    config: Audio8Config,
    cand_logits: np.ndarray | None = None,
) -> tuple[float, bool]:
    """(margin, moved) of a missed semantic draw, on the reference's logits and uniforms.

    margin: of the draw(s) that decided the frame: the normal draw, and the RAS draw too when
    it was taken (the normal draw still decided that RAS ran). moved: the kept set moved under
    the draw - the candidate's token is outside the reference's kept set, or (given the
    candidate's logits) the reference's token is outside the candidate's: the top-k / top-p
    boundary shifted, a change the margin among the reference's candidates cannot describe.
    """
    m = gumbel_margin(_processed(rec.logits, sp.top_p, sp.temperature, sp.top_k), rec.u_slow[0])
    if rec.used_high:
        high = _processed(rec.logits, sp.ras_top_p, sp.ras_temperature, sp.top_k)
        m = min(m, gumbel_margin(high, rec.u_slow[1]))
    moved = _compact(got, config) not in _semantic_kept(rec.logits, rec.used_high, sp)
    if cand_logits is not None:
        cand_kept = _semantic_kept(cand_logits, rec.used_high, sp)
        moved = moved or _compact(rec.semantic, config) not in cand_kept
    return m, moved


def _fast_miss(
    rec: R.FrameRecord,
    j: int,
    got: int,
    sp: R.SamplingParams,
    cand_logits: np.ndarray | None = None,
) -> tuple[float, bool]:
    """(margin, moved) of codebook j+1's missed draw (j = 0..8); see `_semantic_miss`."""
    s = _processed(rec.fast_logits[j], sp.top_p, sp.temperature, sp.top_k)
    moved = int(got) not in kept_indices(s)
    if cand_logits is not None:
        cand = _processed(cand_logits, sp.top_p, sp.temperature, sp.top_k)
        moved = moved or int(rec.codes[j + 1]) not in kept_indices(cand)
    return gumbel_margin(s, rec.u_fast[j]), moved


def _miss_text(margin: float, moved: bool) -> str:
    return f"margin {_fmt_margin(margin)}" + (", kept set moved" if moved else "")


def reference_columns(gen: R.Generation) -> np.ndarray:
    """[emitted frames, 11]: the columns the reference fed back (semantic id, code_0..9)."""
    n = gen.codes.shape[1]
    sem = np.array([f.semantic for f in gen.frames[:n]], np.int64)[None]
    return np.concatenate([sem, gen.codes], axis=0).T


def _misses_note(misses: list[str], limit: int = 12) -> str:
    if not misses:
        return ""
    more = f" (+{len(misses) - limit} more)" if len(misses) > limit else ""
    return "; misses: " + ", ".join(misses[:limit]) + more


def _fmt_margin(m: float) -> str:
    return "inf" if math.isinf(m) else f"{m:.3g}"


# -- 1. the sampler, graph vs NumPy, through the runtime ----------------------------------------


class _SamplerGraph(nn.Module):
    def __init__(self, top_k: int, top_p: float, temperature: float) -> None:
        super().__init__()
        self.top_k, self.top_p, self.temperature = top_k, top_p, temperature

    def forward(self, logits, uniforms):
        out = draw_tokens(logits, uniforms, self.top_k, self.top_p, self.temperature)
        return out.to(torch.int32)


_SAMPLER_BUNDLES: dict[tuple, Path] = {}
_SAMPLER_TMP: list[tempfile.TemporaryDirectory] = []


def sampler_bundle(
    sizes: Sequence[int] = SAMPLER_SIZES,
    width: int = SAMPLER_WIDTH,
    top_k: int = R.TOP_K,
    top_p: float = R.TOP_P,
    temperature: float = R.TEMPERATURE,
) -> Path:
    """A temp bundle holding graph "sampler" with one function `draw_{N}` per size (cached per
    process: the export is done once whatever the number of gate runs)."""
    from conversion.core.bundle import BundleWriter
    from conversion.core.export import FunctionSpec, GraphSpec

    key = (tuple(sizes), width, top_k, top_p, temperature)
    if key in _SAMPLER_BUNDLES and _SAMPLER_BUNDLES[key].exists():
        return _SAMPLER_BUNDLES[key]
    tmp = tempfile.TemporaryDirectory(prefix="voxport-a8-sampler-")
    _SAMPLER_TMP.append(tmp)  # lives as long as the process
    module = _SamplerGraph(top_k, top_p, temperature)
    functions = [
        FunctionSpec(
            f"draw_{n}",
            module,
            {"logits": torch.zeros(n, width), "uniforms": torch.full((n, width), 0.5)},
            ["tokens"],
        )
        for n in sizes
    ]
    dest = Path(tmp.name) / "bundle"
    with torch.no_grad(), BundleWriter(dest, model="audio8_tts-sampler") as bw:
        bw.add_graph(GraphSpec("sampler", functions, {"width": width}))
    _SAMPLER_BUNDLES[key] = dest
    return dest


def _sampler_case(n: int, seed: int, width: int = SAMPLER_WIDTH):
    rng = np.random.default_rng([seed, n])
    logits = (rng.standard_normal((n, width)) * SAMPLER_SCALE).astype(np.float32)
    u = np.maximum(rng.random((n, width), dtype=np.float32), np.float32(U_MIN))
    return logits, u


def sampler_rungs(seed: int = 0, isolate: bool = True) -> list[Rung]:
    """The in-graph sampler through the runtime vs the NumPy sampler: 20/20, then 1000/1000."""
    cfg = SamplingConfig(
        temperature=R.TEMPERATURE, top_k=R.TOP_K, top_p=R.TOP_P, order=AUDIO8_ORDER
    )
    memo: dict[int, np.ndarray] = {}
    cases = {n: _sampler_case(n, seed) for n in SAMPLER_SIZES}

    def graph_draws(n: int) -> np.ndarray:
        if n not in memo:  # one child process (or session) for both sizes
            from conversion.core.runtime import IsolatedSession, Session

            bundle = sampler_bundle()
            with (IsolatedSession if isolate else Session)(bundle) as s:
                for k, (logits, u) in cases.items():
                    out = s.run("sampler", f"draw_{k}", {"logits": logits, "uniforms": u})
                    memo[k] = np.asarray(out["tokens"]).reshape(-1)
        return memo[n]

    def compute(n: int) -> Measured:
        logits, u = cases[n]
        got = graph_draws(n)
        want = np.array([sample(logits[i], u[i], cfg) for i in range(n)])
        misses = []
        for i in np.flatnonzero(got != want):
            m = gumbel_margin(_processed(logits[i], cfg.top_p, cfg.temperature, cfg.top_k), u[i])
            misses.append(f"row {i}: {int(got[i])} vs {int(want[i])} (margin {_fmt_margin(m)})")
        same = int((got == want).sum())
        kept = np.isfinite(
            [_processed(logits[i], cfg.top_p, cfg.temperature, cfg.top_k) for i in range(n)]
        ).sum(axis=1)
        note = (
            f"{same}/{n} draws equal over [{n}, {SAMPLER_WIDTH}] logits (std {SAMPLER_SCALE}); "
            f"kept candidates per row {int(kept.min())}..{int(kept.max())}"
        )
        return Measured(same, note + _misses_note(misses))

    return [
        Rung(f"sampler.graph_vs_numpy[{n}]", "draws_equal", float(n), lambda n=n: compute(n), True)
        for n in SAMPLER_SIZES
    ]


# -- 2. teacher-forced frames, graph vs reference -----------------------------------------------


def reference_run(lm: R.Audio8LM, prompt: np.ndarray, frames: int, seed: int) -> R.Generation:
    """The reference's free run with `seeded_uniforms(seed)`: the draws every rung compares to."""
    return R.generate(lm, prompt, frames, R.seeded_uniforms(seed, lm.config))


def _recorded_uniforms(gen: R.Generation) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(f.u_slow, f.u_fast) for f in gen.frames]


def compare_draws(
    ref: R.Generation,
    semantics: Sequence[int],
    codes: Sequence[np.ndarray],
    sp: R.SamplingParams,
    config: Audio8Config,
    logits: Sequence[np.ndarray] | None = None,
    fast_logits: Sequence[np.ndarray] | None = None,
) -> tuple[int, int, list[str], list[float]]:
    """(equal draws, total draws, miss descriptions, miss margins) over the frames both have:
    per frame the semantic (after RAS) and codebooks 1..9. The candidate's own `logits` [4097]
    and `fast_logits` [9, 4096] per frame, when given, let a miss say the kept set moved."""
    same = total = 0
    misses, margins = [], []
    for k, (rec, sem, cd) in enumerate(zip(ref.frames, semantics, codes, strict=False)):
        cl = None if logits is None else logits[k]
        cf = None if fast_logits is None else fast_logits[k]
        total += 1
        if int(sem) == rec.semantic:
            same += 1
        else:
            m, moved = _semantic_miss(rec, int(sem), sp, config, cl)
            misses.append(
                f"frame {k} semantic {int(sem)} vs {rec.semantic} ({_miss_text(m, moved)})"
            )
            margins.append(m)
        for j in range(1, len(rec.codes)):
            total += 1
            if int(cd[j]) == int(rec.codes[j]):
                same += 1
            else:
                m, moved = _fast_miss(rec, j - 1, int(cd[j]), sp, None if cf is None else cf[j - 1])
                misses.append(
                    f"frame {k} code {j} {int(cd[j])} vs {int(rec.codes[j])} "
                    f"({_miss_text(m, moved)})"
                )
                margins.append(m)
    return same, total, misses, margins


def teacher_forced_rung(
    lm: R.Audio8LM,
    session,
    prompt: np.ndarray,
    config: Audio8Config,
    frames: int,
    seed: int,
    ref: R.Generation | None = None,
    name: str = "ar[fp32].teacher_forced_draws",
    threshold: float = TEACHER_FORCED_MIN,
) -> Rung:
    """The graph teacher-forced on the reference's columns with its uniforms: draw agreement."""

    def compute() -> Measured:
        gen = ref if ref is not None else reference_run(lm, prompt, frames, seed)
        cols = reference_columns(gen)
        if len(cols) == 0:
            raise ValueError("the reference drew eos at frame 0: no column to force")
        out = host_frames.generate(
            session, prompt, len(cols), _recorded_uniforms(gen), config, forced=cols
        )
        got = out.frames
        same, total, misses, _ = compare_draws(
            gen,
            [f.semantic for f in got],
            [f.codes for f in got],
            _sampling(config),
            config,
            [f.logits for f in got],
            [f.fast_logits for f in got],
        )
        slow_cos = min(_cos(f.logits, r.logits) for f, r in zip(got, gen.frames, strict=False))
        fast_cos = min(
            _cos(f.fast_logits[j], r.fast_logits[j])
            for f, r in zip(got, gen.frames, strict=False)
            for j in range(len(r.fast_logits))
        )
        note = (
            f"{same}/{total} draws equal over {len(got)} frames (semantic + "
            f"{config.num_codebooks - 1} codes each); logits cos min slow {slow_cos:.6f}, "
            f"fast {fast_cos:.6f}"
        )
        return Measured(same / max(total, 1), note + _misses_note(misses))

    return Rung(name, "draw_agreement", threshold, compute, True)


# -- 3. free run, graph vs reference ------------------------------------------------------------


def free_run_rung(
    lm: R.Audio8LM,
    session,
    prompt: np.ndarray,
    config: Audio8Config,
    frames: int,
    seed: int,
    ref: R.Generation | None = None,
    name: str = "ar[fp32].free_run",
) -> Rung:
    """host_frames.generate with the same seeded uniforms == reference.generate's codes."""

    def compute() -> Measured:
        gen = ref if ref is not None else reference_run(lm, prompt, frames, seed)
        out = host_frames.generate(session, prompt, frames, R.seeded_uniforms(seed, config), config)
        want, got = gen.codes.T.reshape(-1), out.codes.T.reshape(-1)  # frame-major
        n = min(want.size, got.size)
        same = int((want[:n] == got[:n]).sum())
        total = max(want.size, got.size, 1)
        diff = np.flatnonzero(want[:n] != got[:n])
        books = config.num_codebooks
        note = (
            f"{same}/{total} codes equal; frames {out.codes.shape[1]} vs reference "
            f"{gen.codes.shape[1]} (eos: {out.finished} vs {gen.finished})"
        )
        if diff.size:
            note += f", first difference at frame {diff[0] // books} book {diff[0] % books}"
        return Measured(same / total, note)

    return Rung(name, "token_agreement", FREE_RUN_MIN, compute, True)


# -- 4. codec: one window, and streamed vs whole ------------------------------------------------


def random_codes(cfg: CodecConfig, frames: int, seed: int) -> np.ndarray:
    """[books, frames] codes inside every book (semantic book 4,096, residual books 1,024)."""
    rng = np.random.default_rng([seed, frames])
    sizes = host_codec.book_sizes(cfg)
    return (rng.random((cfg.num_books, frames)) * sizes[:, None]).astype(np.int64)


def codec_rung(session, codec: Codec, codec_cfg: CodecConfig, seed: int) -> Rung:
    """One window of the graph's width through the runtime vs `codec.decode` on the same codes."""

    def compute() -> Measured:
        width = host_codec.graph_frames(session, CODEC_GRAPH)
        codes = random_codes(codec_cfg, width, seed)
        out = session.run(CODEC_GRAPH, FUNCTION, {"codes": codes[None].astype(np.int32)})
        got = np.asarray(out["wav"]).reshape(-1)
        with torch.no_grad():
            want = codec.decode(torch.from_numpy(codes)[None]).reshape(-1).numpy()
        cos = _cos(want, got)
        note = (
            f"{width} frames ({got.size} samples): max|d| {np.abs(want - got).max():.3g}, "
            f"ref rms {np.sqrt(np.mean(want.astype(np.float64) ** 2)):.3g}"
        )
        return Measured(cos, note)

    return Rung("codec.window", "cosine", CODEC_COS_MIN, compute, True)


def stream_vs_whole_rung(
    session,
    codec: Codec,
    codec_cfg: CodecConfig,
    seed: int,
    context: int | None = None,
    frames: int | None = None,
) -> Rung:
    """decode_stream's chunks joined vs the eager one-shot decode of the whole sequence.

    The first window starts at frame 0 and sees everything the one-shot decode sees before its
    frames (every op is causal): exact math there, so its cosine is the rung's value. Later
    windows lose what the window-128 transformers saw before their `context` frames: their
    cosine is reported in the note, not gated. `context` defaults to STREAM_CONTEXT, cut to a
    quarter of the graph's window when that is smaller (the reduced graph is 32 frames wide).
    """

    def compute() -> Measured:
        width = host_codec.graph_frames(session, CODEC_GRAPH)
        ctx = context if context is not None else min(STREAM_CONTEXT, width // 4)
        total = frames or (2 * width + width // 2)
        if total <= width:
            raise ValueError(f"{total} frames fit one {width}-frame window: nothing streams")
        codes = random_codes(codec_cfg, total, seed + 1)
        report = host_codec.DecodeReport()
        chunks = list(host_codec.decode_stream(session, codes, codec_cfg, width, ctx, report))
        streamed = np.concatenate(chunks)
        with torch.no_grad():
            whole = codec.decode(torch.from_numpy(codes)[None]).reshape(-1).numpy()
        fs = codec_cfg.frame_size
        if streamed.size != whole.size:
            raise ValueError(f"streamed {streamed.size} samples, one-shot {whole.size}")
        first = _cos(whole[: width * fs], streamed[: width * fs])
        first_max = float(np.abs(whole[: width * fs] - streamed[: width * fs]).max())
        rest = _cos(whole[width * fs :], streamed[width * fs :])
        per_window = [
            _cos(whole[a * fs : b * fs], streamed[a * fs : b * fs])
            for _, a, b in host_codec.window_plan(total, width, ctx)[1:]
        ]
        note = (
            f"{total} frames in {report.windows} windows of {width} (context {ctx}): first "
            f"window cos {first:.6f}, max|d| {first_max:.3g}; after it cos {rest:.6f} "
            f"(per window {', '.join(f'{c:.4f}' for c in per_window)})"
        )
        return Measured(first, note)

    return Rung(
        "codec.stream_vs_whole", "first_window_cosine", STREAM_FIRST_WINDOW_COS_MIN, compute, True
    )


# -- 5. precision per AR (eager simulation) ----------------------------------------------------


def _ar_modules(lm: R.Audio8LM, ar: str) -> list[nn.Module]:
    if ar == "slow":
        return [lm.embeddings, lm.codebook_embeddings, lm.layers, lm.norm]
    if ar == "fast":
        return [
            lm.fast_project_in,
            lm.fast_embeddings,
            lm.fast_layers,
            lm.fast_norm,
            lm.fast_output,
        ]
    raise ValueError(f"unknown AR {ar!r}: choose slow or fast")


def fake_quantize_int8(weight: torch.Tensor) -> torch.Tensor:
    """coreai-opt's symmetric per-output-channel int8, quantized and dequantized (rows = axis 0).

    scale = (2 max|w| + 1e-6) / 254 per row, q = clip(round(w / scale), -127, 127), w' = q scale
    (float32 throughout, as NumPy computes it there on the fp32 constant).
    """
    w = weight.detach().float()
    max_abs = w.abs().amax(dim=tuple(range(1, w.dim())), keepdim=True)
    scale = (max_abs - (-max_abs) + 1e-6) / 254.0
    q = torch.clamp(torch.round(w / scale), -127, 127)
    return (q * scale).to(weight.dtype)


def _cast_hook(dtype: torch.dtype):
    def cast(x):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            return x.to(dtype)
        if isinstance(x, tuple | list):
            return type(x)(cast(v) for v in x)
        return x

    def hook(_module, args):
        return tuple(cast(a) for a in args)

    return hook


def simulate_precision(lm: R.Audio8LM, ar: str, precision: str) -> R.Audio8LM:
    """A copy of `lm` with one AR at `precision` (eager simulation; see the module docstring);
    fp32 is `lm` itself (no copy of a published-size model for nothing)."""
    if precision == "fp32":
        return lm
    m = copy.deepcopy(lm).eval()
    if precision == "int8":
        with torch.no_grad():
            for mod in _ar_modules(m, ar):
                for name, p in mod.named_parameters():
                    if p.dim() >= 2 and p.numel() > INT8_WEIGHT_THRESHOLD and "norm" not in name:
                        p.copy_(fake_quantize_int8(p))
        return m
    if precision != "fp16":
        raise ValueError(f"unknown precision {precision!r}: choose one of {PRECISIONS}")
    for mod in _ar_modules(m, ar):
        mod.half()
    # Every block casts what it is fed to its AR's dtype: the half AR's residual stream, KV and
    # RoPE table are half (as in a .half() graph), the other AR sees fp32 at its boundary.
    for name in ARS:
        dtype = torch.float16 if name == ar else torch.float32
        blocks = m.layers if name == "slow" else m.fast_layers
        for block in blocks:
            block.register_forward_pre_hook(_cast_hook(dtype))
    return m


def precision_table(
    lm: R.Audio8LM,
    prompt: np.ndarray,
    config: Audio8Config,
    frames: int,
    seed: int,
    ref: R.Generation | None = None,
) -> list[dict]:
    """Rows {ar, precision, draws, agree, agreement, logits_cos_min, misses, boundary_moves,
    method}: each AR at each precision (the other AR fp32), teacher-forced on the fp32
    reference's columns with its uniforms, draws and logits vs the fp32 reference's."""
    gen = ref if ref is not None else reference_run(lm, prompt, frames, seed)
    cols = reference_columns(gen)
    uniforms = _recorded_uniforms(gen)
    sp = _sampling(config)
    rows = []
    for ar in ARS:
        for precision in PRECISIONS:
            model = simulate_precision(lm, ar, precision)
            out = R.generate(model, prompt, len(cols), uniforms, forced=cols)
            pairs = list(zip(out.frames, gen.frames, strict=False))
            if ar == "slow":
                same = sum(f.semantic == r.semantic for f, r in pairs)
                total = len(pairs)
                cos = min(_cos(f.logits, r.logits) for f, r in pairs)
                misses = [
                    (f"frame {k}", *_semantic_miss(r, f.semantic, sp, config, f.logits))
                    for k, (f, r) in enumerate(pairs)
                    if f.semantic != r.semantic
                ]
            else:
                same = total = 0
                misses = []
                for k, (f, r) in enumerate(pairs):
                    for j in range(1, len(r.codes)):
                        total += 1
                        if int(f.codes[j]) == int(r.codes[j]):
                            same += 1
                        else:
                            got = int(f.codes[j])
                            miss = _fast_miss(r, j - 1, got, sp, f.fast_logits[j - 1])
                            misses.append((f"frame {k} code {j}", *miss))
                cos = min(
                    _cos(f.fast_logits[j], r.fast_logits[j])
                    for f, r in pairs
                    for j in range(len(r.fast_logits))
                )
            rows.append(
                {
                    "ar": ar,
                    "precision": precision,
                    "draws": total,
                    "agree": int(same),
                    "agreement": same / max(total, 1),
                    "logits_cos_min": cos,
                    # (which draw, Gumbel margin on the reference's logits, kept set moved)
                    "misses": [(k, round(m, 4), moved) for k, m, moved in misses],
                    "boundary_moves": sum(moved for _, _, moved in misses),
                    "method": "eager simulation",
                }
            )
    return rows


def format_table(rows: list[dict]) -> str:
    """Markdown: per AR and precision, draws equal and logits cos min (the card's table)."""
    lines = [
        f"Precision per AR — {TABLE_LABEL}",
        "",
        "| AR | precision | draws equal | agreement | logits cos min |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['ar']} | {r['precision']} | {r['agree']}/{r['draws']} | "
            f"{r['agreement']:.4f} | {r['logits_cos_min']:.6f} |"
        )
    return "\n".join(lines)


def _row_note(r: dict) -> str:
    text = (
        f"{r['ar']} AR {r['precision']} ({r['method']}): {r['agree']}/{r['draws']} draws, "
        f"logits cos min {r['logits_cos_min']:.6f}"
    )
    if r["misses"]:
        text += "; misses: " + ", ".join(
            f"{k} ({_miss_text(m, moved)})" for k, m, moved in r["misses"][:8]
        )
    return text


def precision_threshold(ar: str, precision: str, draws: int) -> float:
    """The gated share for a row of `draws` draws: PRECISION_MIN, one miss always allowed
    below fp32 (see the comment at PRECISION_MIN)."""
    share = PRECISION_MIN[(ar, precision)]
    if precision == "fp32" or draws <= 1:
        return share
    return min(share, 1.0 - 1.0 / draws)


def precision_rungs(
    lm: R.Audio8LM,
    prompt: np.ndarray,
    config: Audio8Config,
    frames: int,
    seed: int,
    ref: R.Generation | None = None,
    table: list[dict] | None = None,
) -> list[Rung]:
    """Gated rows (PRECISION_MIN: fp32 both ARs, slow int8, fast fp16); each note also carries
    that AR's ungated row(s) so the table's whole content reaches the report."""
    memo: dict[str, list[dict]] = {} if table is None else {"rows": table}

    def rows() -> list[dict]:
        if "rows" not in memo:
            memo["rows"] = precision_table(lm, prompt, config, frames, seed, ref)
        return memo["rows"]

    def compute(ar: str, precision: str) -> Measured:
        table = rows()
        row = next(r for r in table if r["ar"] == ar and r["precision"] == precision)
        others = [
            r for r in table if r["ar"] == ar and (r["ar"], r["precision"]) not in PRECISION_MIN
        ]
        note = _row_note(row)
        if others and precision != "fp32":
            note += " | not gated: " + " | ".join(_row_note(r) for r in others)
        return Measured(row["agreement"], note)

    per_frame = {"slow": 1, "fast": config.num_codebooks - 1}
    return [
        Rung(
            f"precision[{ar} {precision}].draws",
            "draw_agreement",
            precision_threshold(ar, precision, per_frame[ar] * frames),
            lambda ar=ar, precision=precision: compute(ar, precision),
            True,
        )
        for ar, precision in PRECISION_MIN
    ]


__all__ = [
    "sampler_rungs",
    "sampler_bundle",
    "teacher_forced_rung",
    "free_run_rung",
    "codec_rung",
    "stream_vs_whole_rung",
    "precision_table",
    "precision_rungs",
    "format_table",
    "simulate_precision",
    "fake_quantize_int8",
    "gumbel_margin",
    "reference_run",
    "reference_columns",
    "compare_draws",
]
