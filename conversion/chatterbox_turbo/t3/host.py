"""Host side of Turbo's T3: input embeddings, the bucketed prefill, the sampling decode loop.

The graph ("t3", `t3.graphs`) is embeds-in and adds GPT-2's learned positions itself; the host
owns the tables (`t3_host_arrays`) and builds every row exactly as the publisher's
`T3.prepare_input_embeds` does for `inference_turbo` (chatterbox-tts 0.1.7; Turbo's hp has
input_pos_emb None, no perceiver, no emotion_adv, and `inference_turbo` has no CFG):

    prefill rows = spkr_enc(speaker_emb)           1 row   (T3CondEnc: Linear 256 -> D)
                 + speech_emb(prompt tokens)       n rows  (prepare_conditioning; no positions
                                                             for GPT-2)
                 + text_emb(text ids)              T rows  (the tokenizer's ids: Turbo adds no
                                                             start/stop text tokens)
                 + speech_emb(6561)                1 row   (the start-of-speech token, once)
    decode row   = speech_emb(token just drawn)

and samples like `inference_turbo`: Temperature -> TopK -> TopP -> RepetitionPenalty
(`..sampling.TURBO_ORDER`: the penalty last, on the kept scores), then a draw. The penalised
history is the start token at draw 0 and, from draw 1 on, the drawn tokens only (the
publisher's `input_ids`: `speech_start_token`, then `torch.cat(generated_speech_tokens)`).
The draw is core's exponential race on uniforms that are an input (`conversion.core.host.
sampling`), so a recorded publisher draw (its `torch.multinomial` replaced by the same race on
the same uniforms) replays exactly.

The publisher's loop, mirrored as it is: draw 0 comes from the prefill and is never checked
for the stop token (a stop drawn there is fed back like any token); draws 1.. each follow one
decode step and the loop ends when one is the stop token 6562 or when every processed score is
-inf (no draw); `inference_turbo(max_gen_len=n)` draws at most n + 1 tokens (our
`max_new_tokens`). The returned tokens drop one trailing stop token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from conversion.core.errors import BucketOverflowError, UserError
from conversion.core.host.buckets import pad_to
from conversion.core.host.sampling import SamplingConfig, gumbel_argmax, process_logits

from .graphs import (
    GRAPH,
    START_SPEECH,
    STOP_SPEECH,
    T3_VOCAB,
    prefill_function_name,
    prefill_table,
)

TABLES = ("text_emb", "speech_emb", "spkr_enc_weight", "spkr_enc_bias")

# uniforms per draw: an array [draws, V], a function of the draw index, or a seed.
Draws = np.ndarray | Callable[[int], np.ndarray] | int


@dataclass(frozen=True)
class TurboCond:
    """T3's conditioning as `T3Cond` holds it for Turbo: the voice encoder's speaker embedding
    ([256] or [1, 256]) and the reference clip's speech tokens ([n] or [1, n]; n may be 0)."""

    speaker_emb: np.ndarray
    prompt_tokens: np.ndarray


def _check_turbo_hp(t3: Any) -> None:
    """What the host's row layout assumes of the publisher's T3; each a one-line refusal."""
    hp = t3.hp
    if not getattr(t3, "is_gpt", False):
        raise NotImplementedError("only Turbo's GPT-2 T3 is ported here (T3.is_gpt)")
    if hp.input_pos_emb is not None:
        raise NotImplementedError(f"input_pos_emb {hp.input_pos_emb!r}: Turbo's is None")
    if hp.use_perceiver_resampler or hp.emotion_adv:
        raise NotImplementedError("a perceiver or emotion_adv conditioning is not Turbo's")
    if hp.encoder_type != "voice_encoder":
        raise NotImplementedError(f"cond encoder {hp.encoder_type!r}: only voice_encoder")


def t3_host_arrays(model: Any) -> dict[str, np.ndarray]:
    """The tables the host needs (float32), keyed by TABLES, from the publisher's `T3` (or a
    `ChatterboxTurboTTS`, whose `.t3` it is)."""
    t3 = getattr(model, "t3", model)
    _check_turbo_hp(t3)

    def array(tensor) -> np.ndarray:
        return tensor.detach().float().cpu().numpy().copy()

    spkr = t3.cond_enc.spkr_enc
    return {
        "text_emb": array(t3.text_emb.weight),
        "speech_emb": array(t3.speech_emb.weight),
        "spkr_enc_weight": array(spkr.weight),  # [D, 256]
        "spkr_enc_bias": array(spkr.bias),  # [D]
    }


