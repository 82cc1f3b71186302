"""Audio8's prompt as the publisher states it, written apart from the port's builder
(`prompt.py`): the side the gate's `prompt.*` rungs hold the port's prompt against, and the
prompt the gate's reference run is fed.

Stated by the publisher in `model/audio8_tts_0_6B_preview/processing_arktts.py`
(`ArkttsProcessor._prompt_segments`, the remote code the model card's usage runs) and in its web
demo's `docs/live/js/promptBuilder.js` ("verified bit-exact against the Python implementation's
build() output", `Audio8-AI/Audio8_TTS`):

* text cleaned by `" ".join(text.strip().split())`; each segment tokenized on its own
  (`add_special_tokens=False`) and the ids concatenated;
* plain (no reference): `<|im_start|>system\\n` | `convert the provided text to speech` |
  `<|im_end|>\\n` | `<|im_start|>user\\n` | TEXT | `<|im_end|>\\n` |
  `<|im_start|>assistant\\n<|voice|>`;
* with a reference: prefix `<|im_start|>system\\n` | `convert the provided text to speech
  reference to the following:\\n\\nText:\\n` | REF_TEXT (`<|speaker:0|>` + the cleaned
  transcript unless it carries a `<|speaker:N|>` tag) | `\\n\\nSpeech:\\n`, then one column per
  reference frame, then suffix `<|im_end|>\\n` | `<|im_start|>user\\n` | TEXT |
  `<|im_end|>\\n` | `<|im_start|>assistant\\n<|voice|>`;
* packing [num_codebooks + 1, P]: row 0 the prefix ids, semantic_begin_id + codes[0, t] per
  frame, the suffix ids; row r (1..num_codebooks) holds codes[r - 1] under the frame columns
  and 0 everywhere else.

The strings are written out here on purpose (not imported from `prompt.py`): a port whose
template drifts from the publisher's then differs from this.
"""

from __future__ import annotations

import re

import numpy as np

_SYSTEM = "<|im_start|>system\n"
_END = "<|im_end|>\n"
_USER = "<|im_start|>user\n"
_ASSISTANT = "<|im_start|>assistant\n<|voice|>"


def _clean(text: str) -> str:
    return " ".join(str(text).strip().split())


def _ids(tokenizer, parts: list[str]) -> list[int]:
    return [i for part in parts for i in tokenizer.encode(part, add_special_tokens=False).ids]


def segments(
    text: str, reference_text: str | None = None, with_reference: bool = False
) -> tuple[list[str], list[str]]:
    """(before the frames, after the frames); the plain template is all "before"."""
    target = _clean(text)
    if not with_reference:
        return [
            _SYSTEM,
            "convert the provided text to speech",
            _END,
            _USER,
            target,
            _END,
            _ASSISTANT,
        ], []
    ref = _clean(reference_text or "")
    if not re.search(r"<\|speaker:\d+\|>", ref):
        ref = "<|speaker:0|>" + ref
    before = [
        _SYSTEM,
        "convert the provided text to speech reference to the following:\n\nText:\n",
        ref,
        "\n\nSpeech:\n",
    ]
    return before, [_END, _USER, target, _END, _ASSISTANT]


def publisher_prompt(
    tokenizer,
    num_codebooks: int,
    semantic_begin_id: int,
    text: str,
    reference_codes: np.ndarray | None = None,
    reference_text: str | None = None,
) -> np.ndarray:
    """[num_codebooks + 1, P] int64, laid out as the publisher states (module docstring)."""
    before, after = segments(text, reference_text, reference_codes is not None)
    head, tail = _ids(tokenizer, before), _ids(tokenizer, after)
    codes = np.zeros((num_codebooks, 0), np.int64)
    if reference_codes is not None:
        codes = np.asarray(reference_codes, np.int64)
    frames = codes.shape[1]
    columns = []
    for i in head:
        columns.append([i] + [0] * num_codebooks)
    for t in range(frames):
        columns.append([semantic_begin_id + int(codes[0, t])] + [int(c) for c in codes[:, t]])
    for i in tail:
        columns.append([i] + [0] * num_codebooks)
    return np.array(columns, np.int64).T.reshape(num_codebooks + 1, -1)
