"""The reference's generate loop: one slow pass over the prompt, then per frame the semantic draw
with RAS, the fast AR's nine draws and the column fed back, each frame recorded with its logits
and uniforms (`FrameRecord`, `Generation`: what the gate's rungs compare with)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..config import Audio8Config
from ..sampling import SamplingParams
from .layers import StaticKV, compact_logits
from .model import Audio8LM
from .sampler import SemanticDraw, draw_semantic_full, expand_uniforms, next_window

# ---------------------------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------------------------


@dataclass
class FrameRecord:
    step: int
    position: int  # the KV row of the column fed to produce this frame's logits
    logits: np.ndarray  # [4097] slow logits (semantic ids, eos)
    window: np.ndarray  # [W] vocab ids seen by RAS (-1 empty); all -1 at step 0 (None there)
    normal: int
    high: int
    semantic: int  # vocab id after RAS
    used_high: bool
    codes: np.ndarray  # [10] code_0 + nine fast draws (eos frame: code_0 clamped)
    fast_logits: np.ndarray  # [9, 4096]
    u_slow: np.ndarray  # [2, 4097]
    u_fast: np.ndarray  # [9, 4096]


@dataclass
class Generation:
    codes: np.ndarray  # [10, frames] emitted frames (eos frame excluded)
    frames: list[FrameRecord] = field(default_factory=list)
    finished: bool = False  # eos drawn
    prefill_logits: np.ndarray | None = None  # [4097] of the last prompt row


UniformsFn = Callable[[int], tuple[np.ndarray, np.ndarray]]


def seeded_uniforms(seed: int, config: Audio8Config) -> UniformsFn:
    """u_slow [2, 4097], u_fast [9, 4096] per step from one NumPy generator, in (0, 1)."""
    rng = np.random.default_rng(seed)
    n_slow = config.semantic_count + 1
    n_fast = config.num_codebooks - 1

    def fn(step: int):
        u_s = rng.random((2, n_slow), dtype=np.float32)
        u_f = rng.random((n_fast, config.codebook_size), dtype=np.float32)
        tiny = np.finfo(np.float32).tiny
        return np.maximum(u_s, tiny), np.maximum(u_f, tiny)

    return fn


def _prompt_rows(prompt: np.ndarray | torch.Tensor, config: Audio8Config) -> torch.Tensor:
    """The prompt as a long tensor [11, P], P below the context length."""
    c = config
    prompt = torch.as_tensor(np.asarray(prompt), dtype=torch.long)
    if prompt.dim() != 2 or prompt.shape[0] != c.num_codebooks + 1:
        raise ValueError(f"prompt must be [{c.num_codebooks + 1}, P], got {list(prompt.shape)}")
    if prompt.shape[1] >= c.max_seq_len:
        raise ValueError(f"prompt length {prompt.shape[1]} must be smaller than {c.max_seq_len}")
    return prompt


def _uniform_tensors(
    uniforms: UniformsFn | Sequence[tuple[np.ndarray, np.ndarray]] | None, config: Audio8Config
) -> Callable[[int], tuple[torch.Tensor, torch.Tensor]]:
    """step -> (u_slow [1, 2, 4097], u_fast [1, 9, 4096]) float32 tensors, from a function or a
    recorded list (default: `seeded_uniforms(0)`)."""
    if uniforms is None:
        uniforms = seeded_uniforms(0, config)
    get_u = uniforms if callable(uniforms) else (lambda k: uniforms[k])

    def at(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        u_s, u_f = get_u(step)
        u_s = torch.as_tensor(np.asarray(u_s, np.float32))[None]
        u_f = torch.as_tensor(np.asarray(u_f, np.float32))[None]
        return u_s, u_f

    return at


def _forced_column(forced: np.ndarray | None, step: int) -> torch.Tensor | None:
    """The teacher-forced column [1, 11] of `step`, or None when not forcing."""
    return None if forced is None else torch.as_tensor(np.asarray(forced[step]))[None].long()


def _fast_codes(
    model: Audio8LM,
    fast_hidden: torch.Tensor,
    d: SemanticDraw,
    col: torch.Tensor | None,
    u_f: torch.Tensor,
    sp: SamplingParams,
    caches: list[StaticKV],
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fast AR on the drawn semantic, or on the forced column's semantic and codes."""
    if col is None:
        return model.fast_frame(fast_hidden, d.semantic, u_f, sp, None, caches)
    return model.fast_frame(fast_hidden, col[:, 0], u_f, sp, col[:, 1:], caches)


