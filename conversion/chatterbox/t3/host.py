"""Host side of T3: input embeddings, the bucketed prefill, the CFG + sampling decode loop.

The graph ("t3", `t3.graphs`) is embeds-in; the host owns the four embedding tables
(`t3_host_arrays`, stored in the bundle with `add_arrays`) and builds every row exactly as the
publisher's `T3.inference` does (chatterbox-tts 0.1.7):

    prefill rows = cond_emb (34: speaker 1 + perceiver 32 + emotion 1)
                 + text  (SOT, ids, EOT: text_emb + text_pos_emb(0..T-1); batch row 1 has its
                          text_emb zeroed and keeps the positional embeddings: CFG uncond)
                 + speech_emb(6561) + speech_pos_emb(0)    (prepare_input_embeds)
                 + speech_emb(6561) + speech_pos_emb(0)    (inference's bos_embed: the start
                                                             token appears twice)
    decode step i (0-based index of the token just drawn):
                   speech_emb(token_i) + speech_pos_emb(i + 1), the same for both batch rows

and samples like the publisher's loop: CFG `cond + w (cond - uncond)` on the last row's logits,
repetition penalty over the history (which starts with the start token 6561, the publisher's
`generated_ids`), temperature, min-p, then top-p (`..sampling.CHATTERBOX_ORDER`), and a
Gumbel draw from uniforms that are an input (`conversion.core.host.sampling`). It stops on the stop
token 6562 (not returned) or after `max_new_tokens` draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from conversion.core.errors import BucketOverflowError, UserError
from conversion.core.host.buckets import pad_to
from conversion.core.host.sampling import SamplingConfig, sample

from ..config import ChatterboxConfig
from .graphs import (
    GRAPH,
    START_SPEECH,
    STOP_SPEECH,
    T3_VOCAB,
    prefill_function_name,
    prefill_table,
)

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS

TABLES = ("text_emb", "text_pos_emb", "speech_emb", "speech_pos_emb")
COND_ROWS = 34  # speaker 1 + perceiver 32 + emotion 1


def t3_host_arrays(model: ChatterboxTTS) -> dict[str, np.ndarray]:
    """The embedding tables the host needs (float32), keyed by TABLES."""
    t3 = model.t3

    def table(module) -> np.ndarray:
        return module.weight.detach().float().cpu().numpy().copy()

    return {
        "text_emb": table(t3.text_emb),
        "text_pos_emb": table(t3.text_pos_emb.emb),
        "speech_emb": table(t3.speech_emb),
        "speech_pos_emb": table(t3.speech_pos_emb.emb),
    }


def _check_ids(ids: np.ndarray, table: np.ndarray, what: str) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise UserError(
            f"{what} ids must be in [0, {table.shape[0]}), got {ids.min()}..{ids.max()}"
        )


def _text_ids(text_ids: np.ndarray) -> np.ndarray:
    """One sequence of text ids (SOT/EOT included): a [T] vector, or [1, T] / [2, T] rows."""
    ids = np.asarray(text_ids)
    if ids.ndim == 2:
        if ids.shape[0] == 2 and not np.array_equal(ids[0], ids[1]):
            raise UserError("text_ids has two different rows: CFG needs the same text in both")
        if ids.shape[0] not in (1, 2):
            raise UserError(f"text_ids must be [T], [1, T] or [2, T], got {list(ids.shape)}")
        ids = ids[0]
    if ids.ndim != 1 or ids.size == 0:
        raise UserError(f"text_ids must be a non-empty sequence, got shape {list(ids.shape)}")
    return ids.astype(np.int64)


def prefill_embeds(
    arrays: dict[str, np.ndarray], cond_emb: np.ndarray, text_ids: np.ndarray
) -> np.ndarray:
    """[2, 34 + T + 2, 1024] float32: the publisher's prefill rows (row 0 cond, row 1 uncond)."""
    ids = _text_ids(text_ids)
    _check_ids(ids, arrays["text_emb"], "text")
    if ids.size > arrays["text_pos_emb"].shape[0]:
        raise BucketOverflowError(
            f"{ids.size} text tokens exceed T3's {arrays['text_pos_emb'].shape[0]} text positions"
        )
    cond = np.asarray(cond_emb, dtype=np.float32)
    if cond.ndim == 2:
        cond = cond[None]
    hidden = arrays["text_emb"].shape[1]  # HIDDEN in a bundle; smaller in the Swift fixtures
    if cond.shape[0] != 1 or cond.shape[2] != hidden:
        raise UserError(f"cond_emb must be [1, rows, {hidden}], got {list(cond.shape)}")
    text_pos = arrays["text_pos_emb"][: ids.size]
    text_cond = arrays["text_emb"][ids] + text_pos
    text_uncond = np.zeros_like(arrays["text_emb"][ids]) + text_pos  # text_emb[1].zero_()
    start = arrays["speech_emb"][START_SPEECH] + arrays["speech_pos_emb"][0]
    speech = np.stack([start, start])  # prepare_input_embeds' start row + inference's bos row
    rows = [np.concatenate([cond[0], t, speech]) for t in (text_cond, text_uncond)]
    return np.stack(rows).astype(np.float32)


