"""The gate's `prompt.template[*]` rungs: the port's prompt builder (conversion/audio8_tts/
prompt.py) against the template as the publisher states it (publisher_prompt.py, written
apart). The unbroken builder passes both; each deliberately broken builder fails the rung of
the template it breaks.
"""

from __future__ import annotations

import numpy as np
import pytest

from conversion.audio8_tts import prompt as P
from conversion.audio8_tts.config import REDUCED as C
from conversion.audio8_tts.gate.prompt_rungs import prompt_rungs
from conversion.audio8_tts.publisher_prompt import publisher_prompt
from conversion.audio8_tts.tokenizer import load_tokenizer, write_tokenizer
from gates.ladder import run_ladder

TEXT = "Hello from voxport."


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    folder = tmp_path_factory.mktemp("a8-tok")
    write_tokenizer(folder, C)
    return load_tokenizer(folder)


def _rungs(tok):
    def build(text, codes, ref_text):  # the port's builder, looked up at call time
        return P.build_prompt(tok, C, text, codes, ref_text)

    report = run_ladder("audio8_tts", prompt_rungs(build, tok, C, TEXT, 0), progress=False)
    return {r.name.split("[")[1].rstrip("]"): r for r in report.rungs}


def test_the_publishers_layout_reads_back_as_the_stated_text(tok):
    plain = publisher_prompt(tok, C.num_codebooks, C.semantic_begin_id, "  Hello,\n world ")
    assert tok.decode(plain[0].tolist(), skip_special_tokens=False) == (
        "<|im_start|>system\nconvert the provided text to speech<|im_end|>\n"
        "<|im_start|>user\nHello, world<|im_end|>\n<|im_start|>assistant\n<|voice|>"
    )
    assert not plain[1:].any()
    codes = np.arange(30).reshape(10, 3) + 7
    ref = publisher_prompt(tok, C.num_codebooks, C.semantic_begin_id, "Hi", codes, " my  voice ")
    head = "<|im_start|>system\nconvert the provided text to speech reference to the following:"
    text_head = head + "\n\nText:\n<|speaker:0|>my voice\n\nSpeech:\n"
    n = len(tok.encode(text_head, add_special_tokens=False).ids)
    assert ref[0, n : n + 3].tolist() == [C.semantic_begin_id + 7 + t for t in range(3)]
    assert ref[1:, n : n + 3].tolist() == codes.tolist()  # row r: codebook r - 1
    assert not ref[1:, :n].any() and not ref[1:, n + 3 :].any()


def test_the_ports_builder_passes(tok):
    got = _rungs(tok)
    for name, r in got.items():
        assert r.passed and r.value == 1.0, f"{name}: {r.detail}"
    assert "columns equal" in got["reference"].detail


def _rows_rolled(codes, config):
    return np.roll(np.asarray(codes, np.int64), 1, axis=0)  # codebook k under row k + 2


BROKEN = {
    # (what is patched on prompt.py, its broken value, the rungs that must fail)
    "instruction worded differently": (
        "PLAIN_INSTRUCTION",
        "convert the text to speech",
        {"plain"},
    ),
    "speaker tag dropped": ("DEFAULT_SPEAKER", "", {"reference"}),
    "transcript not cleaned": (
        "format_reference_text",
        lambda t: f"<|speaker:0|>{t}",
        {"reference"},
    ),
    "codebook rows off by one": ("check_reference_codes", _rows_rolled, {"reference"}),
    "assistant turn without <|voice|>": (
        "ASSISTANT_VOICE",
        "<|im_start|>assistant\n",
        {"plain", "reference"},
    ),
}


@pytest.mark.parametrize("fault", sorted(BROKEN))
def test_a_broken_builder_fails_the_template_rung(tok, monkeypatch, fault):
    attr, value, failing = BROKEN[fault]
    monkeypatch.setattr(P, attr, value)
    got = _rungs(tok)
    assert {name for name, r in got.items() if not r.passed} == failing, {
        n: r.detail for n, r in got.items()
    }
    for name in failing:
        assert "first difference at column" in got[name].detail
