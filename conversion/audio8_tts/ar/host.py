"""The frame loop over the bundle's `ar` graph: windowed prefill, then one runtime call per frame.

    prompt [11, P] ─▶ prefill(columns 0..P−2, 32 per call) ─▶ KV state
    frame(column P−1, pos P−1) ─▶ frame 0 ─▶ frame(frame 0's column, pos P) ─▶ frame 1 ─▶ …

Each `frame` call is the slow step, the semantic draw with RAS, and the fast AR's nine codebook
draws (`ar.graphs.Audio8ARGraph.frame`). The host keeps only the RAS window: the publisher's
quirk is reproduced here — after step 0 the window is empty (frame 0's semantic never enters
it), then it rolls by one semantic per frame. Generation stops on eos (that frame is not
emitted) or the frame budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from conversion.core.errors import UserError

from ..config import Audio8Config
from .graphs import FRAME, GRAPH, PREFILL, PREFILL_WINDOW

Uniforms = Callable[[int], tuple[np.ndarray, np.ndarray]] | Sequence[tuple[np.ndarray, np.ndarray]]


@dataclass
class Frame:
    logits: np.ndarray  # [4097] slow logits (semantic ids, then eos)
    window: np.ndarray  # [W] the RAS window this frame saw (-1 = empty)
    semantic: int  # vocabulary id after RAS
    normal: int
    high: int
    codes: np.ndarray  # [10] code_0 + nine fast draws
    fast_logits: np.ndarray  # [9, 4096]


@dataclass
class FrameLoopResult:
    codes: np.ndarray  # [10, frames] emitted (eos frame excluded)
    frames: list[Frame] = field(default_factory=list)
    finished: bool = False  # eos drawn
    prefill_calls: int = 0


def _prefill(session, prompt: np.ndarray, columns: int, config: Audio8Config, state: str) -> int:
    """Write KV rows 0..columns-1 in windows of 32; returns the number of runtime calls."""
    calls = 0
    rows = config.num_codebooks + 1
    for start in range(0, columns, PREFILL_WINDOW):
        n = min(PREFILL_WINDOW, columns - start)
        codes = np.zeros((1, rows, PREFILL_WINDOW), np.int32)
        codes[0, 0, :] = -1  # a padding column: the graph counts real columns by row 0 >= 0
        codes[0, :, :n] = prompt[:, start : start + n]
        session.run(GRAPH, PREFILL, {"codes": codes, "pos": np.array([start], np.int32)}, state)
        calls += 1
    return calls


def next_window(window: np.ndarray, step: int, semantic: int) -> np.ndarray:
    """The RAS window after `step` fed `semantic`: the publisher's `previous` is empty after
    step 0 (frame 0's semantic never enters it), then rolls left and appends."""
    if step == 0:
        return np.full(len(window), -1, np.int32)
    return np.concatenate([window[1:], [semantic]]).astype(np.int32)


def check_budget(prompt_columns: int, max_frames: int, config: Audio8Config) -> None:
    """Raise before any compute when prompt + frames cannot fit the KV state."""
    # the prefill's last window writes 32 rows from its start
    last_window_end = ((max(prompt_columns - 1, 1) - 1) // PREFILL_WINDOW + 1) * PREFILL_WINDOW
    need = max(prompt_columns - 1 + max_frames, last_window_end)
    if need > config.max_seq_len:
        raise UserError(
            f"audio8: the prompt ({prompt_columns} columns) plus {max_frames} frames needs "
            f"{need} KV rows, the graph holds {config.max_seq_len}: shorten the text (it is "
            "split per sentence) or the reference voice"
        )


def generate(
    session,
    prompt: np.ndarray,
    max_frames: int,
    uniforms: Uniforms,
    config: Audio8Config,
    forced: np.ndarray | None = None,
    state: str = "default",
    on_frame: Callable[[int, Frame], None] | None = None,
) -> FrameLoopResult:
    """The publisher's generate over the graph; `forced` [frames, 11] teacher-forces columns."""
    prompt = np.asarray(prompt, np.int64)
    rows = config.num_codebooks + 1
    if prompt.ndim != 2 or prompt.shape[0] != rows or prompt.shape[1] < 2:
        raise UserError(f"audio8: prompt must be [{rows}, P >= 2], got {list(prompt.shape)}")
    width = prompt.shape[1]
    if forced is not None:
        forced = np.asarray(forced, np.int64)
        max_frames = min(max_frames, forced.shape[0])
    check_budget(width, max_frames, config)
    get_u = uniforms if callable(uniforms) else (lambda k: uniforms[k])

    session.reset_state(GRAPH, state)
    result = FrameLoopResult(codes=np.zeros((config.num_codebooks, 0), np.int64))
    result.prefill_calls = _prefill(session, prompt, width - 1, config, state)
    column = prompt[:, width - 1]
    window_size = config.ras_window_size
    window = np.full(window_size, -1, np.int32)
    emitted = []
    for step in range(max_frames):
        u_slow, u_fast = get_u(step)
        fc = None if forced is None else forced[step]
        out = session.run(
            GRAPH,
            FRAME,
            {
                "codes": np.asarray(column, np.int32)[None, :, None],
                "pos": np.array([width - 1 + step], np.int32),
                "noise_slow": np.asarray(u_slow, np.float32),
                "window": window,
                "noise_fast": np.asarray(u_fast, np.float32),
                "forced": np.zeros(rows, np.int32) if fc is None else fc.astype(np.int32),
                "use_forced": np.array([0 if fc is None else 1], np.int32),
            },
            state,
        )
        frame = Frame(
            logits=out["logits"][0],
            window=window.copy(),
            semantic=int(out["semantic"][0]),
            normal=int(out["normal"][0]),
            high=int(out["high"][0]),
            codes=out["codes"].astype(np.int64),
            fast_logits=out["fast_logits"],
        )
        result.frames.append(frame)
        if on_frame is not None:
            on_frame(step, frame)
        if fc is None:
            if frame.semantic == config.eos_token_id:
                result.finished = True
                break
            column = np.concatenate([[frame.semantic], frame.codes])
        else:
            column = fc
        emitted.append(column[1:])
        window = next_window(window, step, int(column[0]))
    if emitted:
        result.codes = np.stack(emitted, axis=1)
    return result
