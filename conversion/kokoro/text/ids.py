"""Phoneme strings to Kokoro's input ids, with the published vocabulary.

The publisher's ``KModel.forward`` maps each phoneme character through ``config["vocab"]``
and silently filters out the ones it lacks, then wraps the ids in pad id 0. Here the
filtering is the same but never silent: dropped symbols are named in a warning, because a
dropped symbol is a dropped sound: a word whose phonemes are all unknown (a G2P that emits
"❓") would otherwise come out as silence with no error anywhere.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

CONFIG_PATH = Path(__file__).parent.parent / "config.json"
PAD_ID = 0
# The limit on one utterance's ids, pads included. The publisher asserts ids + pads <= 512
# (ALBERT's positions) and indexes the 510-row voice pack by phoneme count; 510 keeps both
# safe with the same number, so a chunk never meets either limit.
MAX_IDS = 510
# Vocabulary symbols that carry no sound of their own: punctuation, the word space,
# intonation arrows and the combining tilde. A text made only of these says nothing.
NON_SPEECH_SYMBOLS = frozenset(';:,.!?—…"()“” \u0303↓→↗↘')


class UnknownPhonemeWarning(UserWarning):
    """Phoneme symbols outside Kokoro's vocabulary were dropped (they will not be heard)."""


@functools.cache
def _load_vocab_file(path: str) -> dict[str, int]:
    with open(path, encoding="utf-8") as f:
        return dict(json.load(f)["vocab"])


def load_vocab(config_path: str | Path | None = None) -> dict[str, int]:
    """``config["vocab"]`` (symbol -> id) of the published config, or of ``config_path``."""
    return dict(_load_vocab_file(str(config_path or CONFIG_PATH)))


def phonemes_to_ids(phonemes: str, vocab: Mapping[str, int] | None = None) -> list[int]:
    """The ids of ``phonemes`` (no pads); symbols outside the vocabulary are dropped with an
    :class:`UnknownPhonemeWarning` naming them."""
    vocab = _load_vocab_file(str(CONFIG_PATH)) if vocab is None else vocab
    ids: list[int] = []
    dropped: dict[str, int] = {}
    for symbol in phonemes:
        i = vocab.get(symbol)
        if i is None:
            dropped[symbol] = dropped.get(symbol, 0) + 1
        else:
            ids.append(i)
    if dropped:
        named = ", ".join(f"{s!r} (U+{ord(s):04X}) x{n}" for s, n in dropped.items())
        warnings.warn(
            f"dropped phoneme symbols outside Kokoro's vocabulary: {named}; they will not be "
            f"heard (in {phonemes!r})",
            UnknownPhonemeWarning,
            stacklevel=2,
        )
    return ids


def wrap_ids(ids: Sequence[int]) -> list[int]:
    """``[0, *ids, 0]``: the pads the publisher puts around every utterance."""
    return [PAD_ID, *ids, PAD_ID]


def has_speech(ids: Sequence[int], vocab: Mapping[str, int] | None = None) -> bool:
    """True when some id stands for a sound (not a pad, punctuation or space)."""
    vocab = _load_vocab_file(str(CONFIG_PATH)) if vocab is None else vocab
    silent = {vocab[s] for s in NON_SPEECH_SYMBOLS if s in vocab} | {PAD_ID}
    return any(i not in silent for i in ids)
