"""The oracle's S3Gen stage, shared by Chatterbox's and Chatterbox Turbo's oracles:
`S3Gen.inference` with the flow encoder, every CFM step's estimator inputs and output, and HiFT
(f0, source, conv_post, the vocoder's wav) recorded, and its random draws captured. The models
differ only in the estimator inputs a step takes (mean-flow adds `r`), the noise draws their CFM
makes, and what more a model records (a subclass adds hooks to `install`)."""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from oracles import capture_random_draws
from oracles.hooks import forward_hooks, to_numpy, wrap_method


class S3GenRecorder:
    """The hooks and wrappers on S3Gen, and what they saw: `rec` the module intermediates,
    `steps` each CFM step's estimator inputs (`step_inputs`) and velocity, `shared` the
    estimator inputs that must not change between steps (mu, mask, spks, cond). `noise` names
    each captured draw (`capture_random_draws`' key) kept as an intermediate."""

    def __init__(
        self,
        estimator: torch.nn.Module,
        step_inputs: tuple[str, ...],
        noise: Mapping[str, str],
    ) -> None:
        self.rec: dict[str, np.ndarray] = {}
        self.steps: dict[str, list[np.ndarray]] = {name: [] for name in (*step_inputs, "v")}
        self.shared: dict[str, np.ndarray] = {}
        self.noise = dict(noise)
        self._est_sig = inspect.signature(estimator.forward)  # before the forward is wrapped

    def put(self, key: str) -> Callable[..., None]:
        """A forward hook recording the module's output (the first, for a tuple) as `key`."""

        def hook(_m: Any, _a: Any, out: Any) -> None:
            self.rec[key] = to_numpy(out[0] if isinstance(out, tuple | list) else out)

        return hook

    def pre(self, key: str) -> Callable[..., None]:
        """A forward pre-hook recording the module's first positional input as `key`."""

        def hook(_m: Any, args: tuple) -> None:
            self.rec[key] = to_numpy(args[0])

        return hook

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
        """Wraps the estimator's forward: each step's inputs and velocity."""

        def forward(*args: Any, **kwargs: Any) -> Any:
            bound = self._est_sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            out = original(*args, **kwargs)
            for name, values in self.steps.items():
                values.append(to_numpy(out if name == "v" else a[name]))
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

    def install(self, stack: contextlib.ExitStack, s3: Any) -> Callable[..., None]:
        """Every hook and wrapper, removed when `stack` closes; `add` for a subclass's own."""
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
        return add

    def intermediates(self, draws: dict[str, Any]) -> dict[str, np.ndarray]:
        """What was recorded, with the CFM noise and the per-step arrays stacked
        (`cfm_<input>` [S, ...], `cfm_velocity`), the shared inputs as `cfm_<name>_in`."""
        rec = self.rec
        rec["flow_tokens"] = rec["flow_tokens"].astype(np.int64)
        for key, draw in self.noise.items():
            rec[key] = np.array(draws[draw], copy=True)
        for name, values in self.steps.items():
            rec["cfm_velocity" if name == "v" else f"cfm_{name}"] = np.stack(values)
        for name, value in self.shared.items():
            rec[f"cfm_{name}_in"] = value
        return rec


def run_s3gen(
    s3: Any,
    recorder: S3GenRecorder,
    speech_tokens: torch.Tensor,
    ref_dict: dict,
    n_cfm_timesteps: int,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, float]:
    """`s3.inference` with `recorder`'s hooks: (intermediates, draws, wav after trim_fade,
    seconds)."""
    with contextlib.ExitStack() as stack:
        recorder.install(stack, s3)
        draws = stack.enter_context(capture_random_draws())
        start = time.perf_counter()
        wav, _ = s3.inference(
            speech_tokens=speech_tokens, ref_dict=ref_dict, n_cfm_timesteps=n_cfm_timesteps
        )
        seconds = time.perf_counter() - start
    return recorder.intermediates(draws), dict(draws), to_numpy(wav), seconds
