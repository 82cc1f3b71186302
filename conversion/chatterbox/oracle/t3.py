"""The oracle's T3 stage: generate()'s text path and exaggeration update, then `T3.inference`
with its draw patched (an exponential race on recorded uniforms, or forced tokens) and its
conditioning, prefill embeddings and logits hooked; its tokens cleaned for S3Gen as generate()
cleans them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conversion.core.errors import UserError
from conversion.core.host.sampling import U_MAX, U_MIN
from oracles.hooks import forward_hooks, to_numpy

from .recording import SPEECH_VOCAB, _torch_function

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS


def _text_tokens(model: ChatterboxTTS, text: str) -> tuple[str, torch.Tensor]:
    """generate()'s text path: punc_norm, the tokenizer, the CFG batch of two, SOT/EOT."""
    from chatterbox.tts import punc_norm

    normalized = punc_norm(text)
    text_tokens = model.tokenizer.text_to_tokens(normalized)
    text_tokens = torch.cat([text_tokens, text_tokens], dim=0)
    hp = model.t3.hp
    text_tokens = torch.nn.functional.pad(text_tokens, (1, 0), value=hp.start_text_token)
    text_tokens = torch.nn.functional.pad(text_tokens, (0, 1), value=hp.stop_text_token)
    return normalized, text_tokens


def _update_exaggeration(model: ChatterboxTTS, exaggeration: float) -> None:
    """generate(): the exaggeration update, as the publisher writes it."""
    if exaggeration != model.conds.t3.emotion_adv[0, 0, 0]:
        from chatterbox.models.t3.modules.cond_enc import T3Cond

        old = model.conds.t3
        model.conds.t3 = T3Cond(
            speaker_emb=old.speaker_emb,
            cond_prompt_speech_tokens=old.cond_prompt_speech_tokens,
            emotion_adv=exaggeration * torch.ones(1, 1, 1),
        )


def _check_cfg_weight(cfg_weight: float) -> None:
    if not cfg_weight > 0:
        # generate() would build one text row, T3.inference still concatenates two BOS rows
        raise UserError(
            f"cfg_weight must be > 0 (the publisher's T3 loop needs CFG), got {cfg_weight}"
        )


def _forced_path(model: ChatterboxTTS, forced_tokens: np.ndarray | None) -> np.ndarray | None:
    """`forced_tokens` as a flat int64 array of speech-vocabulary ids (None: none forced)."""
    if forced_tokens is None:
        return None
    forced = np.asarray(forced_tokens, dtype=np.int64).reshape(-1)
    vocab = model.t3.hp.speech_tokens_dict_size
    if forced.size == 0 or forced.min() < 0 or forced.max() >= vocab:
        raise ValueError(f"forced_tokens must be 1..n tokens in [0, {vocab})")
    return forced


def _time_steps(add: Callable[..., None], t3: Any) -> list[float]:
    """The ms of each forward of T3's loop, transformer to speech head (the first is the
    prefill, the rest one decode step each: the work a bundle's `t3.decode` call does)."""
    step_ms: list[float] = []
    began = [0.0]

    def step_begins(_m: Any, _args: Any, _kwargs: dict[str, Any]) -> None:
        began[0] = time.perf_counter()

    def step_ends(_m: Any, _a: Any, _out: Any) -> None:
        step_ms.append((time.perf_counter() - began[0]) * 1e3)

    add(t3.tfmr, step_begins, pre=True, kwargs=True)
    add(t3.speech_head, step_ends)
    return step_ms