def speech_step_embeds(arrays: dict[str, np.ndarray], token: int, step: int) -> np.ndarray:
    """[2, 1, 1024]: the row fed after drawing token number `step` (0-based)."""
    token = int(token)
    if not 0 <= token < arrays["speech_emb"].shape[0]:
        raise UserError(f"speech token {token} out of range")
    if step + 1 >= arrays["speech_pos_emb"].shape[0]:
        raise BucketOverflowError(f"speech step {step} exceeds T3's speech positions")
    row = arrays["speech_emb"][token] + arrays["speech_pos_emb"][step + 1]
    return np.broadcast_to(row, (2, 1, row.shape[-1])).astype(np.float32)


@dataclass
class T3Result:
    tokens: np.ndarray  # [n] int64, the stop token excluded
    cond_logits: np.ndarray  # [steps, V] float32, one row per draw
    uncond_logits: np.ndarray  # [steps, V]
    stopped: bool  # True when the stop token was drawn (or forced)

    @property
    def steps(self) -> int:
        return int(self.cond_logits.shape[0])


def check_fits(prompt_rows: int, max_new_tokens: int, config: ChatterboxConfig) -> int:
    """The prefill bucket for `prompt_rows`, or BucketOverflowError (bucket or KV length)."""
    bucket = prefill_table(config).select(P=prompt_rows)["P"]
    # Draw k is fed back at row prompt_rows + k for every draw but the last.
    last_row = prompt_rows + max_new_tokens - 2
    if last_row >= config.kv_length:
        raise BucketOverflowError(
            f"T3 KV cache too short: {prompt_rows} prompt rows + {max_new_tokens} new tokens "
            f"need {last_row + 1} rows, the graph holds {config.kv_length}; shorten the text "
            "or lower max_new_tokens"
        )
    return int(bucket)


def _uniforms_for(uniforms, step: int) -> np.ndarray:
    u = uniforms(step) if callable(uniforms) else np.asarray(uniforms)[step]
    u = np.asarray(u, dtype=np.float32).reshape(-1)
    if u.shape[0] != T3_VOCAB:
        raise UserError(f"uniforms for step {step}: {u.shape[0]} values, want {T3_VOCAB}")
    return u


def generate(
    session,
    arrays: dict[str, np.ndarray],
    cond_emb: np.ndarray,
    text_ids: np.ndarray,
    sampling: SamplingConfig,
    uniforms: Callable[[int], np.ndarray] | np.ndarray | None,
    max_new_tokens: int,
    config: ChatterboxConfig,
    forced_tokens: np.ndarray | list[int] | None = None,
    state: str = "default",
    on_step: Callable[[int, int], None] | None = None,
) -> T3Result:
    """T3's AR loop over the bundle's "t3" graph (a Session or IsolatedSession).

    `uniforms(step)` (or `uniforms[step]`) is the [V] randomness of draw `step`. With
    `forced_tokens` the given tokens are fed instead of draws (teacher forcing; `uniforms` may
    be None) and the loop runs min(len(forced_tokens), max_new_tokens) steps or to a forced stop.
    """
    if max_new_tokens < 1:
        raise UserError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if forced_tokens is None and uniforms is None:
        raise UserError("uniforms are required unless forced_tokens are given")
    embeds = prefill_embeds(arrays, cond_emb, text_ids)
    rows = embeds.shape[1]
    forced = None if forced_tokens is None else [int(t) for t in forced_tokens]
    steps = max_new_tokens if forced is None else min(max_new_tokens, len(forced))
    bucket = check_fits(rows, steps, config)

    session.reset_state(GRAPH, state)
    feed = {"embeds": pad_to(embeds, bucket, axis=1), "length": np.array([rows], np.int32)}
    logits = session.run(GRAPH, prefill_function_name(bucket), feed, state=state)["logits"]

    history = [START_SPEECH]
    tokens: list[int] = []
    conds, unconds = [], []
    stopped = False
    for step in range(steps):
        cond, uncond = logits[0].astype(np.float32), logits[1].astype(np.float32)
        conds.append(cond)
        unconds.append(uncond)
        if forced is not None:
            token = forced[step]
        else:
            token = int(
                sample(
                    cond,
                    _uniforms_for(uniforms, step),
                    sampling,
                    previous_tokens=np.asarray(history, np.int64),
                    uncond_logits=uncond,
                    candidates=None,  # the publisher's top-p sorts the whole vocabulary
                )
            )
        if token == STOP_SPEECH:
            stopped = True
            break
        tokens.append(token)
        history.append(token)
        if on_step is not None:
            on_step(step + 1, steps)
        if step == steps - 1:
            break
        feed = {
            "embeds": speech_step_embeds(arrays, token, step),
            "position": np.array([rows + step], np.int32),
        }
        logits = session.run(GRAPH, "decode", feed, state=state)["logits"]
    return T3Result(
        tokens=np.asarray(tokens, np.int64),
        cond_logits=np.stack(conds).astype(np.float32),
        uncond_logits=np.stack(unconds).astype(np.float32),
        stopped=stopped,
    )
