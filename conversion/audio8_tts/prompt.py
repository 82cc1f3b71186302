"""Audio8-TTS prompts: the publisher's two templates, packed as the slow AR's [11, P] input.

Facts from the publisher's code (`model/audio8_tts_0_6B_preview/processing_arktts.py`,
`ArkttsProcessor._prompt_segments`, and `modeling_arktts.py`, `ArkttsModel._prepare_prompt`):

- Text cleaning: `" ".join(text.strip().split())` (whitespace runs -> one space). Empty target
  text is an error. (The publisher's ONNX/candle runtimes clean harder — control characters
  dropped, line breaks between CJK characters deleted; the HF processor, which the oracle runs,
  does not. This module follows the HF processor.)
- Every segment is encoded on its own (`tokenizer.encode(part, add_special_tokens=False)`) and
  the id lists are concatenated: BPE merges never cross a segment boundary.
- Plain template (no reference) — one row, no suffix:
      "<|im_start|>system\\n" | "convert the provided text to speech" | "<|im_end|>\\n" |
      "<|im_start|>user\\n" | TEXT | "<|im_end|>\\n" | "<|im_start|>assistant\\n<|voice|>"
- Reference template — prefix, then the reference's frames, then suffix:
      prefix: "<|im_start|>system\\n" |
              "convert the provided text to speech reference to the following:\\n\\nText:\\n" |
              REF_TEXT | "\\n\\nSpeech:\\n"
      frames: one column per reference frame
      suffix: "<|im_end|>\\n" | "<|im_start|>user\\n" | TEXT | "<|im_end|>\\n" |
              "<|im_start|>assistant\\n<|voice|>"
  REF_TEXT is the cleaned reference transcript, prefixed with "<|speaker:0|>" unless it already
  contains a `<|speaker:N|>` tag. A reference voice *requires* its transcript (the processor
  raises without one).
- Packing: `[num_codebooks + 1, P]` integers. Row 0: prefix ids, then `semantic_begin_id +
  codes[0, t]` for each reference frame (codebook 0 is the semantic book), then suffix ids.
  Rows 1..10: the reference's codes — all ten books, row k+1 = codebook k, so row 1 repeats
  codebook 0 — under the frame columns, 0 everywhere else. The model only adds the code
  embeddings where row 0 is a semantic id, so the zeros are never read.
- Reference codes must be `[num_codebooks, T > 0]` with every value in 0..4095 (the processor
  checks against 4096 for all ten books, although books 1..9 of the codec have 1,024 entries).
- Budget: `generate` raises when P >= max_seq_len and otherwise silently clips the frames to
  max_seq_len - P. Here a prompt plus the requested frames beyond max_seq_len is a UserError
  before any compute (`check_budget`), or the text is split (`split_text`).
- Sampling defaults (generation_config.json): temperature 0.7, top_p 0.9, top_k 50,
  max_new_tokens 512; RAS (config.json): window 10, temperature 1.0, top_p 0.9.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from conversion.core.errors import UserError
from conversion.core.host.text_split import split_to_fit

from .config import Audio8Config

SYSTEM_START = "<|im_start|>system\n"
PLAIN_INSTRUCTION = "convert the provided text to speech"
REFERENCE_INSTRUCTION = "convert the provided text to speech reference to the following:\n\nText:\n"
SPEECH_HEADER = "\n\nSpeech:\n"
TURN_END = "<|im_end|>\n"
USER_START = "<|im_start|>user\n"
ASSISTANT_VOICE = "<|im_start|>assistant\n<|voice|>"
DEFAULT_SPEAKER = "<|speaker:0|>"
_SPEAKER_TAG = re.compile(r"<\|speaker:\d+\|>")


class PromptBudgetError(UserError):
    """The prompt plus the requested frames do not fit the slow AR's max_seq_len slots."""


def clean_text(text: str) -> str:
    return " ".join(str(text).strip().split())


def format_reference_text(text: str) -> str:
    cleaned = clean_text(text)
    return cleaned if _SPEAKER_TAG.search(cleaned) else f"{DEFAULT_SPEAKER}{cleaned}"


def template_parts(
    text: str, reference_text: str | None = None, with_reference: bool = False
) -> tuple[list[str], list[str]]:
    """The publisher's segments: (prefix parts, suffix parts); the frames go between them."""
    target = clean_text(text)
    if not target:
        raise UserError("audio8_tts: the text to speak is empty")
    if not with_reference:
        return [
            SYSTEM_START,
            PLAIN_INSTRUCTION,
            TURN_END,
            USER_START,
            target,
            TURN_END,
            ASSISTANT_VOICE,
        ], []
    if not reference_text or not clean_text(reference_text):
        raise UserError(
            "audio8_tts: a reference voice needs its transcript (the publisher's prompt "
            "carries the reference's text before its speech): pass the reference text"
        )
    prefix = [
        SYSTEM_START,
        REFERENCE_INSTRUCTION,
        format_reference_text(reference_text),
        SPEECH_HEADER,
    ]
    suffix = [TURN_END, USER_START, target, TURN_END, ASSISTANT_VOICE]
    return prefix, suffix


