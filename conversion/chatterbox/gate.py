"""Chatterbox's gate ladder: each graph against the publisher's code, then end to end.

The oracle is `chatterbox-tts`'s own ChatterboxTTS on the same weights, every intermediate and
draw recorded (oracle.py). Each rung feeds a graph the oracle's own inputs and compares on the
real region:

0. text: voxport's text path (the bundle's tokenizer.json through `TextTokenizer.chunks`: its
   split and its ids) vs the publisher's (voxport's split of the text, each piece through
   `punc_norm`, its tokenizer, SOT/EOT), piece by piece: the same pieces, text and ids, and the
   pieces re-join to the text, for the punctuation edge cases (`TEXT_CASES`, one piece each)
   and texts over the budget (`TEXT_LONG_CASES`); the bundle is fed voxport's own ids
   throughout;
1. T3, teacher-forced along the oracle's tokens: cond and uncond logits, the worst step's cosine
   (fp32 ≥ 0.9999, int8 ≥ 0.999); the draws the bundle's logits give with the oracle's uniforms
   (fp32: all; int8 ≥ 0.9, each miss listed);
2. flow encoder: mu (≥ 0.999); estimator: every Euler step's velocity (fp32 ≥ 0.9999; an fp16
   estimator on the smallest bucket ≥ 0.999, every step, or the middle one with
   `--fp16-steps mid`); the host Euler loop from the oracle's noise: mel;
3. HiFT from the oracle's mel and source draws: magnitude-spectrogram corr ≥ 0.999;
4. end to end with the oracle's tokens and noise forced: T3 logits (≥ 0.9999), mel cos ≥ 0.999,
   wav spec corr ≥ 0.99; once with the default voice and once cloned from a reference wav,
   where the oracle clones with the publisher's own `prepare_conditionals` and the bundle gets
   the voice file `voxport voice` writes (prompt cut to the config's cap), read back from disk
   by the host's reader; `voice[cloned].conds` compares that file's arrays with the
   publisher's conditionals computed in memory by its `prepare_conditionals`;
5. T3 free-running on the oracle's uniforms: the same token sequence.
The step-count table (8/6/4 and 10 Euler steps on the bundle, each vs the publisher's 10-step
mel) is measured and printed.
"""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conversion.core.errors import BucketOverflowError, UserError
from conversion.core.host.buckets import BucketTable, length_mask, pad_to
from conversion.core.host.sampling import U_MAX, U_MIN, sample
from conversion.core.host.text_split import split_to_fit
from conversion.core.port import BundleSource
from gates.ladder import LadderReport, Measured, Rung, run_ladder
from oracles import Fixture

from . import weights
from .config import ChatterboxConfig
from .export import TOKENIZER
from .flow.graphs import (
    ENCODER_FUNCTION,
    ENCODER_GRAPH,
    ESTIMATOR_FUNCTION,
    ESTIMATOR_GRAPH,
    function_name,
)
from .oracle import record
from .pipeline import ChatterboxPipeline, ChunkDraws, SpeakOptions
from .t3.graphs import START_SPEECH, STOP_SPEECH
from .text import TextChunk, TextTokenizer
from .voice import Voice, write_voice_file

