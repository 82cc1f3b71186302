"""The oracle's T3 stage: generate()'s text path, then `T3.inference_turbo` with its draw patched
(an exponential race on recorded uniforms) and its prefill embeddings, logits and processed
distributions recorded."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conversion.core.host.sampling import U_MAX, U_MIN
from oracles.hooks import forward_hooks, to_numpy
from oracles.patching import patch_torch_functions

if TYPE_CHECKING:
    from chatterbox.tts_turbo import ChatterboxTurboTTS

START_SPEECH, STOP_SPEECH, SPEECH_TOKENS = 6561, 6562, 6561


def _text_tokens(model: ChatterboxTurboTTS, text: str) -> tuple[str, torch.Tensor]:
    """generate()'s text path: punc_norm, then the GPT-2 tokenizer as generate() calls it."""
    from chatterbox.tts_turbo import punc_norm

    normalized = punc_norm(text)
    ids = model.tokenizer(normalized, return_tensors="pt", padding=True, truncation=True)
    return normalized, ids.input_ids


def _run_t3(
    model: ChatterboxTurboTTS,
    text_tokens: torch.Tensor,
    *,
    seed: int,
    temperature: float,
    top_k: int,
    top_p: float,
    repetition_penalty: float,
    max_gen_len: int,
) -> dict[str, Any]:
    """`T3.inference_turbo` with the draw patched and the prefill, logits and probs recorded."""
    t3 = model.t3
    gen = torch.Generator().manual_seed(int(seed))
    uniforms: list[np.ndarray] = []
    probs_seen: list[np.ndarray] = []
    drawn: list[int] = []
    logits: list[np.ndarray] = []
    seen: dict[str, np.ndarray] = {}

    def race(_name: str, _original: Any) -> Any:
        def draw(probs: torch.Tensor, num_samples: int = 1, *a: Any, **k: Any) -> torch.Tensor:
            if num_samples != 1 or probs.ndim != 2 or probs.shape[0] != 1:
                raise RuntimeError(f"oracle: unexpected multinomial call {tuple(probs.shape)}")
            u = torch.rand(probs.shape[-1], generator=gen).clamp_(U_MIN, U_MAX)
            uniforms.append(u.numpy().copy())
            probs_seen.append(to_numpy(probs[0].float()))
            # the winner of an exponential race with rates probs: exactly a draw from probs
            token = int(torch.argmax(probs[0].float() / -torch.log(u)))
            drawn.append(token)
            return torch.tensor([[token]], dtype=torch.long, device=probs.device)

        return draw

    def on_tfmr(_m: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        if "prefill" not in seen and kwargs.get("inputs_embeds") is not None:
            seen["prefill"] = to_numpy(kwargs["inputs_embeds"])

    def on_head(_m: Any, _a: Any, out: torch.Tensor) -> None:
        logits.append(to_numpy(out[0, -1, :].float()))

    with contextlib.ExitStack() as stack:
        add = stack.enter_context(forward_hooks())
        add(t3.tfmr, on_tfmr, pre=True, kwargs=True)
        add(t3.speech_head, on_head)
        stack.enter_context(patch_torch_functions(["multinomial"], race))
        start = time.perf_counter()
        returned = t3.inference_turbo(
            t3_cond=model.conds.t3,
            text_tokens=text_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            repetition_penalty=repetition_penalty,
            max_gen_len=max_gen_len,
        )
        seconds = time.perf_counter() - start
    n = len(drawn)
    return {
        "prefill": seen["prefill"],
        "tokens": np.asarray(drawn, np.int64).reshape(1, n),  # every draw, a final stop included
        "returned": to_numpy(returned).astype(np.int64),  # inference_turbo's result (stop removed)
        "logits": np.stack(logits[:n]),  # [N, V] the speech head's raw logits per draw
        "probs": np.stack(probs_seen),  # [N, V] the processed distribution each draw is from
        "uniforms": np.stack(uniforms),  # [N, V]
        "seconds": seconds,
    }


def previous_tokens(tokens: np.ndarray, step: int) -> np.ndarray:
    """The ids inference_turbo hands its processors (the repetition penalty) at `step`: the
    start-of-speech token at the first draw, then the tokens drawn so far (start left out)."""
    flat = np.asarray(tokens, np.int64).reshape(-1)
    return np.array([START_SPEECH], np.int64) if step == 0 else flat[:step].copy()


def _speech_tokens_for_s3gen(returned: np.ndarray) -> torch.Tensor:
    """generate(): `speech_tokens[speech_tokens < 6561]`, then three S3GEN_SIL appended."""
    from chatterbox.models.s3gen.const import S3GEN_SIL

    tokens = torch.from_numpy(returned.copy())
    tokens = tokens[tokens < SPEECH_TOKENS]
    silence = torch.tensor([S3GEN_SIL, S3GEN_SIL, S3GEN_SIL]).long()
    return torch.cat([tokens, silence])