def _run_t3(
    model: ChatterboxTTS,
    text_tokens: torch.Tensor,
    *,
    seed: int,
    cfg_weight: float,
    temperature: float,
    repetition_penalty: float,
    min_p: float,
    top_p: float,
    max_new_tokens: int,
    forced: np.ndarray | None,
) -> dict[str, Any]:
    """`T3.inference` with the draw patched and the conditioning, embeds and logits hooked."""
    t3 = model.t3
    gen = torch.Generator().manual_seed(int(seed))
    uniforms: list[np.ndarray] = []
    logits: list[np.ndarray] = []
    seen: dict[str, np.ndarray] = {}
    steps_drawn = [0]

    def draw(probs: torch.Tensor, num_samples: int = 1, *args: Any, **kwargs: Any) -> torch.Tensor:
        if num_samples != 1 or probs.ndim != 2 or probs.shape[0] != 1:
            raise RuntimeError(f"oracle: unexpected multinomial call {tuple(probs.shape)}")
        step = steps_drawn[0]
        steps_drawn[0] += 1
        if forced is not None:
            token = int(forced[step])
        else:
            u = torch.rand(probs.shape[-1], generator=gen).clamp_(U_MIN, U_MAX)
            uniforms.append(u.numpy().copy())
            token = int(torch.argmax(probs[0].float() / -torch.log(u)))
        return torch.tensor([[token]], dtype=torch.long, device=probs.device)

    def on_cond(_m: Any, _a: Any, out: torch.Tensor) -> None:
        seen.setdefault("cond_emb", to_numpy(out))  # the first call is the utterance's conditioning

    def on_tfmr(_m: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        if "prefill" not in seen and kwargs.get("inputs_embeds") is not None:
            seen["prefill"] = to_numpy(kwargs["inputs_embeds"])

    def on_head(_m: Any, _a: Any, out: torch.Tensor) -> None:
        logits.append(to_numpy(out[:, -1, :].float()))

    with contextlib.ExitStack() as stack:
        add = stack.enter_context(forward_hooks())
        add(t3.cond_enc, on_cond)
        add(t3.tfmr, on_tfmr, pre=True, kwargs=True)
        step_ms = _time_steps(add, t3)  # after on_tfmr's copy, before on_head's
        add(t3.speech_head, on_head)
        stack.enter_context(_torch_function("multinomial", draw))
        start = time.perf_counter()
        tokens = t3.inference(
            t3_cond=model.conds.t3,
            text_tokens=text_tokens,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            cfg_weight=cfg_weight,
            repetition_penalty=repetition_penalty,
            min_p=min_p,
            top_p=top_p,
        )
        seconds = time.perf_counter() - start
    tokens = to_numpy(tokens).astype(np.int64)  # [1, N]: the loop draws from the CFG-combined row
    n = tokens.shape[1]
    stacked = np.stack(logits[:n])  # [N, B, V]
    out = {
        "cond_emb": seen["cond_emb"],
        "prefill": seen["prefill"],
        "tokens": tokens[:1],
        "cond_logits": stacked[:, 0],
        "uncond_logits": stacked[:, 1] if stacked.shape[1] > 1 else None,
        "uniforms": np.stack(uniforms) if uniforms else None,
        "seconds": seconds,
        "step_ms": step_ms,
    }
    return out


def _speech_tokens_for_s3gen(t3_tokens: np.ndarray) -> torch.Tensor:
    """generate()'s post-processing: drop_invalid_tokens (everything up to and including a
    start-of-speech token and from a stop token on), then `< 6561` (the other special ids)."""
    from chatterbox.models.s3tokenizer import drop_invalid_tokens

    tokens = torch.from_numpy(t3_tokens[0].copy())
    try:
        tokens = drop_invalid_tokens(tokens)
    except TypeError as err:  # x[s:e] with a 2-element tensor index
        raise RuntimeError(
            "the publisher's drop_invalid_tokens fails when T3 emits start-of-speech (6561) or "
            f"stop (6562) more than once; tokens: {t3_tokens[0].tolist()}"
        ) from err
    return tokens[tokens < SPEECH_VOCAB]


def _nonempty(speech_tokens: torch.Tensor) -> torch.Tensor:
    if speech_tokens.numel() == 0:
        raise UserError(
            "the T3 loop produced no valid speech tokens (stop at the first step?): "
            "nothing for S3Gen to render"
        )
    return speech_tokens