GATE_TEXT = "Hello from voxport."
# T3's step budget: the publisher's loop runs to its stop token or to this many steps (the
# calibrated random weights stop inside it: calibration.STOP_STEP)
GATE_TOKENS = {"reduced": 24, "published": 40}
# fp32 T3 logits (teacher-forced and e2e) vs the oracle's: measured 1 - 3e-13 reduced and 1
# (>= 0.9999995) published; a KV row or a prefill row one off scores above 0.9999 (the bar
# before issue 20's mutation tests), so the bar is six nines
COS_T3 = 0.999999
# int8 T3's teacher-forced logits (cond and uncond rows) vs the oracle's fp32: measured, see
# the card (worst over the seeds run).
COS_T3_INT8 = 0.999
COS_ESTIMATOR = {"fp32": 0.9999, "fp16": 0.999}
COS_MU = 0.999
COS_MEL = 0.999
MAGSPEC_HIFT = 0.999
# HiFT's wav sample by sample (the oracle's draws replayed), full scale 0.99: the port's float
# error measured 1.1e-3, 2.3e-3, 2.8e-3 (reduced, weights seed 0, seeds 0/1/2: exp() of
# log-magnitudes up to a few nats amplifies it); a source STFT padded by replication instead
# of reflection moved 0.12
MAX_ABS_HIFT = 1e-2
MAGSPEC_E2E = 0.99
# int8 T3: per-step draws from int8 logits vs the oracle's, with the oracle's uniforms. Random
# weights give flat distributions where rounding flips close races: measured, see the card.
INT8_AGREEMENT = 0.9
REF_SECONDS = 2.0
# Euler steps the fp16 estimator rung checks: every step, or only the middle one (CI: the
# Linux runtime emulates fp16 matmuls, ~80 s per reduced F128 call measured on 2 shared cores)
FP16_STEPS = ("all", "mid")
REF_RATE = 16_000  # the cloned case's reference is written (and resampled from) 16 kHz
COS_VOICE = 0.9999  # voxport's clone vs the publisher's prepare_conditionals, every array
# The text rung: voxport's text path (the bundle's tokenizer.json through TextTokenizer) vs
# the publisher's generate() text path (punc_norm, EnTokenizer, SOT/EOT), sentence by sentence.
TEXT_CASES = (
    "Hello from voxport.",
    "hello world",  # lower-case start, no final punctuation
    "Wait... what?  Really?",  # ellipsis, double space, two sentences
    "He said: \u201cyes\u201d \u2014 and left; then\u2026 nothing",  # curly quotes, dashes
    "It\u2019s 5 o\u2019clock - tea time , isn\u2019t it",  # apostrophes, spaced dash, " ,"
    "Numbers 1, 2 and 3!   ",  # trailing spaces
    "  leading spaces, lower case",  # punc_norm capitalises only a first character
    "Two sentences. The second one (in brackets) ends here",  # sentences in one chunk
)
# Not in the rung: empty text, which the publisher answers with a stock sentence ("You need
# to add some text for me to talk.") and voxport refuses with a one-line UserError.
# Texts over the budget (reduced 60 ids, published 300): voxport splits them, the rung holds
# each piece against the publisher's text path. Sentences that pack, a sentence split at its
# clauses, clauses split at words, a word longer than the budget (cut by characters), and a
# paragraph over the published budget even with a real BPE tokenizer (~4 characters an id).
_PARAGRAPH = (
    "The first sentence of the paragraph is plain. The second one, which is longer, carries "
    "two clauses; a semicolon joins them. Does the third ask a question? It does! "
)
TEXT_LONG_CASES = (
    "First one here. Second one here. Third sentence is a bit longer than the others.",
    "One long sentence without a full stop, carrying clause after clause, comma after comma, "
    "so that the split falls back on clauses and then on words when a clause alone is too "
    "long for the budget",
    "Antidisestablishmentarianismsupercalifragilisticexpialidociouspneumonoultramicroscopic "
    "is one word too long for any budget here.",
    _PARAGRAPH * 10,
)


def gate_config(config: ChatterboxConfig) -> ChatterboxConfig:
    """The sizes the gate exports: the published ones cut to the buckets the gate's utterance
    uses (one prefill bucket, encoder@256, estimator@512, vocoder@256), because a published
    T3 export peaks near 12 GB per bucket set and the Linux runtime takes ~90 s per 256-frame
    vocoder call. The reduced configuration is gated whole.
    """
    if not config.is_published:
        return config
    return ChatterboxConfig.from_json(
        {
            **config.to_json(),
            "name": "published",
            "prefill_buckets": [config.prefill_buckets[0]],
            "encoder_tokens": [256],
            "estimator_frames": [512],
            "vocoder_frames": [256],
        }
    )


@dataclass
class Case:
    name: str
    fixture: Fixture
    voice: Voice
    chunk: TextChunk | None  # voxport's text path (`text_chunk`), filled once the bundle exists
    # cloned: the publisher's conditionals, computed in memory by its prepare_conditionals
    publisher: dict[str, np.ndarray] | None = None


def _min_row_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a.reshape(a.shape[0], -1).astype(np.float64)
    b = b.reshape(b.shape[0], -1).astype(np.float64)
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float((num / np.maximum(den, 1e-30)).min())


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return _min_row_cosine(np.asarray(a)[None], np.asarray(b)[None])


