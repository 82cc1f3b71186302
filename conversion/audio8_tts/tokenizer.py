"""Audio8's text tokenizer: the snapshot's Qwen `tokenizer.json`, or a small stand-in for tests.

Facts from the publisher's code (`model/audio8_tts_0_6B_preview/`):

- config.json: `eos_token_id` 151,645 and `pad_token_id` 151,643 — Qwen2.5's `<|im_end|>` and
  `<|endoftext|>`; `<|im_start|>` is Qwen2.5's 151,644. The slow AR's vocabulary is 155,776:
  151,678 text/special ids, the 4,096 semantic ids 151,678..155,773, two unused rows.
- The prompt templates (processing_arktts.py) need three special tokens as single ids:
  `<|im_start|>`, `<|im_end|>`, `<|voice|>`. `<|speaker:0|>` appears in the reference template
  too; whether the publisher's tokenizer holds it as one token is not visible from the code
  (unverified without the real tokenizer.json). The stand-in treats it as plain text.
- Semantic ids are computed (`semantic_begin_id + code`), never encoded from text. The
  stand-in still names them `<|semantic:{i}|>` (the Fish Speech convention) so they decode.
- Where `<|voice|>` sits in the real vocabulary is not in the published code: the 13 ids
  151,665..151,677 between Qwen2.5's last special (`<|file_sep|>` 151,664) and the first
  semantic id are the candidates. The stand-in puts `<|voice|>` at 151,665; a real snapshot's
  tokenizer.json is always used as is, and `check_tokenizer` only asks that it *have* the ids.

The stand-in (random weights only) is a byte-level BPE without merges: ordinary text is one
token per UTF-8 byte at ids 0..255 (any language encodes), specials at the config's ids, the
semantic range named, every other id a `<|reserved_N|>` placeholder, so the vocabulary is
exactly `vocab_size` long. For the published ids it is ~4 MB of JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

from conversion.core.errors import WeightsError

from .config import Audio8Config

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"

IM_START, IM_END, VOICE, ENDOFTEXT = "<|im_start|>", "<|im_end|>", "<|voice|>", "<|endoftext|>"
TEMPLATE_SPECIALS = (IM_START, IM_END, VOICE)
SEMANTIC_TEMPLATE = "<|semantic:{}|>"

# Qwen2.5's special tokens after <|endoftext|> 151643, in id order (151644..151664).
_QWEN_SPECIALS = (
    IM_START,
    IM_END,
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
_QWEN_ENDOFTEXT = 151_643
# Stand-ins for the Fish-Speech-style modality tokens (positions not published; see above).
_AUDIO8_EXTRAS = (VOICE, "<|text|>", "<|interleave|>", "<|audio_start|>", "<|audio_end|>")


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (what a ByteLevel pre-tokenizer emits)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def special_ids(config: Audio8Config) -> dict[str, int]:
    """Named special tokens -> ids for `config` (the published Qwen layout, or a compact one)."""
    ids = {ENDOFTEXT: config.pad_token_id, IM_END: config.eos_token_id}
    if config.pad_token_id == _QWEN_ENDOFTEXT:
        for offset, name in enumerate(_QWEN_SPECIALS, start=1):
            ids.setdefault(name, _QWEN_ENDOFTEXT + offset)
        next_id = _QWEN_ENDOFTEXT + 1 + len(_QWEN_SPECIALS)
        for offset, name in enumerate(_AUDIO8_EXTRAS):
            ids[name] = next_id + offset
    else:
        taken = {config.pad_token_id, config.eos_token_id}
        next_id = 256
        for name in (IM_START, *_AUDIO8_EXTRAS):
            while next_id in taken or config.semantic_begin_id <= next_id <= config.semantic_end_id:
                next_id += 1
            ids[name] = next_id
            taken.add(next_id)
    return ids


def tokenizer_spec(config: Audio8Config) -> dict:
    """The stand-in tokenizer.json (as a dict) for `config`'s ids."""
    specials = special_ids(config)
    by_id: dict[int, str] = {}
    for b, ch in _bytes_to_unicode().items():
        by_id[b] = ch
    for name, i in specials.items():
        if i in by_id:
            raise ValueError(f"{name} id {i} collides with {by_id[i]!r}")
        by_id[i] = name
    for code in range(config.semantic_count):
        i = config.semantic_begin_id + code
        if i in by_id:
            raise ValueError(f"semantic id {i} collides with {by_id[i]!r}")
        by_id[i] = SEMANTIC_TEMPLATE.format(code)
    if max(by_id) >= config.vocab_size:
        raise ValueError(f"token id {max(by_id)} is outside vocab_size {config.vocab_size}")
    vocab = {by_id.get(i, f"<|reserved_{i}|>"): i for i in range(config.vocab_size)}
    added = [
        {
            "id": i,
            "content": content,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, content in sorted(
            [(i, n) for n, i in specials.items()]
            + [
                (config.semantic_begin_id + c, SEMANTIC_TEMPLATE.format(c))
                for c in range(config.semantic_count)
            ]
        )
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": False,
            "use_regex": True,
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": False,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [],
        },
    }


def write_tokenizer(folder: Path, config: Audio8Config) -> None:
    """tokenizer.json (the stand-in) and a tokenizer_config.json naming eos and pad."""
    folder = Path(folder)
    (folder / TOKENIZER_FILE).write_text(json.dumps(tokenizer_spec(config), ensure_ascii=False))
    tok_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": IM_END,
        "pad_token": ENDOFTEXT,
        "model_max_length": config.max_seq_len,
        "voxport_stand_in": True,
    }
    (folder / TOKENIZER_CONFIG_FILE).write_text(json.dumps(tok_config, indent=2) + "\n")


def load_tokenizer(folder: Path):
    """The snapshot's tokenizer.json as a `tokenizers.Tokenizer` (WeightsError naming the file)."""
    from tokenizers import Tokenizer

    path = Path(folder) / TOKENIZER_FILE
    if not path.is_file():
        raise WeightsError(
            f"audio8_tts weights: {path} is missing (the snapshot's Qwen tokenizer.json)"
        )
    try:
        return Tokenizer.from_file(str(path))
    except Exception as err:  # noqa: BLE001 - any parse failure: the file is damaged
        raise WeightsError(
            f"audio8_tts weights: {path} cannot be read ({type(err).__name__}: "
            f"{str(err)[:160]}); it is truncated or not a tokenizers JSON file"
        ) from err


def check_tokenizer(tokenizer, config: Audio8Config, source: str = TOKENIZER_FILE) -> None:
    """The template's specials are single tokens, and eos/pad sit at the config's ids."""
    for name in TEMPLATE_SPECIALS:
        if tokenizer.token_to_id(name) is None:
            raise WeightsError(f"audio8_tts: {source} has no {name} token (the prompt needs it)")
    for name, want, field in (
        (IM_END, config.eos_token_id, "eos_token_id"),
        (ENDOFTEXT, config.pad_token_id, "pad_token_id"),
    ):
        got = tokenizer.token_to_id(name)
        if got != want:
            raise WeightsError(
                f"audio8_tts: {source} puts {name} at id {got}, but config.json's "
                f"{field} is {want}: the tokenizer and the model do not belong together"
            )
