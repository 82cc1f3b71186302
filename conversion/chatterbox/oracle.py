"""The publisher's Chatterbox as the oracle: one utterance, every intermediate and draw recorded.

`record` runs the steps of `ChatterboxTTS.generate` (chatterbox-tts 0.1.7) with the publisher's
own functions: the exaggeration update, `punc_norm`, the text tokenizer, SOT/EOT padding and the
CFG batch of two, `T3.inference`, `drop_invalid_tokens` (and `< 6561`), `S3Gen.inference`, the
watermarker. Hooks and two temporary patches record what the gates compare:

- T3: `cond_emb` (`cond_enc`'s output [1, 34, 1024]), the prefill embeddings [2, 34+Tt+2, 1024]
  (conditioning, text, and start-of-speech TWICE: `prepare_input_embeds` appends the initial
  speech token 6561 at position 0 and the loop appends a `bos_embed`, also 6561 at position 0),
  per step the cond and uncond logits (rows 0 and 1 of `speech_head`'s last position; the loop
  computes one more forward after the last draw, which is dropped), the uniforms and the tokens.
- The draw. The loop samples with `torch.multinomial(probs, 1)`; while it runs, that name is
  patched with an exponential race, `argmax(probs / -log u)`, `u = torch.rand(V)` from a
  `torch.Generator` seeded with `seed`, clipped to [U_MIN, U_MAX] as `conversion.core.host.sampling`
  clips it. The winner of an exponential race with rates `probs` is token i with probability
  probs[i], so this is exactly a sample from the publisher's distribution, with its randomness
  recorded: `conversion.core.host.sampling.sample(cond_logits, u, SamplingConfig(order=
  CHATTERBOX_ORDER, ...), previous_tokens=[6561, tokens so far], uncond_logits)` (the order from
  `conversion.chatterbox.sampling`) draws the same token (up to float ties). With `forced_tokens`
  the patched draw returns the given tokens instead (teacher forcing: the logits along that path)
  and the loop runs for exactly that many steps.
- S3Gen: the flow's token ids (prompt + speech), the encoder output (before `encoder_proj`), what
  the CFM receives (`mu`, mask, projected speaker embedding, prompt-mel `cond`), the noise `z`,
  per Euler step the estimator's inputs and output for both CFG rows (`solve_euler` calls
  `estimator.forward` directly, so it is wrapped for the block), the CFM output, the generated
  mel, `f0`, the upsampled f0, SineGen's waves, the harmonic source `m_source.0` and its uv,
  HiFT's `conv_post` (log-magnitude and phase before the iSTFT), the vocoder's wav before
  `trim_fade`, S3Gen's wav after it (the publisher zeroes the first 20 ms and raised-cosine
  fades in the next 20 ms) and the final, watermarked wav.
- Draws (`capture_random_draws` keys, in call order during `S3Gen.inference`): `randn_like/0`
  the CFM noise z, `rand/0` SineGen's initial phases (`Uniform(-pi, pi)`, harmonic 0 then zeroed),
  `randn_like/1` SineGen's noise, `randn_like/2` the source module's noise branch (unused by
  `inference`). `t3_uniforms/0` [N, V] holds T3's uniforms (not a torch function name, so
  `replay_random_draws` skips it; absent when teacher-forced).

`record` leaves the model as it found it: `model.conds` is swapped for a copy while it runs (the
publisher mutates conditionals: `generate` replaces the T3Cond on an exaggeration change,
`prepare_conditioning` caches the prompt embedding on it, and `S3Token2Mel.forward` casts
`ref_dict["prompt_token"]` to float in place).
"""

from __future__ import annotations

import contextlib
import inspect
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conversion.core.errors import UserError
from conversion.core.host.sampling import U_MAX, U_MIN
from oracles import Fixture, capture_random_draws

from .config import SAMPLE_RATE
from .voice import Voice, check_exaggeration, inspect_reference

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS

PACKAGES = ("chatterbox-tts", "transformers", "librosa", "resemble-perth")
START_SPEECH, STOP_SPEECH, SPEECH_VOCAB = 6561, 6562, 6561


# ---------------------------------------------------------------------------------------------
# small recording helpers
# ---------------------------------------------------------------------------------------------


def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().clone().numpy() if torch.is_tensor(t) else np.array(t, copy=True)