def make_case(
    model,
    name: str,
    text: str,
    steps: int,
    seed: int,
    ref_wav: Path | None = None,
    prompt_tokens_max: int | None = None,
) -> Case:
    """The oracle's run and the voice the bundle gets. Cloned: the oracle clones with the
    publisher's own `prepare_conditionals` from `ref_wav` and runs on its conditionals; the
    bundle gets the voice file `voxport voice` writes of the same reference, read back from
    disk by the host's reader (`Voice.load`), and the case keeps the publisher's conditionals
    (`publisher_conditionals`, in memory) for `voice_rung`.
    The chunk is filled in by `text_chunk` (voxport's text path over the bundle's tokenizer)."""
    if ref_wav is None:
        voice = Voice.from_conditionals(model)
        fx = record(model, text, seed=seed, max_new_tokens=steps, voice=voice)
        return Case(name, fx, voice, None)
    fx = record(model, text, seed=seed, max_new_tokens=steps, ref_wav=ref_wav)
    exaggeration = float(fx.inputs["exaggeration"])
    publisher = publisher_conditionals(model, ref_wav, exaggeration)
    with tempfile.TemporaryDirectory(prefix="voxport-cbx-voice-") as tmp:
        path = write_voice_file(
            model, ref_wav, Path(tmp) / "voice.npz", exaggeration, prompt_tokens_max
        )
        voice = Voice.load(path)
    return Case(name, fx, voice, None, publisher)


def publisher_conditionals(model, ref_wav: Path, exaggeration: float) -> dict[str, np.ndarray]:
    """The publisher's cloning in memory: `ChatterboxTTS.prepare_conditionals` on `ref_wav`,
    its `Conditionals` read field by field, and T3's conditioning as `generate` makes it
    (`t3.prepare_conditioning` on its T3Cond). `model.conds` is left as it was."""
    import copy

    import torch

    saved = model.conds
    try:
        model.prepare_conditionals(str(ref_wav), exaggeration=exaggeration)
        conds = model.conds
    finally:
        model.conds = saved
    with torch.no_grad():
        cond_emb = model.t3.prepare_conditioning(copy.copy(conds.t3))

    def arr(t) -> np.ndarray:
        return t.detach().cpu().numpy().copy()

    return {
        "cond_emb": arr(cond_emb),
        "t3_speaker_emb": arr(conds.t3.speaker_emb).reshape(1, -1),
        "t3_prompt_tokens": arr(conds.t3.cond_prompt_speech_tokens).reshape(1, -1),
        "prompt_tokens": np.rint(arr(conds.gen["prompt_token"])).reshape(1, -1),
        "prompt_feat": arr(conds.gen["prompt_feat"]),
        "xvector": arr(conds.gen["embedding"]).reshape(1, -1),
        "exaggeration": np.float32(exaggeration),
    }


def text_chunk(bundle: Path, config: ChatterboxConfig, text: str) -> TextChunk:
    """`text` through voxport's text path (the bundle's tokenizer.json), as `speak` sees it."""
    chunks = TextTokenizer(Path(bundle) / TOKENIZER).chunks(text, config.text_budget)
    if len(chunks) != 1:
        raise ValueError(f"the gate's utterance {text!r} must be one chunk, got {len(chunks)}")
    return chunks[0]


def publisher_pieces(model, text: str, budget: int) -> list[tuple[str, str, np.ndarray]]:
    """`text` as the publisher's text path sees it once voxport has split it: voxport's split
    (`split_to_fit`, sentences packed, fitting by the publisher's own id count; a text that
    fits whole is one piece taken as given), then each piece through generate()'s text path
    (`punc_norm`, the publisher's tokenizer, SOT/EOT): (piece, normalised text, ids) each."""
    from .oracle import _text_tokens

    def ids(piece: str) -> np.ndarray:
        return _text_tokens(model, piece)[1][0].numpy().astype(np.int64)

    if ids(text).size <= budget:
        pieces = [text]
    else:
        pieces = split_to_fit(text, lambda p: ids(p).size <= budget, merge_sentences=True)
    return [(p, _text_tokens(model, p)[0], ids(p)) for p in pieces]


