"""Audio8's text front end and byte-level BPE, for the Swift one (ios/Sources/VoxportText):
`text/` of the Audio8 fixtures, written by `swift_fixtures.write_fixtures`.

- `corpus.json`: the tokenizer corpus (`conversion.fixtures.text.corpus`), held-out part marked.
- `whisper.json`: where the venv holds Whisper's tokenizer.json (GPT-2 byte-level, 50,000
  merges; 2 MB, not copied) and its sha256; `qwen2.overlay.json`: the Qwen2-shaped tokenizer
  as keys over Whisper's (`conversion.fixtures.text.shapes`); `stand_in.tokenizer.json`: the
  snapshot's stand-in at the reduced sizes (`tokenizer.tokenizer_spec`).
- `<tok>.ids.bin`: Hugging Face `tokenizers`' ids for every corpus string (`ids_file`), with
  the post-processor's tokens (Whisper's template adds its own).
- `qwen2.prompt.ids.bin`: row 0 of `prompt.build_prompt` for every corpus string (the plain
  template; a refused text is an error entry); `<tok>.reference.json`: reference-template rows.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from conversion.core.errors import UserError
from conversion.fixtures.text import corpus as text_corpus
from conversion.fixtures.text.ids_file import encode_all, write_corpus, write_ids
from conversion.fixtures.text.shapes import load, qwen2_overlay, qwen2_shaped, whisper_path

from .config import PUBLISHED, REDUCED, Audio8Config
from .prompt import build_prompt
from .tokenizer import special_ids, tokenizer_spec

REFERENCE_CASES = 24  # corpus strings as texts and reference transcripts, 1..5 frames each


def _codes(config: Audio8Config, frames: int, k: int):
    import numpy as np

    b, t = np.arange(config.num_codebooks)[:, None], np.arange(frames)[None, :]
    return (37 * b + 101 * t + 7 * k) * 53 % config.codebook_size


def _prompt_row(tokenizer, config: Audio8Config, text: str, **ref) -> list[int] | None:
    try:
        return build_prompt(tokenizer, config, text, **ref)[0].tolist()
    except UserError:
        return None


def _reference_cases(tokenizer, config: Audio8Config, strings: list[str]) -> list[dict]:
    step = len(strings) // REFERENCE_CASES
    cases = []
    for k in range(REFERENCE_CASES):
        text, ref_text = strings[k * step], strings[(k * step + step // 2) % len(strings)]
        if k % 6 == 5:
            ref_text = f"<|speaker:{k}|> {ref_text}"
        codes = _codes(config, 1 + k % 5, k)
        row = _prompt_row(tokenizer, config, text, reference_codes=codes, reference_text=ref_text)
        cases.append({"text": text, "reference_text": ref_text, "codes0": codes[0].tolist(),
                      "row0": row})  # fmt: skip
    return cases


def write_text_fixtures(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    strings = text_corpus.corpus()
    write_corpus(root / "corpus.json", strings, text_corpus.HELD_OUT_EVERY)
    whisper = whisper_path()
    where = {
        "venv_path": whisper.relative_to(sys.prefix).as_posix(),
        "sha256": hashlib.sha256(whisper.read_bytes()).hexdigest(),
    }
    (root / "whisper.json").write_text(json.dumps(where, indent=1) + "\n")
    specials = special_ids(PUBLISHED)
    (root / "qwen2.overlay.json").write_text(json.dumps(qwen2_overlay(specials), indent=1) + "\n")
    stand_in = tokenizer_spec(REDUCED)
    (root / "stand_in.tokenizer.json").write_text(json.dumps(stand_in, ensure_ascii=False) + "\n")
    tokenizers = {
        "whisper": (load(json.loads(whisper.read_text())), None),
        "qwen2": (load(qwen2_shaped(specials)), PUBLISHED),
        "stand_in": (load(stand_in), REDUCED),
    }
    for name, (tok, config) in tokenizers.items():
        write_ids(root / f"{name}.ids.bin", encode_all(tok, strings))
        if config is None:
            continue
        if name == "qwen2":  # the stand-in's prompts would add 0.9 MB and nothing new
            rows = [_prompt_row(tok, config, s) for s in strings]
            write_ids(root / f"{name}.prompt.ids.bin", rows)
        cases = _reference_cases(tok, config, strings)
        (root / f"{name}.reference.json").write_text(
            json.dumps(
                {"semantic_begin": config.semantic_begin_id, "cases": cases},
                ensure_ascii=False,
                indent=0,
            )
            + "\n"  # fmt: skip
        )