def _ids(ids: Any, table: np.ndarray, what: str, allow_empty: bool = False) -> np.ndarray:
    """One sequence of ids: [n] or [1, n], each a row of `table`."""
    a = np.asarray(ids)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 1 or (a.size == 0 and not allow_empty):
        raise UserError(f"{what} ids must be one sequence [n] or [1, n], got shape {list(a.shape)}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise UserError(f"{what} ids must be integers, got {a.dtype}")
    a = a.astype(np.int64)
    if a.size and (a.min() < 0 or a.max() >= table.shape[0]):
        raise UserError(f"{what} ids must be in [0, {table.shape[0]}), got {a.min()}..{a.max()}")
    return a


def cond_rows(arrays: dict[str, np.ndarray], cond: TurboCond) -> np.ndarray:
    """[1 + n, D] float32: T3CondEnc's output (speaker projection, then the prompt's rows)."""
    weight, bias = arrays["spkr_enc_weight"], arrays["spkr_enc_bias"]
    speaker = np.asarray(cond.speaker_emb, dtype=np.float32).reshape(-1)
    if speaker.size != weight.shape[1]:
        raise UserError(
            f"speaker_emb must hold {weight.shape[1]} values (the voice encoder's), got "
            f"{speaker.size}"
        )
    prompt = _ids(cond.prompt_tokens, arrays["speech_emb"], "prompt speech", allow_empty=True)
    spkr = (weight @ speaker + bias).astype(np.float32)  # nn.Linear: x W^T + b
    return np.concatenate([spkr[None], arrays["speech_emb"][prompt]]).astype(np.float32)


def prefill_embeds(
    arrays: dict[str, np.ndarray], cond: TurboCond, text_ids: np.ndarray
) -> np.ndarray:
    """[1, 1 + n + T + 1, D] float32: `prepare_input_embeds`' rows for `inference_turbo`."""
    ids = _ids(text_ids, arrays["text_emb"], "text")
    start = arrays["speech_emb"][START_SPEECH][None]
    rows = np.concatenate([cond_rows(arrays, cond), arrays["text_emb"][ids], start])
    return rows[None].astype(np.float32)


def speech_step_embeds(arrays: dict[str, np.ndarray], token: int) -> np.ndarray:
    """[1, 1, D]: the row fed after drawing `token` (speech_emb alone: the graph adds wpe)."""
    token = int(token)
    if not 0 <= token < arrays["speech_emb"].shape[0]:
        raise UserError(f"speech token {token} out of range [0, {arrays['speech_emb'].shape[0]})")
    return arrays["speech_emb"][token][None, None].astype(np.float32)


@dataclass
class T3TurboResult:
    tokens: np.ndarray  # [n] int64, one trailing stop token dropped (as inference_turbo does)
    logits: np.ndarray  # [steps, V] float32: the graph's logits before each draw
    stopped: bool  # True when the loop ended on a drawn (or forced) stop token

    @property
    def steps(self) -> int:
        return int(self.logits.shape[0])


def check_fits(
    prompt_rows: int, max_new_tokens: int, prefill_buckets: Sequence[int], kv_length: int
) -> int:
    """The prefill bucket for `prompt_rows`, or BucketOverflowError (bucket or KV length)."""
    bucket = prefill_table(prefill_buckets).select(P=prompt_rows)["P"]
    # Draw k is fed back at row prompt_rows + k for every draw but the last.
    last_row = prompt_rows + max_new_tokens - 2
    if last_row >= kv_length:
        raise BucketOverflowError(
            f"T3 KV cache too short: {prompt_rows} prompt rows + {max_new_tokens} new tokens "
            f"need {last_row + 1} rows, the graph holds {kv_length}; shorten the text or lower "
            "max_new_tokens"
        )
    return int(bucket)


def uniforms_for(draws: Draws) -> Callable[[int], np.ndarray]:
    """draw index -> [V] float32 uniforms. A seed draws V values per draw from
    `np.random.default_rng(seed)`, in draw order (call it for draws 0, 1, 2, ... once each)."""
    if isinstance(draws, (int, np.integer)) and not isinstance(draws, bool):
        rng = np.random.default_rng(int(draws))
        return lambda _step: rng.random(T3_VOCAB, dtype=np.float32)
    if callable(draws):
        source = draws
    else:
        table = np.asarray(draws)

        def source(step: int) -> np.ndarray:
            if step >= table.shape[0]:
                raise UserError(f"{table.shape[0]} rows of uniforms: none for draw {step}")
            return table[step]

    def checked(step: int) -> np.ndarray:
        u = np.asarray(source(step), dtype=np.float32).reshape(-1)
        if u.shape[0] != T3_VOCAB:
            raise UserError(f"uniforms for draw {step}: {u.shape[0]} values, want {T3_VOCAB}")
        return u

    return checked


def penalty_history(step: int, drawn: Sequence[int]) -> np.ndarray:
    """The ids the repetition penalty sees at draw `step`: inference_turbo's input_ids, the
    start token at draw 0 (`speech_start_token`), then the drawn tokens alone (the start token
    is not among them)."""
    return np.asarray([START_SPEECH] if step == 0 else list(drawn), np.int64)


def _draw(
    row: np.ndarray,
    step: int,
    drawn: Sequence[int],
    sampling: SamplingConfig,
    uniforms: Callable[[int], np.ndarray],
) -> int | None:
    """Draw `step` from the graph's logits; None when every processed score is -inf (from draw
    1 on: the publisher checks only inside its loop)."""
    scores = process_logits(row, sampling, penalty_history(step, drawn), candidates=None)
    if step > 0 and not np.isfinite(scores).any():
        return None
    return int(gumbel_argmax(scores, uniforms(step)))


def _check_sampling(sampling: SamplingConfig) -> None:
    if sampling.uses_cfg or sampling.uses_min_p:
        # ChatterboxTurboTTS.generate ignores both (with a warning); inference_turbo has neither
        raise UserError("Turbo's T3 samples without CFG or min-p: leave cfg_weight and min_p unset")


def generate(
    session: Any,
    arrays: dict[str, np.ndarray],
    cond: TurboCond,
    text_ids: np.ndarray,
    sampling: SamplingConfig,
    draws: Draws | None,
    max_new_tokens: int,
    prefill_buckets: Sequence[int],
    kv_length: int,
    forced_tokens: Sequence[int] | np.ndarray | None = None,
    state: str = "default",
    on_step: Callable[[int, int], None] | None = None,
) -> T3TurboResult:
    """Turbo T3's AR loop over the bundle's "t3" graph (a Session, IsolatedSession or runner:
    anything with `reset_state(graph, key)` and `run(graph, function, feed, state=key)`).

    `draws` are the uniforms of each draw (`uniforms_for`). With `forced_tokens` the given
    tokens are taken instead of draws (teacher forcing; `draws` may be None) and the loop runs
    min(len(forced_tokens), max_new_tokens) steps or to a forced stop (draw 1 on).
    `prefill_buckets` and `kv_length` are the graph's (its spec's meta).
    """
    if max_new_tokens < 1:
        raise UserError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if forced_tokens is None and draws is None:
        raise UserError("draws (uniforms or a seed) are required unless forced_tokens are given")
    _check_sampling(sampling)
    embeds = prefill_embeds(arrays, cond, text_ids)
    rows = embeds.shape[1]
    forced = None if forced_tokens is None else [int(t) for t in forced_tokens]
    steps = max_new_tokens if forced is None else min(max_new_tokens, len(forced))
    if steps < 1:
        raise UserError("forced_tokens is empty: nothing to feed")
    bucket = check_fits(rows, steps, prefill_buckets, kv_length)
    uniforms = None if forced is not None else uniforms_for(draws)

    session.reset_state(GRAPH, state)
    feed = {"embeds": pad_to(embeds, bucket, axis=1), "length": np.array([rows], np.int32)}
    logits = session.run(GRAPH, prefill_function_name(bucket), feed, state=state)["logits"]

    drawn: list[int] = []
    seen: list[np.ndarray] = []
    stopped = False
    for step in range(steps):
        row = np.asarray(logits, np.float32).reshape(-1)
        seen.append(row)
        token = forced[step] if forced is not None else _draw(row, step, drawn, sampling, uniforms)
        if token is None:
            seen.pop()  # inference_turbo breaks before drawing ("All logits are -inf")
            break
        drawn.append(token)
        if on_step is not None:
            on_step(step + 1, steps)
        if step > 0 and token == STOP_SPEECH:
            break
        if step == steps - 1:
            break
        feed = {
            "embeds": speech_step_embeds(arrays, token),
            "position": np.array([rows + step], np.int32),
        }
        logits = session.run(GRAPH, "decode", feed, state=state)["logits"]
    if drawn and drawn[-1] == STOP_SPEECH:
        stopped = True
        drawn.pop()
    return T3TurboResult(
        tokens=np.asarray(drawn, np.int64),
        logits=np.stack(seen).astype(np.float32),
        stopped=stopped,
    )
