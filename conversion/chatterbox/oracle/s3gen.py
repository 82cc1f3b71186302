"""The oracle's S3Gen stage: `S3Gen.inference` with the flow encoder, the CFM (every Euler
step's estimator inputs and output) and HiFT (f0, source, conv_post, the vocoder's wav) hooked,
and its random draws captured.
"""

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
    from chatterbox.tts import ChatterboxTTS


class _S3GenRecorder:
    """The hooks and wrappers `_run_s3gen` installs on S3Gen, and what they saw.

    `rec` takes the module intermediates, `steps` each Euler step's estimator x, t and output,
    `shared` the estimator inputs that must not change between steps (mu, mask, spks, cond).
    """

    def __init__(self, estimator: torch.nn.Module) -> None:
        self.rec: dict[str, np.ndarray] = {}
        self.steps: dict[str, list[np.ndarray]] = {"x": [], "t": [], "v": []}
        self.shared: dict[str, np.ndarray] = {}
        self._est_sig = inspect.signature(estimator.forward)  # before the forward is wrapped

    def put(self, key: str) -> Callable[..., None]:
        """A forward hook recording the module's output (the first, for a tuple) as `key`."""

        def hook(_m: Any, _a: Any, out: Any) -> None:
            self.rec[key] = to_numpy(out[0] if isinstance(out, tuple | list) else out)

        return hook

    def pre(self, key: str, index: int = 0) -> Callable[..., None]:
        """A forward pre-hook recording the module's positional input `index` as `key`."""

        def hook(_m: Any, args: tuple) -> None:
            self.rec[key] = to_numpy(args[index])

        return hook

    def on_decoder(self, _m: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        for name, key in (("mu", "mu"), ("mask", "cfm_mask"), ("spks", "cfm_spks")):
            self.rec[key] = to_numpy(kwargs[name])
        self.rec["cfm_cond"] = to_numpy(kwargs["cond"])

    def on_source(self, _m: Any, _a: Any, out: tuple) -> None:
        self.rec["source"], self.rec["source_uv"] = to_numpy(out[0]), to_numpy(out[2])

    def _check_shared(self, arguments: dict[str, Any]) -> None:
        for name in ("mu", "mask", "spks", "cond"):
            value = to_numpy(arguments[name])
            if name not in self.shared:
                self.shared[name] = value
            elif not np.array_equal(self.shared[name], value):
                raise RuntimeError(f"oracle: estimator input {name} changed between steps")

    def estimator(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Wraps the estimator's forward: each Euler step's x, t and velocity."""

        def forward(*args: Any, **kwargs: Any) -> Any:
            bound = self._est_sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            out = original(*args, **kwargs)
            self.steps["x"].append(to_numpy(a["x"]))
            self.steps["t"].append(to_numpy(a["t"]))
            self.steps["v"].append(to_numpy(out))
            self._check_shared(a)
            return out

        return forward

    def vocoder(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Wraps HiFT's inference: its wav before S3Gen's in-place trim_fade."""

        def inference(*args: Any, **kwargs: Any) -> Any:
            wav, source = original(*args, **kwargs)
            self.rec["wav_vocoder"] = to_numpy(wav)
            return wav, source

        return inference

    def install(self, stack: contextlib.ExitStack, s3: Any) -> None:
        """Every hook and wrapper, removed when `stack` closes."""
        flow, hift = s3.flow, s3.mel2wav
        add = stack.enter_context(forward_hooks())
        add(flow.input_embedding, self.pre("flow_tokens"), pre=True)
        add(flow.encoder, self.put("flow_encoder_out"))
        add(flow.decoder, self.on_decoder, pre=True, kwargs=True)
        add(flow.decoder, self.put("cfm_out"))
        add(hift.f0_predictor, self.pre("mel"), pre=True)
        add(hift.f0_predictor, self.put("f0"))
        add(hift.f0_upsamp, self.put("f0_upsampled"))
        add(hift.m_source.l_sin_gen, self.put("sine_waves"))
        add(hift.m_source, self.on_source)
        add(hift.conv_post, self.put("hift_conv_post"))
        stack.enter_context(wrap_method(flow.decoder.estimator, "forward", self.estimator))
        stack.enter_context(wrap_method(hift, "inference", self.vocoder))

    def intermediates(self, draws: dict[str, Any]) -> dict[str, np.ndarray]:
        """What was recorded, with the CFM noise and the per-step arrays stacked."""
        rec = self.rec
        rec["flow_tokens"] = rec["flow_tokens"].astype(np.int64)
        rec["z"] = np.array(draws["randn_like/0"], copy=True)
        rec["cfm_t"] = np.stack(self.steps["t"])  # [S, 2]
        rec["cfm_x"] = np.stack(self.steps["x"])  # [S, 2, 80, T2] (both rows are x)
        rec["cfm_velocity"] = np.stack(self.steps["v"])  # [S, 2, 80, T2] (cond row, then uncond)
        for name, value in self.shared.items():
            rec[f"cfm_{name}_in"] = value  # [2, ...]: row 1 zeroed for CFG (mask is in both)
        return rec


def _run_s3gen(
    model: ChatterboxTTS, speech_tokens: torch.Tensor, ref_dict: dict, n_cfm_timesteps: int
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