@contextlib.contextmanager
def _hooks() -> Iterator[Callable[..., None]]:
    """Yields `add(module, hook, pre=False, kwargs=False)`; every hook is removed on exit."""
    handles: list[Any] = []

    def add(module: torch.nn.Module, hook: Any, pre: bool = False, kwargs: bool = False) -> None:
        if pre:
            handles.append(module.register_forward_pre_hook(hook, with_kwargs=kwargs))
        else:
            handles.append(module.register_forward_hook(hook))

    try:
        yield add
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def _wrap_method(obj: Any, name: str, wrapper: Callable[[Callable[..., Any]], Any]) -> Iterator:
    """Set `obj.<name>` (an instance attribute shadowing the method) for the block."""
    original = getattr(obj, name)
    had_own = name in vars(obj)
    setattr(obj, name, wrapper(original))
    try:
        yield
    finally:
        if had_own:
            setattr(obj, name, original)
        else:
            delattr(obj, name)


@contextlib.contextmanager
def _torch_function(name: str, replacement: Callable[..., Any]) -> Iterator[None]:
    original = getattr(torch, name)
    setattr(torch, name, replacement)
    try:
        yield
    finally:
        setattr(torch, name, original)


@contextlib.contextmanager
def _swapped_conds(model: ChatterboxTTS, conds: Any) -> Iterator[None]:
    saved = model.conds
    model.conds = conds
    try:
        yield
    finally:
        model.conds = saved