def _text_case(model, tok: TextTokenizer, text: str, budget: int) -> str | None:
    """None when voxport's chunks of `text` are the publisher's pieces (same count, each
    piece's normalised text and ids, every chunk within the budget) and the pieces re-join to
    the text (its characters, in order, whitespace aside); else what differs."""
    want = publisher_pieces(model, text, budget)
    # every character kept, in order, none added (a word cut by characters re-joins without
    # its pieces' separating space, so whitespace is left out of the comparison)
    rejoined = "".join("".join(p for p, _, _ in want).split())
    if rejoined != "".join(text.split()):
        return f"{text[:40]!r}: the split pieces do not re-join to the text ({rejoined[:40]!r})"
    try:
        got = tok.chunks(text, budget)
    except Exception as err:  # noqa: BLE001 - a refusal is a disagreement, named
        return f"{text[:40]!r}: {type(err).__name__}"
    if len(got) != len(want):
        return f"{text[:40]!r}: {len(got)} chunks vs the publisher's {len(want)} pieces"
    for k, (chunk, (_, want_text, want_ids)) in enumerate(zip(got, want, strict=True)):
        if chunk.ids.size > budget:
            return f"{text[:40]!r} piece {k}: {chunk.ids.size} ids > budget {budget}"
        if chunk.text != want_text:
            return f"{text[:40]!r} piece {k}: {chunk.text!r} vs {want_text!r}"
        if not np.array_equal(chunk.ids.astype(np.int64), want_ids):
            return f"{text[:40]!r} piece {k}: ids differ ({chunk.ids.size} vs {want_ids.size})"
    return None


def text_rung(
    model, bundle: Path, config: ChatterboxConfig, cases=TEXT_CASES + TEXT_LONG_CASES
) -> Rung:
    """Voxport's text path vs the publisher's, per split piece.

    Voxport: `TextTokenizer.chunks` over the bundle's tokenizer.json (its split and its ids).
    Publisher: voxport's split of the text (`publisher_pieces`), each piece through
    `generate`'s own steps (`punc_norm`, `tokenizer.text_to_tokens`, SOT/EOT) as the oracle runs
    them. The short cases are one piece each (punctuation edge cases); the long ones exceed
    the budget and exercise `split_to_fit` (sentences, clauses, words, characters).
    """

    def agreement() -> Measured:
        tok = TextTokenizer(Path(bundle) / TOKENIZER)
        budget = config.text_budget
        bad = [m for m in (_text_case(model, tok, t, budget) for t in cases) if m is not None]
        pieces = sum(len(tok.chunks(t, budget)) for t in cases if not bad)
        n = len(cases)
        note = f"{n - len(bad)}/{n} texts: same pieces, text and ids (budget {budget} ids"
        note += f", {pieces} pieces)" if not bad else ")"
        return Measured((n - len(bad)) / n, note + (f"; {'; '.join(bad[:3])}" if bad else ""))

    return Rung("text.ids", "piece_agreement", 1.0, agreement, True)


def voice_rung(case: Case) -> Rung:
    """The cloned voice as a host reads it (the file `voxport voice` writes, loaded from disk:
    `case.voice`) vs the publisher's conditionals computed in memory by its own
    `prepare_conditionals` (`case.publisher`): the prompt tokens equal (else 0), and the worst
    cosine over T3's conditioning (the host's `cond_emb` at the publisher's exaggeration vs
    `t3.prepare_conditioning`), the speaker embedding, the prompt mel and the x-vector."""
    pub, voice = case.publisher, case.voice

    def compare() -> Measured:
        if pub is None:
            raise ValueError(f"case {case.name!r} has no publisher conditionals to compare")
        exaggeration = float(pub["exaggeration"])
        pairs = {
            "cond_emb": (pub["cond_emb"], voice.cond_emb(exaggeration)),
            "t3_speaker_emb": (pub["t3_speaker_emb"], voice.t3_speaker_emb),
            "prompt_feat": (pub["prompt_feat"], voice.prompt_feat),
            "xvector": (pub["xvector"], voice.xvector),
        }
        shapes = {k: (a.shape, b.shape) for k, (a, b) in pairs.items() if a.shape != b.shape}
        tokens = {
            k: np.array_equal(pub[k], getattr(voice, k))
            for k in ("prompt_tokens", "t3_prompt_tokens")
        }
        if shapes or not all(tokens.values()):
            return Measured(0.0, f"tokens equal: {tokens}; shapes differ: {shapes}")
        worst = {k: _cos(a, b) for k, (a, b) in pairs.items()}
        name = min(worst, key=worst.get)
        note = (
            f"voice file read from disk vs the publisher's prepare_conditionals: prompt "
            f"{voice.prompt_token_len} tokens equal, T3 prompt {voice.t3_prompt_tokens.shape[1]} "
            f"equal; worst {name}"
        )
        return Measured(worst[name], note)

    return Rung(f"voice[{case.name}].conds", "min_cosine", COS_VOICE, compare, True)


