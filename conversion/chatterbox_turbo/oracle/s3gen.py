"""The oracle's S3Gen stage: `S3Gen.inference` (mean-flow, 2 steps) with the flow encoder, each
mean-flow step's estimator inputs (x, t, r) and output, and HiFT (f0, source, conv_post, the
vocoder's wav) recorded, and its random draws captured."""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from oracles import capture_random_draws
from oracles.hooks import forward_hooks, to_numpy, wrap_method

if TYPE_CHECKING:
    from chatterbox.tts_turbo import ChatterboxTurboTTS


class _S3GenRecorder:
    """The hooks and wrappers on S3Gen, and what they saw: `rec` the module intermediates,
    `steps` each mean-flow step's estimator x, t, r and velocity, `shared` the estimator inputs
    that must not change between steps (mu, mask, spks, cond)."""

    def __init__(self, estimator: torch.nn.Module) -> None:
        self.rec: dict[str, np.ndarray] = {}
        self.steps: dict[str, list[np.ndarray]] = {"x": [], "t": [], "r": [], "v": []}
        self.shared: dict[str, np.ndarray] = {}
        self._est_sig = inspect.signature(estimator.forward)  # before the forward is wrapped

    def put(self, key: str) -> Callable[..., None]:
        def hook(_m: Any, _a: Any, out: Any) -> None:
            self.rec[key] = to_numpy(out[0] if isinstance(out, tuple | list) else out)

        return hook

    def pre(self, key: str) -> Callable[..., None]:
        def hook(_m: Any, args: tuple) -> None:
            self.rec[key] = to_numpy(args[0])

        return hook

    def on_source(self, _m: Any, _a: Any, out: tuple) -> None:
        self.rec["source"], self.rec["source_uv"] = to_numpy(out[0]), to_numpy(out[2])

    def estimator(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def forward(*args: Any, **kwargs: Any) -> Any:
            bound = self._est_sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            out = original(*args, **kwargs)
            for name in ("x", "t", "r"):
                self.steps[name].append(to_numpy(a[name]))
            self.steps["v"].append(to_numpy(out))
            for name in ("mu", "mask", "spks", "cond"):
                value = to_numpy(a[name])
                if name not in self.shared:
                    self.shared[name] = value
                elif not np.array_equal(self.shared[name], value):
                    raise RuntimeError(f"oracle: estimator input {name} changed between steps")
            return out

        return forward

    def vocoder(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """HiFT's inference: its wav before S3Gen's in-place trim_fade."""

        def inference(*args: Any, **kwargs: Any) -> Any:
            wav, source = original(*args, **kwargs)
            self.rec["wav_vocoder"] = to_numpy(wav)
            return wav, source

        return inference

    def install(self, stack: contextlib.ExitStack, s3: Any) -> None:
        flow, hift = s3.flow, s3.mel2wav
        add = stack.enter_context(forward_hooks())
        add(flow.input_embedding, self.pre("flow_tokens"), pre=True)
        add(flow.encoder, self.put("flow_encoder_out"))
        add(flow.decoder, self.put("cfm_out"))
        add(hift.f0_predictor, self.pre("mel"), pre=True)
        add(hift.f0_predictor, self.put("f0"))
        add(hift.m_source, self.on_source)
        add(hift.conv_post, self.put("hift_conv_post"))
        stack.enter_context(wrap_method(flow.decoder.estimator, "forward", self.estimator))
        stack.enter_context(wrap_method(hift, "inference", self.vocoder))

    def intermediates(self, draws: dict[str, Any]) -> dict[str, np.ndarray]:
        rec = self.rec
        rec["flow_tokens"] = rec["flow_tokens"].astype(np.int64)
        # flow_inference's noise over the generated frames (`randn`), then the CFM's own
        # `randn_like` over prompt + generated, whose generated part the noise replaces
        rec["meanflow_noise"] = np.array(draws["randn/0"], copy=True)
        rec["cfm_z_drawn"] = np.array(draws["randn_like/0"], copy=True)
        for name, key in (("t", "cfm_t"), ("r", "cfm_r"), ("x", "cfm_x"), ("v", "cfm_velocity")):
            rec[key] = np.stack(self.steps[name])  # [S, ...]; t, r: [S, 1]
        for name, value in self.shared.items():
            rec[f"cfm_{name}_in"] = value
        return rec


def _run_s3gen(
    model: ChatterboxTurboTTS, speech_tokens: torch.Tensor, ref_dict: dict, n_cfm_timesteps: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, float]:
    """`S3Gen.inference` with hooks: (intermediates, draws, wav after trim_fade, seconds)."""
    s3 = model.s3gen
    recorder = _S3GenRecorder(s3.flow.decoder.estimator)
    with contextlib.ExitStack() as stack:
        recorder.install(stack, s3)
        draws = stack.enter_context(capture_random_draws())
        start = time.perf_counter()
        wav, _ = s3.inference(
            speech_tokens=speech_tokens, ref_dict=ref_dict, n_cfm_timesteps=n_cfm_timesteps
        )
        seconds = time.perf_counter() - start
    return recorder.intermediates(draws), dict(draws), to_numpy(wav), seconds