def _frame_record(
    step: int,
    position: int,
    window: torch.Tensor | None,
    ras_window: int,
    *,
    logits: torch.Tensor,
    draw: SemanticDraw,
    codes: torch.Tensor,
    fast_logits: torch.Tensor,
    u_slow: torch.Tensor,
    u_fast: torch.Tensor,
) -> FrameRecord:
    """One step's record (batch row 0); `window` None at step 0 is recorded as all empty."""
    return FrameRecord(
        step=step,
        position=position,
        logits=logits[0].numpy(),
        window=(np.full(ras_window, -1) if window is None else window[0].numpy()),
        normal=int(draw.normal),
        high=int(draw.high),
        semantic=int(draw.semantic),
        used_high=bool(draw.used_high),
        codes=codes[0].numpy(),
        fast_logits=fast_logits[0].numpy(),
        u_slow=u_slow[0].numpy(),
        u_fast=u_fast[0].numpy(),
    )


def _fed_column(
    d: SemanticDraw, codes: torch.Tensor, col: torch.Tensor | None, eos_token_id: int
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The frame's column [1, 11] and the semantic the RAS window takes: the forced column, else
    the drawn semantic and codes; None when the draw is eos (generation stops)."""
    if col is not None:
        return col, col[:, 0]
    if int(d.semantic) == eos_token_id:
        return None
    return torch.cat((d.semantic[:, None], codes), dim=1), d.semantic


@torch.no_grad()
def generate(
    model: Audio8LM,
    prompt: np.ndarray | torch.Tensor,
    max_frames: int,
    uniforms: UniformsFn | Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
    sampling: SamplingParams | None = None,
    forced: np.ndarray | None = None,
) -> Generation:
    """The publisher's `generate` for one prompt [11, P]: one slow pass over the prompt, then
    one frame per step (full-vocabulary draw with RAS, fast AR over its static caches).

    `uniforms` is a function step -> (u_slow [2,4097], u_fast [9,4096]) or a recorded list of
    such pairs (default: `seeded_uniforms(0)`). `forced` [frames, 11] teacher-forces each frame's
    column ([semantic id, code_0..code_9]): the draws are still made and recorded, but the forced
    column is what the fast AR and the next slow step are fed (no eos stop while forcing).
    """
    c = model.config
    sp = sampling or SamplingParams.from_config(c)
    prompt = _prompt_rows(prompt, c)
    width = prompt.shape[1]
    max_frames = min(int(max_frames), c.max_seq_len - width)
    get_u = _uniform_tensors(uniforms, c)

    slow_caches = model.slow_caches(1, width + max(max_frames, 0))
    fast_caches = model.fast_caches(1)
    logits, fast_hidden = model.slow_step(prompt[None], slow_caches)
    out = Generation(codes=np.zeros((c.num_codebooks, 0), np.int64))
    out.prefill_logits = compact_logits(logits, c)[0].numpy()
    window = None
    emitted = []
    for step in range(max_frames):
        u_s, u_f = get_u(step)
        d = draw_semantic_full(logits, expand_uniforms(u_s, c), window, c, sp)
        col = _forced_column(forced, step)
        codes, fast_logits = _fast_codes(model, fast_hidden, d, col, u_f, sp, fast_caches)
        out.frames.append(
            _frame_record(
                step,
                width - 1 + step,
                window,
                sp.ras_window,
                logits=compact_logits(logits, c),
                draw=d,
                codes=codes,
                fast_logits=fast_logits,
                u_slow=u_s,
                u_fast=u_f,
            )
        )
        fed = _fed_column(d, codes, col, c.eos_token_id)
        if fed is None:
            out.finished = True
            break
        column, semantic_fed = fed
        emitted.append(column[0, 1:].numpy())
        window = next_window(window, semantic_fed, sp.ras_window)
        if step + 1 == max_frames:
            break
        logits, fast_hidden = model.slow_step(column[:, :, None], slow_caches)
    if emitted:
        out.codes = np.stack(emitted, axis=1)
    return out