def _speech_tokens(fx: Fixture) -> np.ndarray:
    """The tokens the oracle handed S3Gen (its T3 tokens after drop_invalid_tokens)."""
    return fx.intermediates["speech_tokens"].reshape(-1)


def _oracle_tokens(fx: Fixture) -> np.ndarray:
    return fx.intermediates["t3_tokens"].reshape(-1)


def _teacher_forced_draws(fx: Fixture, cond: np.ndarray, uncond: np.ndarray) -> Measured:
    """Draws from the bundle's logits with the oracle's uniforms and history, vs the oracle."""
    options = SpeakOptions()
    cfg = options.sampling()
    tokens = _oracle_tokens(fx)
    uniforms = fx.draws["t3_uniforms/0"]
    history = [START_SPEECH]
    misses = []
    for step, token in enumerate(tokens):
        drawn = int(
            sample(cond[step], uniforms[step], cfg, np.asarray(history), uncond[step], None)
        )
        if drawn != int(token):
            misses.append(f"step {step}: {drawn} vs {int(token)}")
        history.append(int(token))
    rate = 1.0 - len(misses) / max(len(tokens), 1)
    note = f"{len(tokens) - len(misses)}/{len(tokens)} draws agree"
    return Measured(rate, note + (f"; misses: {', '.join(misses[:8])}" if misses else ""))


def t3_rungs(cb: ChatterboxPipeline, case: Case, tag: str, cos_min: float | None) -> list[Rung]:
    fx = case.fixture
    memo: dict[str, np.ndarray] = {}

    def forced():
        if "cond" not in memo:
            r = cb.t3(case.chunk.ids, case.voice, SpeakOptions(), forced_tokens=_oracle_tokens(fx))
            memo["cond"], memo["uncond"] = r.cond_logits, r.uncond_logits
        return memo["cond"], memo["uncond"]

    def logits_cos() -> float:
        cond, uncond = forced()
        ref_c, ref_u = fx.intermediates["t3_cond_logits"], fx.intermediates["t3_uncond_logits"]
        n = min(len(cond), len(ref_c))
        return min(_min_row_cosine(ref_c[:n], cond[:n]), _min_row_cosine(ref_u[:n], uncond[:n]))

    rungs = []
    if cos_min is not None:
        rungs.append(Rung(f"t3[{tag}].logits", "min_step_cosine", cos_min, logits_cos, True))
    draws_min = 1.0 if tag == "fp32" else INT8_AGREEMENT
    rungs.append(
        Rung(
            f"t3[{tag}].draws",
            "draw_agreement",
            draws_min,
            lambda: _teacher_forced_draws(fx, *forced()),
            True,
        )
    )
    return rungs


def flow_rungs(cb: ChatterboxPipeline, case: Case) -> list[Rung]:
    fx = case.fixture
    it = fx.intermediates
    voice = case.voice

    def encoder_mu():
        tokens = it["flow_tokens"].reshape(-1)
        n = tokens.size
        table = BucketTable(cb.session.manifest.graphs[ENCODER_GRAPH]["meta"]["buckets"])
        bucket = table.select(N=n)
        out = cb.session.run(
            ENCODER_GRAPH,
            function_name(ENCODER_FUNCTION, bucket),
            {"tokens": pad_to(tokens.astype(np.int32), bucket["N"])[None], "length": np.array([n])},
        )
        ref = it["mu"]
        return ref, out["mu"][:, :, : ref.shape[-1]]

    def estimator_velocity() -> float:
        return _estimator_worst_cosine(cb, it, range(len(it["cfm_x"])))

    def flow_mel():
        r = cb.flow(_speech_tokens(fx), voice, it["z"])
        return it["mel"], r.mel

    return [
        Rung("flow_encoder.mu", "cosine", COS_MU, encoder_mu),
        Rung(
            "flow_estimator.velocity",
            "min_step_cosine",
            COS_ESTIMATOR["fp32"],
            estimator_velocity,
            True,
        ),
        Rung("flow.euler_mel", "cosine", COS_MEL, flow_mel),
    ]