# ---------------------------------------------------------------------------------------------
# T3
# ---------------------------------------------------------------------------------------------


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
        seen.setdefault("cond_emb", _np(out))  # the first call is the utterance's conditioning

    def on_tfmr(_m: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        if "prefill" not in seen and kwargs.get("inputs_embeds") is not None:
            seen["prefill"] = _np(kwargs["inputs_embeds"])

    def on_head(_m: Any, _a: Any, out: torch.Tensor) -> None:
        logits.append(_np(out[:, -1, :].float()))

    with contextlib.ExitStack() as stack:
        add = stack.enter_context(_hooks())
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
    tokens = _np(tokens).astype(np.int64)  # [1, N]: the loop draws from the CFG-combined row
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


# ---------------------------------------------------------------------------------------------
# S3Gen (flow encoder, CFM, HiFT)
# ---------------------------------------------------------------------------------------------


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
            self.rec[key] = _np(out[0] if isinstance(out, tuple | list) else out)

        return hook

    def pre(self, key: str, index: int = 0) -> Callable[..., None]:
        """A forward pre-hook recording the module's positional input `index` as `key`."""

        def hook(_m: Any, args: tuple) -> None:
            self.rec[key] = _np(args[index])

        return hook

    def on_decoder(self, _m: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        for name, key in (("mu", "mu"), ("mask", "cfm_mask"), ("spks", "cfm_spks")):
            self.rec[key] = _np(kwargs[name])
        self.rec["cfm_cond"] = _np(kwargs["cond"])

    def on_source(self, _m: Any, _a: Any, out: tuple) -> None:
        self.rec["source"], self.rec["source_uv"] = _np(out[0]), _np(out[2])

    def _check_shared(self, arguments: dict[str, Any]) -> None:
        for name in ("mu", "mask", "spks", "cond"):
            value = _np(arguments[name])
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
            self.steps["x"].append(_np(a["x"]))
            self.steps["t"].append(_np(a["t"]))
            self.steps["v"].append(_np(out))
            self._check_shared(a)
            return out

        return forward

    def vocoder(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Wraps HiFT's inference: its wav before S3Gen's in-place trim_fade."""

        def inference(*args: Any, **kwargs: Any) -> Any:
            wav, source = original(*args, **kwargs)
            self.rec["wav_vocoder"] = _np(wav)
            return wav, source

        return inference

    def install(self, stack: contextlib.ExitStack, s3: Any) -> None:
        """Every hook and wrapper, removed when `stack` closes."""
        flow, hift = s3.flow, s3.mel2wav
        add = stack.enter_context(_hooks())
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
        stack.enter_context(_wrap_method(flow.decoder.estimator, "forward", self.estimator))
        stack.enter_context(_wrap_method(hift, "inference", self.vocoder))

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
    return recorder.intermediates(draws), dict(draws), _np(wav), seconds


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


def _voice_inputs(voice: Voice, exaggeration: float) -> dict[str, np.ndarray]:
    return {
        "t3_speaker_emb": voice.t3_speaker_emb,
        "t3_prompt_tokens": voice.t3_prompt_tokens.astype(np.int64),
        "exaggeration": np.asarray(exaggeration, np.float32),
        "prompt_tokens": voice.prompt_tokens.astype(np.int64),
        "prompt_feat": voice.prompt_feat,
        "xvector": voice.xvector,
    }


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


def _choose_voice(
    model: ChatterboxTTS, ref_wav: Path | None, voice: Voice | None, exaggeration: float
) -> tuple[Voice, Any]:
    """(the voice as recorded, the publisher's `Conditionals` the run uses).

    `ref_wav`: cloned by the publisher's own `prepare_conditionals` and run on exactly the
    conditionals it made (the Voice only records them); else `voice` or the model's default,
    run on `Voice.to_conditionals()`.
    """
    if ref_wav is not None:
        info = inspect_reference(ref_wav, prompt_seconds=model.DEC_COND_LEN / SAMPLE_RATE)
        saved = model.conds
        try:
            model.prepare_conditionals(str(ref_wav), exaggeration=exaggeration)
            conds = model.conds
        finally:
            model.conds = saved
        recorded = Voice.from_conditionals(
            model, conds, source=Path(ref_wav).name, notes=info.notes
        )
        return recorded, conds
    voice = Voice.from_conditionals(model) if voice is None else voice
    return voice, voice.to_conditionals()


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


def _nonempty(speech_tokens: torch.Tensor) -> torch.Tensor:
    if speech_tokens.numel() == 0:
        raise UserError(
            "the T3 loop produced no valid speech tokens (stop at the first step?): "
            "nothing for S3Gen to render"
        )
    return speech_tokens


def _record_intermediates(
    t3: dict[str, Any], speech_tokens: torch.Tensor, s3: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    return {
        "cond_emb": t3["cond_emb"],
        "t3_prefill_embeds": t3["prefill"],
        "t3_cond_logits": t3["cond_logits"],
        "t3_uncond_logits": t3["uncond_logits"],
        "t3_tokens": t3["tokens"],
        "speech_tokens": speech_tokens.numpy().astype(np.int64).reshape(1, -1),
        **s3,
    }


def _record_draws(t3: dict[str, Any], draws: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """S3Gen's captured draws, and T3's uniforms when it sampled (not when teacher-forced)."""
    all_draws = dict(draws)
    if t3["uniforms"] is not None:
        all_draws["t3_uniforms/0"] = t3["uniforms"]
    return all_draws


def _record_meta(
    model: ChatterboxTTS,
    voice: Voice,
    sampling: dict[str, float],
    t3: dict[str, Any],
    *,
    max_new_tokens: int,
    forced: bool,
    n_cfm_timesteps: int,
    s3_seconds: float,
) -> dict[str, Any]:
    tokens = t3["tokens"]
    return {
        "sample_rate": SAMPLE_RATE,
        "voice": voice.source,
        "voice_notes": list(voice.notes),
        "sampling": {
            **sampling,
            "order": "chatterbox",
            "previous_tokens_start": [START_SPEECH],
        },
        "max_new_tokens": max_new_tokens,
        "forced": forced,
        "t3_steps": int(tokens.shape[1]),
        "stopped_on_eos": bool(tokens.shape[1] and tokens[0, -1] == STOP_SPEECH),
        "n_cfm_timesteps": n_cfm_timesteps,
        "watermarker": type(model.watermarker).__name__,
        "seconds": {"t3": round(t3["seconds"], 3), "s3gen": round(s3_seconds, 3)},
        # The median decode step of the loop (transformer to speech head, the prefill left out).
        "t3_decode_step_ms": (
            round(statistics.median(t3["step_ms"][1:]), 3) if len(t3["step_ms"]) > 1 else None
        ),
    }


def _outputs(model: ChatterboxTTS, wav: np.ndarray) -> dict[str, np.ndarray]:
    """S3Gen's wav and the publisher's watermarked final wav."""
    final = model.watermarker.apply_watermark(wav[0], sample_rate=model.sr)
    return {
        "wav_unwatermarked": wav.astype(np.float32),
        "wav": np.asarray(final, np.float32).reshape(1, -1),
    }


# ---------------------------------------------------------------------------------------------
# public
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def record(
    model: ChatterboxTTS,
    text: str,
    *,
    seed: int = 0,
    exaggeration: float = 0.5,
    cfg_weight: float = 0.5,
    temperature: float = 0.8,
    repetition_penalty: float = 1.2,
    min_p: float = 0.05,
    top_p: float = 1.0,
    max_new_tokens: int = 1000,
    ref_wav: Path | None = None,
    forced_tokens: np.ndarray | None = None,
    n_cfm_timesteps: int = 10,
    voice: Voice | None = None,
) -> Fixture:
    """Run `ChatterboxTTS.generate`'s steps on `text` and record everything (module docstring).

    The voice: `ref_wav` (cloned by the publisher's `prepare_conditionals`, whose conditionals
    the run uses as they are), else `voice`, else the model's default (`model.conds`).
    Defaults are `generate`'s, except `max_new_tokens` (generate hard-codes 1000) and
    `n_cfm_timesteps` (S3Gen's default, 10).
    """
    exaggeration = check_exaggeration(exaggeration)
    _check_cfg_weight(cfg_weight)
    forced = _forced_path(model, forced_tokens)
    if forced is not None:
        max_new_tokens = int(forced.size)
    voice, conds = _choose_voice(model, ref_wav, voice, exaggeration)
    sampling = {
        "cfg_weight": cfg_weight,
        "temperature": temperature,
        "repetition_penalty": repetition_penalty,
        "min_p": min_p,
        "top_p": top_p,
    }
    with _swapped_conds(model, conds):
        _update_exaggeration(model, exaggeration)
        normalized, text_tokens = _text_tokens(model, text)
        torch.manual_seed(int(seed))
        t3 = _run_t3(
            model, text_tokens, seed=seed, max_new_tokens=max_new_tokens, forced=forced, **sampling
        )
        speech_tokens = _nonempty(_speech_tokens_for_s3gen(t3["tokens"]))
        s3, draws, wav, s3_seconds = _run_s3gen(
            model, speech_tokens, model.conds.gen, n_cfm_timesteps
        )
        outputs = _outputs(model, wav)
    return Fixture(
        model="chatterbox",
        seeds={"torch": int(seed), "t3_uniforms": int(seed)},
        inputs={
            "text": normalized,
            "text_raw": text,
            "text_tokens": text_tokens[:1].numpy().astype(np.int64),
            **_voice_inputs(voice, exaggeration),
        },
        intermediates=_record_intermediates(t3, speech_tokens, s3),
        draws=_record_draws(t3, draws),
        outputs=outputs,
        meta=_record_meta(
            model,
            voice,
            sampling,
            t3,
            max_new_tokens=max_new_tokens,
            forced=forced is not None,
            n_cfm_timesteps=n_cfm_timesteps,
            s3_seconds=s3_seconds,
        ),
        packages=dict.fromkeys(PACKAGES),
    )


@torch.no_grad()
def record_flow_and_vocoder(
    model: ChatterboxTTS,
    speech_tokens: np.ndarray,
    voice: Voice | None = None,
    seed: int = 0,
    n_cfm_timesteps: int = 10,
) -> Fixture:
    """`S3Gen.inference` alone on given speech tokens (ids < 6561), recorded as in `record`."""
    tokens = np.asarray(speech_tokens, dtype=np.int64).reshape(-1)
    if tokens.size == 0 or tokens.min() < 0 or tokens.max() >= SPEECH_VOCAB:
        raise ValueError(f"speech_tokens must be 1..n ids in [0, {SPEECH_VOCAB})")
    voice = Voice.from_conditionals(model) if voice is None else voice
    conds = voice.to_conditionals()
    with _swapped_conds(model, conds):
        torch.manual_seed(int(seed))
        s3, draws, wav, seconds = _run_s3gen(
            model, torch.from_numpy(tokens.copy()), model.conds.gen, n_cfm_timesteps
        )
        outputs = _outputs(model, wav)
    return Fixture(
        model="chatterbox",
        seeds={"torch": int(seed)},
        inputs={"speech_tokens": tokens.reshape(1, -1), **_voice_inputs(voice, voice.exaggeration)},
        intermediates=s3,
        draws=dict(draws),
        outputs=outputs,
        meta={
            "sample_rate": SAMPLE_RATE,
            "voice": voice.source,
            "n_cfm_timesteps": n_cfm_timesteps,
            "watermarker": type(model.watermarker).__name__,
            "seconds": {"s3gen": round(seconds, 3)},
        },
        packages=dict.fromkeys(PACKAGES),
    )