def _encode(tokenizer, parts: list[str]) -> list[int]:
    ids: list[int] = []
    for part in parts:
        ids.extend(tokenizer.encode(part, add_special_tokens=False).ids)
    return ids


def check_reference_codes(codes, config: Audio8Config) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[0] != config.num_codebooks or codes.shape[1] == 0:
        raise UserError(
            f"audio8_tts: reference codes must have shape [{config.num_codebooks}, T>0], "
            f"got {list(codes.shape)}"
        )
    if not np.issubdtype(codes.dtype, np.integer):
        raise UserError(f"audio8_tts: reference codes must be integers, got {codes.dtype}")
    if int(codes.min()) < 0 or int(codes.max()) >= config.codebook_size:
        raise UserError(
            f"audio8_tts: reference codes must lie in 0..{config.codebook_size - 1}, got "
            f"{int(codes.min())}..{int(codes.max())}"
        )
    return codes.astype(np.int64)


def check_budget(prompt_len: int, max_new_frames: int, config: Audio8Config) -> None:
    """PromptBudgetError unless prompt + frames fit the KV cache's max_seq_len slots."""
    if prompt_len + max_new_frames > config.max_seq_len:
        raise PromptBudgetError(
            f"audio8_tts: the prompt is {prompt_len} tokens and {max_new_frames} frames were "
            f"asked for: {prompt_len + max_new_frames} > the model's {config.max_seq_len} "
            "slots. Split the text (a few sentences at a time), use a shorter reference "
            "clip, or ask for fewer frames"
        )


def build_prompt(
    tokenizer,
    config: Audio8Config,
    text: str,
    reference_codes: np.ndarray | None = None,
    reference_text: str | None = None,
    max_new_frames: int | None = None,
) -> np.ndarray:
    """The packed prompt `[num_codebooks + 1, P]` (int64), as ArkttsModel._prepare_prompt makes it.

    `reference_codes` is `[num_codebooks, T]` (the codec encoder's output) and needs
    `reference_text`. With `max_new_frames`, the budget is checked (PromptBudgetError).
    """
    with_ref = reference_codes is not None
    prefix_parts, suffix_parts = template_parts(text, reference_text, with_ref)
    prefix = _encode(tokenizer, prefix_parts)
    suffix = _encode(tokenizer, suffix_parts)
    if with_ref:
        codes = check_reference_codes(reference_codes, config)
        frames = codes.shape[1]
    else:
        codes, frames = None, 0
    width = len(prefix) + frames + len(suffix)
    if max_new_frames is not None:
        check_budget(width, max_new_frames, config)
    packed = np.zeros((config.num_codebooks + 1, width), dtype=np.int64)
    packed[0, : len(prefix)] = prefix
    if codes is not None:
        packed[0, len(prefix) : len(prefix) + frames] = codes[0] + config.semantic_begin_id
        packed[1:, len(prefix) : len(prefix) + frames] = codes
    packed[0, len(prefix) + frames :] = suffix
    return packed


def prompt_length(
    tokenizer,
    config: Audio8Config,
    text: str,
    reference_frames: int = 0,
    reference_text: str | None = None,
) -> int:
    """P for `text` without building the array (segments encode independently)."""
    prefix, suffix = template_parts(text, reference_text, reference_frames > 0)
    return len(_encode(tokenizer, prefix)) + reference_frames + len(_encode(tokenizer, suffix))


def split_text(
    tokenizer,
    config: Audio8Config,
    text: str,
    max_new_frames: int | Callable[[str], int],
    reference_frames: int = 0,
    reference_text: str | None = None,
    merge_sentences: bool = False,
) -> list[str]:
    """Pieces of `text` (sentences, then clauses, words) whose prompt + frames each fit.

    Sentences stay apart unless `merge_sentences` (then as many as fit share one prompt).

    `max_new_frames` is a fixed frame budget per piece, or a function of the piece (an
    estimate of its speech length). PromptBudgetError when not even one character fits
    (the reference clip alone is too long).
    """
    if not clean_text(text):
        raise UserError("audio8_tts: the text to speak is empty")
    frames_for = max_new_frames if callable(max_new_frames) else (lambda _p: max_new_frames)
    # The target text is a segment of its own, so P is additive in its token count.
    fixed = prompt_length(tokenizer, config, "x", reference_frames, reference_text) - len(
        tokenizer.encode("x", add_special_tokens=False).ids
    )

    def length(piece: str) -> int:
        return fixed + len(tokenizer.encode(clean_text(piece), add_special_tokens=False).ids)

    def fits(piece: str) -> bool:
        return length(piece) + frames_for(piece) <= config.max_seq_len

    pieces = split_to_fit(text, fits, merge_sentences=merge_sentences)
    for piece in pieces:
        if not fits(piece):
            check_budget(length(piece), frames_for(piece), config)
    return pieces