def hift_rungs(cb: ChatterboxPipeline, case: Case) -> list[Rung]:
    """The vocoder on the oracle's mel and source draws: its magnitude spectrogram, and every
    sample (the draws are replayed, so the port is sample-accurate: an edge fault such as the
    source STFT's padding moves the first and last samples and hardly the spectrogram)."""
    from .hift.host import draws_from_recording

    fx = case.fixture
    memo: dict[str, np.ndarray] = {}

    def wav():
        if "wav" not in memo:
            memo["wav"] = cb.vocode(fx.intermediates["mel"], draws_from_recording(fx.draws)).wav
        return fx.intermediates["wav_vocoder"].reshape(-1), memo["wav"]

    return [
        Rung("hift.wav", "magspec_corr", MAGSPEC_HIFT, wav),
        Rung("hift.wav_samples", "max_abs", MAX_ABS_HIFT, wav),
    ]


def e2e_rungs(cb: ChatterboxPipeline, case: Case) -> list[Rung]:
    from .hift.host import draws_from_recording

    fx = case.fixture
    memo = {}

    def run():
        if "r" not in memo:
            draws = ChunkDraws(noise=fx.intermediates["z"], hift=draws_from_recording(fx.draws))
            memo["r"] = cb.synthesize(
                case.chunk,
                case.voice,
                SpeakOptions(),
                draws=draws,
                forced_tokens=_oracle_tokens(fx),
            )
        return memo["r"]

    def mel():
        return fx.intermediates["mel"], run().flow.mel

    def wav():
        return fx.outputs["wav_unwatermarked"].reshape(-1), run().wav

    def logits() -> float:
        # the same run's T3 (the bundle's voice and text ids, the oracle's tokens forced)
        t3 = run().t3
        ref_c, ref_u = fx.intermediates["t3_cond_logits"], fx.intermediates["t3_uncond_logits"]
        if t3.cond_logits.shape != ref_c.shape:
            return 0.0
        return min(_min_row_cosine(ref_c, t3.cond_logits), _min_row_cosine(ref_u, t3.uncond_logits))

    return [
        Rung(f"e2e[{case.name}].t3_logits", "min_step_cosine", COS_T3, logits, True),
        Rung(f"e2e[{case.name}].mel", "cosine", COS_MEL, mel),
        Rung(f"e2e[{case.name}].wav", "magspec_corr", MAGSPEC_E2E, wav),
    ]


def free_run_rung(cb: ChatterboxPipeline, case: Case) -> Rung:
    fx = case.fixture

    def tokens():
        u = fx.draws["t3_uniforms/0"]
        budget = int(fx.meta["max_new_tokens"])
        if fx.meta["stopped_on_eos"] and budget > len(u):
            # the oracle stopped on its own: the port gets the same budget, and fresh uniforms
            # past the oracle's last draw (a port that misses the stop draws on)
            rng = np.random.default_rng(len(u))
            u = np.concatenate(
                [u, rng.random((budget - len(u), u.shape[1]), np.float32).clip(U_MIN, U_MAX)]
            )
        r = cb.t3(case.chunk.ids, case.voice, SpeakOptions(max_new_tokens=len(u)), uniforms=u)
        ref = _oracle_tokens(fx)  # the publisher's loop keeps the stop token it drew
        got = np.append(r.tokens, STOP_SPEECH) if r.stopped else r.tokens
        n = min(ref.size, got.size)
        same = int(np.sum(ref[:n] == got[:n]))
        first = next((i for i in range(n) if ref[i] != got[i]), None)
        note = f"{same}/{ref.size} tokens equal" + (
            f", first difference at step {first}" if first is not None else ""
        )
        return Measured(same / max(ref.size, got.size, 1), note)

    return Rung("t3[fp32].free_run", "token_agreement", 1.0, tokens, True)


