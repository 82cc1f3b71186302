"""The Chatterbox gate's rungs whose two sides no longer share the thing under test:

* `voice[cloned].conds`: the voice file `voxport voice` writes, read back from disk by the
  host's reader, against the publisher's conditionals computed in memory by its own
  `prepare_conditionals`;
* `text.ids`: voxport's chunks against voxport's split of the text with every piece through
  the publisher's text path, over texts longer than the budget.

Each passes on the port as it is and fails on a deliberately broken port.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest
import soundfile as sf
import torch

from conversion.chatterbox import text as text_mod
from conversion.chatterbox import voice as voice_mod
from conversion.chatterbox import weights
from conversion.chatterbox.config import REDUCED
from conversion.chatterbox.export import TOKENIZER
from conversion.chatterbox.gate import text_rungs as TR
from conversion.chatterbox.gate import voice_rungs as VR
from conversion.chatterbox.gate.case import Case
from conversion.chatterbox.port import PORT
from conversion.chatterbox.text import TextTokenizer
from conversion.chatterbox.weights import load_model
from conversion.core.host import text_split
from gates.ladder import run_ladder

torch.set_num_threads(1)


def _run(rung):
    return run_ladder("chatterbox", [rung], progress=False).rungs[0]


# -- text.ids over split pieces ------------------------------------------------------------------


@pytest.fixture(scope="module")
def text_side(tmp_path_factory):
    """A bundle folder holding the stand-in tokenizer.json, and the publisher's text path over
    the same file (the two attributes of the model `oracle.t3._text_tokens` reads)."""
    from chatterbox.models.tokenizers import EnTokenizer

    bundle = tmp_path_factory.mktemp("cbx-text")
    weights.write_tokenizer(bundle / TOKENIZER)
    hp = SimpleNamespace(start_text_token=weights.START_TEXT, stop_text_token=weights.STOP_TEXT)
    model = SimpleNamespace(
        tokenizer=EnTokenizer(str(bundle / TOKENIZER)), t3=SimpleNamespace(hp=hp)
    )
    return model, bundle


def test_long_cases_are_split_every_way(text_side):
    _, bundle = text_side
    tok = TextTokenizer(bundle / TOKENIZER)
    budget = REDUCED.text_budget
    counts = [len(tok.chunks(t, budget)) for t in TR.TEXT_LONG_CASES]
    assert all(n > 1 for n in counts), counts
    assert len(TR.TEXT_LONG_CASES[-1]) > 4 * 300  # over the published budget with a real BPE
    assert all(len(tok.chunks(t, budget)) == 1 for t in TR.TEXT_CASES)


def test_text_rung_passes_on_the_port(text_side):
    model, bundle = text_side
    r = _run(TR.text_rung(model, bundle, REDUCED))
    n = len(TR.TEXT_CASES) + len(TR.TEXT_LONG_CASES)
    assert r.passed and r.value == 1.0, r.detail
    assert f"{n}/{n} texts" in r.detail


def _ids_without_eot(self, text):
    from chatterbox.tts import punc_norm

    return np.asarray([weights.START_TEXT, *self._tok.encode(punc_norm(text))], np.int32)


def _split_apart(text, fits, merge_sentences=False):
    return text_split.split_to_fit(text, fits, merge_sentences=False)  # sentences never packed


def _split_drops_last(text, fits, merge_sentences=False):
    return text_split.split_to_fit(text, fits, merge_sentences)[:-1]


TEXT_FAULTS = {
    # (object, attribute, broken value)
    "ids without EOT": (TextTokenizer, "ids", _ids_without_eot),
    "sentences not packed": (text_mod, "split_to_fit", _split_apart),
    "last piece dropped": (text_mod, "split_to_fit", _split_drops_last),
    # in the shared splitter: both sides split alike, the re-join check fails
    "clause split eats the comma": (text_split, "_CLAUSE_END", re.compile(r"[,;:—]\s+")),
}


@pytest.mark.parametrize("fault", sorted(TEXT_FAULTS))
def test_text_rung_fails_on_a_broken_port(text_side, monkeypatch, fault):
    model, bundle = text_side
    obj, attr, value = TEXT_FAULTS[fault]
    monkeypatch.setattr(obj, attr, value)
    r = _run(TR.text_rung(model, bundle, REDUCED))
    assert not r.passed and r.value < 1.0, r.detail


# -- voice[cloned].conds: the voice file vs the publisher's conditionals -------------------------


@pytest.fixture(scope="module")
def model():
    return load_model(PORT.resolve_weights("random", REDUCED, 0))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("cbx-ref") / "reference.wav"
    wav = weights.synthetic_reference(VR.REF_SECONDS, 7, sample_rate=VR.REF_RATE)
    sf.write(path, wav, VR.REF_RATE)
    return path


@pytest.fixture(scope="module")
def publisher(model, reference):
    return VR.publisher_conditionals(model, reference, 0.5)


def _voice_rung(model, reference, publisher, tmp_path):
    path = voice_mod.write_voice_file(
        model, reference, tmp_path / "voice.npz", 0.5, REDUCED.prompt_tokens_max
    )
    voice = voice_mod.Voice.load(path)  # from disk, as the host reads it
    return _run(VR.voice_rung(Case("cloned", None, voice, None, publisher)))


def test_voice_rung_passes_on_the_port(model, reference, publisher, tmp_path):
    r = _voice_rung(model, reference, publisher, tmp_path)
    assert r.passed and r.value >= VR.COS_VOICE, r.detail
    assert "read from disk" in r.detail
    assert publisher["prompt_tokens"].shape == (1, REDUCED.prompt_tokens_max)  # the cap binds


_save, _load, _cap = voice_mod.Voice.save, voice_mod.Voice.load.__func__, voice_mod.cap_prompt


def _save_rolled_mel(self, path):
    rolled = voice_mod.dataclasses.replace(self, prompt_feat=np.roll(self.prompt_feat, 1, axis=1))
    return _save(rolled, path)


def _load_dropping_a_token(cls, path):
    v = _load(cls, path)
    return voice_mod.dataclasses.replace(v, t3_prompt_tokens=v.t3_prompt_tokens[:, 1:])


def _emotion_row_negated(self, exaggeration=None):
    e = self.exaggeration if exaggeration is None else exaggeration
    out = self.cond_emb_base.copy()
    out[0, -1] = -np.float32(e) * self.emotion_adv_weight
    return out


VOICE_FAULTS = {
    "file's prompt mel one frame late": (voice_mod.Voice, "save", _save_rolled_mel),
    "reader drops a T3 prompt token": (
        voice_mod.Voice,
        "load",
        classmethod(_load_dropping_a_token),
    ),
    "host's emotion row negated": (voice_mod.Voice, "cond_emb", _emotion_row_negated),
    "prompt cap one token short": (voice_mod, "cap_prompt", lambda v, n: _cap(v, n - 1)),
}


@pytest.mark.parametrize("fault", sorted(VOICE_FAULTS))
def test_voice_rung_fails_on_a_broken_port(
    model, reference, publisher, tmp_path, monkeypatch, fault
):
    obj, attr, value = VOICE_FAULTS[fault]
    monkeypatch.setattr(obj, attr, value)
    r = _voice_rung(model, reference, publisher, tmp_path)
    assert not r.passed and r.value < VR.COS_VOICE, r.detail


def test_the_gate_case_makes_its_voice_file_when_the_rung_runs(
    model, reference, publisher, monkeypatch
):
    """The gate's cloned case is made once, before any fault of the catalogue opens; its voice
    rung writes and reads the voice file again when it runs (`ladder.voice_file_maker`), so a
    writer or reader fault opened after the case was made still fails it (it did not: the rung
    compared the file made with the case, and killed no fault of the catalogue)."""
    from conversion.chatterbox.gate.ladder import voice_file_maker

    clone = voice_file_maker(model, reference, 0.5, REDUCED.prompt_tokens_max)
    case = Case("cloned", None, clone(), None, publisher, clone)
    assert _run(VR.voice_rung(case)).passed
    for obj, attr, value in (VOICE_FAULTS[k] for k in sorted(VOICE_FAULTS)):
        with monkeypatch.context() as m:
            m.setattr(obj, attr, value)
            r = _run(VR.voice_rung(case))
        assert not r.passed and r.value < VR.COS_VOICE, (attr, r.detail)
