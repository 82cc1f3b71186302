"""Rung 0 of the Audio8 gate: the port's prompt builder (the bundle's host) vs the template as
the publisher states it (`publisher_prompt.py`, written apart from `prompt.py`), plain and with a
reference: every column equal (the ladder that runs it: ladder.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gates.ladder import Measured, Rung

from ..config import Audio8Config

# -- 0. the prompt: the port's builder vs the publisher's template ------------------------------

PROMPT_REFERENCE_FRAMES = 6  # the reference template's check: seeded codes, this many frames
PROMPT_REFERENCE_TEXT = "  A reference\n transcript,  read aloud. "  # cleaning has work to do


def prompt_rungs(
    build: Callable[[str, np.ndarray | None, str | None], np.ndarray],
    tokenizer,
    config: Audio8Config,
    text: str,
    seed: int,
) -> list[Rung]:
    """The port's packed prompt (`build(text, reference_codes, reference_text)`, the bundle's
    builder) vs the layout the publisher states (`publisher_prompt.py`, written apart from
    `prompt.py`), for the plain template on `text` and the reference template on seeded codes
    and a transcript: the share of the publisher's columns (all 11 rows) the port reproduces at
    the same place; 1.0 required."""
    from ..publisher_prompt import publisher_prompt

    rng = np.random.default_rng([seed, PROMPT_REFERENCE_FRAMES])
    codes = rng.integers(0, 1024, (config.num_codebooks, PROMPT_REFERENCE_FRAMES))
    codes[0] = rng.integers(0, config.codebook_size, PROMPT_REFERENCE_FRAMES)
    cases = {"plain": (None, None), "reference": (codes, PROMPT_REFERENCE_TEXT)}

    def compute(case: str) -> Measured:
        ref_codes, ref_text = cases[case]
        want = publisher_prompt(
            tokenizer, config.num_codebooks, config.semantic_begin_id, text, ref_codes, ref_text
        )
        got = np.asarray(build(text, ref_codes, ref_text), np.int64)
        if got.ndim != 2 or got.shape[0] != want.shape[0]:
            return Measured(
                0.0, f"port prompt shape {list(got.shape)}, publisher's {list(want.shape)}"
            )
        n = min(got.shape[1], want.shape[1])
        same = (got[:, :n] == want[:, :n]).all(axis=0)
        note = f"{int(same.sum())}/{want.shape[1]} columns equal (port {got.shape[1]} columns)"
        bad = np.flatnonzero(~same)
        if bad.size or got.shape[1] != want.shape[1]:
            k = int(bad[0]) if bad.size else n
            port, pub = (a[:, k].tolist() if k < a.shape[1] else "none" for a in (got, want))
            note += f"; first difference at column {k}: port {port} vs publisher {pub}"
        return Measured(float(same.sum()) / max(got.shape[1], want.shape[1]), note)

    return [
        Rung(f"prompt.template[{c}]", "columns_equal", 1.0, lambda c=c: compute(c), True)
        for c in cases
    ]


__all__ = [
    "prompt_rungs",
]