def step_count_table(cb: ChatterboxPipeline, case: Case, steps=(10, 8, 6, 4)) -> list[dict]:
    """The bundle's mel with n Euler steps vs the oracle's 10-step mel (the publisher's
    S3Gen), same tokens and noise (the card's step table). Every row is an independent
    bundle run: the 10-step row is the bundle's 10-step flow against the publisher's."""
    fx = case.fixture
    tokens = _speech_tokens(fx)
    ref = fx.intermediates["mel"]
    rows = []
    for n in steps:
        mel = cb.flow(tokens, case.voice, fx.intermediates["z"], n_steps=n).mel
        rows.append({"steps": n, "mel_cos_vs_10": round(_cos(ref, mel), 6)})
    return rows


def gate_bundles(bundles: BundleSource, config: ChatterboxConfig) -> tuple[Path, Path]:
    """The fp32 bundle at the gate's sizes and its int8-T3 sibling (T3 only)."""
    sizes = gate_config(config)
    # the published gate's bucket subset is a bundle of its own: speak's stays whole
    variant = None if sizes == config else "gate"
    fp32 = bundles.get(sizes, "fp32", variant=variant)
    int8 = bundles.get(sizes, "int8", graphs=("t3",), variant=f"{variant or 'gate'}-t3")
    return fp32, int8


@dataclass
class GateSetup:
    """What the ladder needs, made once: the oracle's cases (recorded once per run), the fp32
    bundle at the gate's sizes and, when asked for, the int8-T3 and fp16-estimator side bundles."""

    model: object
    config: ChatterboxConfig
    sizes: ChatterboxConfig
    cases: list[Case]
    bundle: Path
    int8: Path | None = None
    fp16: Path | None = None


def prepare(
    model, config: ChatterboxConfig, bundles: BundleSource, seed: int, side: bool = True
) -> GateSetup:
    """The oracle on the gate's utterance (default and cloned voice) and the bundles."""
    steps = GATE_TOKENS[config.name]
    problems = config.flow_fit_problems()
    if problems:  # a config whose longest prompt + full chunk overflows S3Gen's buckets
        raise BucketOverflowError(f"chatterbox {config.name}: {'; '.join(problems)}")
    print(f"chatterbox gate: oracle on {GATE_TEXT!r}, up to {steps} T3 steps", file=sys.stderr)
    cases = [make_case(model, "default", GATE_TEXT, steps, seed)]
    with tempfile.TemporaryDirectory(prefix="voxport-cbx-ref-") as tmp:
        import soundfile as sf

        ref = Path(tmp) / "reference.wav"
        wav = weights.synthetic_reference(REF_SECONDS, seed + 7, sample_rate=REF_RATE)
        sf.write(ref, wav, REF_RATE)  # written at the rate it was made at
        cases.append(
            make_case(model, "cloned", GATE_TEXT, steps, seed, ref, config.prompt_tokens_max)
        )

    sizes = gate_config(config)
    if side:
        bundle, int8 = gate_bundles(bundles, config)
    else:
        variant = None if sizes == config else "gate"
        bundle, int8 = bundles.get(sizes, "fp32", variant=variant), None
    for case in cases:  # voxport's own text ids feed the bundle, not the oracle's
        case.chunk = text_chunk(bundle, sizes, GATE_TEXT)
    setup = GateSetup(model, config, sizes, cases, bundle, int8)
    if side:
        # the fp16 estimator at the smallest 64-multiple bucket that holds the case: the Linux
        # runtime emulates fp16 matmuls ~150x slower than fp32
        frames = cases[0].fixture.intermediates["cfm_x"].shape[-1]
        small = ChatterboxConfig.from_json(
            {**sizes.to_json(), "estimator_frames": [-(-frames // 64) * 64]}
        )
        setup.fp16 = bundles.get(
            small,
            "fp32",
            graphs=("flow_estimator",),
            precisions={"flow_estimator": "fp16"},
            variant="gate-est-fp16",
        )
    return setup


def main_rungs(cb: ChatterboxPipeline, setup: GateSetup) -> tuple[list[Rung], int]:
    """The fp32 bundle's rungs, in ladder order, and how many come before the side rungs."""
    default, cloned = setup.cases
    head = [
        text_rung(setup.model, setup.bundle, setup.sizes),
        *t3_rungs(cb, default, "fp32", COS_T3),
    ]
    rungs = [
        *head,
        *flow_rungs(cb, default),
        *hift_rungs(cb, default),
        *e2e_rungs(cb, default),
        voice_rung(cloned),
        *e2e_rungs(cb, cloned),
        free_run_rung(cb, default),
    ]
    return rungs, len(head)


def run_gate(
    model,
    config: ChatterboxConfig,
    bundles: BundleSource,
    seed: int,
    stop_on_fail: bool = False,
    json_path: Path | None = None,
    markdown: Path | None = None,
    fp16_steps: str = "all",
) -> int:
    """The oracle on the gate's utterance (default and cloned voice), then the ladder."""
    from gates.report import emit

    if fp16_steps not in FP16_STEPS:
        raise UserError(f"fp16_steps must be one of {FP16_STEPS}, got {fp16_steps!r}")
    setup = prepare(model, config, bundles, seed)
    default = setup.cases[0]
    # The side bundles run first, each in its own child process closed before the next
    # opens: a published int8 T3 holds ~6 GB in its worker, dequantised.
    side: list = []
    for path, make in (
        (setup.int8, lambda b: t3_rungs(b, default, "int8", COS_T3_INT8)),
        (setup.fp16, lambda b: [_fp16_rung(b, default, fp16_steps)]),
    ):
        with ChatterboxPipeline(path, isolate=True) as side_bundle:
            side += run_ladder("chatterbox", make(side_bundle)).rungs
    with ChatterboxPipeline(setup.bundle, isolate=True) as cb:
        rungs, n = main_rungs(cb, setup)
        main = run_ladder("chatterbox", rungs, stop_on_fail=stop_on_fail)
        table = step_count_table(cb, default)
    report = LadderReport("chatterbox", [*main.rungs[:n], *side, *main.rungs[n:]])
    print(
        "CFM step count (bundle, same tokens and noise; vs the publisher's 10-step mel): "
        + ", ".join(f"{r['steps']} steps mel cos {r['mel_cos_vs_10']:.4f}" for r in table)
    )
    emit(report, json_path, markdown)
    if markdown:
        with open(markdown, "a") as f:
            f.write("\n| Euler steps | mel cos vs the publisher's 10 steps |\n|---:|---:|\n")
            for r in table:
                f.write(f"| {r['steps']} | {r['mel_cos_vs_10']:.4f} |\n")
    return 0 if report.passed else 1


def _estimator_worst_cosine(cb: ChatterboxPipeline, it: dict, steps) -> float:
    """The bundle's estimator on the oracle's inputs at Euler `steps`: the worst cosine."""
    total = it["cfm_x"].shape[-1]
    table = BucketTable(cb.session.manifest.graphs[ESTIMATOR_GRAPH]["meta"]["buckets"])
    bucket = table.select(F=total)  # BucketOverflowError names the sizes
    size = bucket["F"]
    fn = function_name(ESTIMATOR_FUNCTION, bucket)
    mask = np.broadcast_to(length_mask(total, size), (2, 1, size)).copy()
    worst = 1.0
    for k in steps:
        out = cb.session.run(
            ESTIMATOR_GRAPH,
            fn,
            {
                "x": pad_to(it["cfm_x"][k], size),
                "mask": mask,
                "mu": pad_to(it["cfm_mu_in"], size),
                "t": it["cfm_t"][k].reshape(2).astype(np.float32),
                "spks": it["cfm_spks_in"],
                "cond": pad_to(it["cfm_cond_in"], size),
            },
        )
        worst = min(worst, _min_row_cosine(it["cfm_velocity"][k], out["velocity"][..., :total]))
    return worst


def _fp16_rung(cb16: ChatterboxPipeline, case: Case, which: str = "all") -> Rung:
    """The fp16 estimator on the oracle's inputs at every Euler step (`which="all"`), or at
    the middle one only (`"mid"`: fp16 is emulated slowly on the Linux runtime)."""
    it = case.fixture.intermediates
    n = len(it["cfm_x"])
    steps = range(n) if which == "all" else [n // 2]
    label = "" if which == "all" else f"@step{n // 2}"

    def worst() -> Measured:
        value = _estimator_worst_cosine(cb16, it, steps)
        return Measured(value, f"{len(steps)}/{n} Euler steps")

    return Rung(
        f"flow_estimator[fp16{label}].velocity",
        "min_step_cosine",
        COS_ESTIMATOR["fp16"],
        worst,
        True,
    )
