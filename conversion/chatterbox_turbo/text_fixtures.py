"""Chatterbox Turbo's text front end, for the Swift one (ios/Sources/VoxportText,
`ChatterboxTurboText`): the files of `FOLDER`.

- `corpus.json`: the tokenizer corpus (`conversion.fixtures.text.corpus`), held-out part marked.
- `whisper.json`: where the venv holds Whisper's tokenizer.json (GPT-2's byte-level BPE, 2 MB,
  not copied) and its sha256; `gpt2.overlay.json`: the keys that make it GPT-2's shape
  (`gpt2_overlay`: only `<|endoftext|>` added, a post-processor that adds nothing) — the stand-in
  for the snapshot's tokenizer.json, whose 19 other added tokens are not known here.
- `front.json`: the publisher's Turbo `punc_norm` of every string; `gpt2.front.ids.bin`:
  `TurboTextTokenizer.ids` of every string (`ids_file`).
- `chunks.json`: `TurboTextTokenizer.chunks` at small budgets (the long-text split), with errors.

`swift_fixtures.write_fixtures` writes them (`voxport fixtures swift`) into
`ios/Tests/Fixtures/chatterbox_turbo/text/`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

from conversion.fixtures.text import corpus as text_corpus
from conversion.fixtures.text.chunk_cases import chunk_cases
from conversion.fixtures.text.ids_file import write_corpus, write_ids
from conversion.fixtures.text.shapes import apply_overlay, whisper_path

from .text import TurboTextTokenizer, punc_norm

FOLDER = Path(__file__).resolve().parents[2] / "ios/Tests/Fixtures/chatterbox_turbo/text"
FILES = ("corpus.json", "whisper.json", "gpt2.overlay.json", "front.json", "gpt2.front.ids.bin",
         "chunks.json")  # fmt: skip
# GPT-2 merges whole words into one id, so the budgets are small to make the split happen.
CHUNK_BUDGETS = (4, 8, 16, 32)
CHUNK_CASES = 60  # corpus strings (evenly spaced) split at each budget
ENDOFTEXT = 50256


def gpt2_overlay() -> dict:
    """What makes Whisper's tokenizer.json GPT-2's: `<|endoftext|>` its one added token (Whisper
    adds 106 more) and GPT-2's post-processor (offsets only; Whisper's template adds its
    transcript prefix)."""
    spec = json.loads(whisper_path().read_text(encoding="utf-8"))
    endoftext = next(t for t in spec["added_tokens"] if t["id"] == ENDOFTEXT)
    byte_level = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                  "use_regex": True}  # fmt: skip
    return {"added_tokens": [endoftext], "post_processor": byte_level}


def gpt2_shaped() -> dict:
    return apply_overlay(json.loads(whisper_path().read_text(encoding="utf-8")), gpt2_overlay())


def _write_json(path: Path, payload: object) -> None:
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")


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
    (root / "gpt2.overlay.json").write_text(json.dumps(gpt2_overlay(), indent=1) + "\n")
    _write_json(root / "front.json", [punc_norm(s) for s in strings])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokenizer.json"
        path.write_text(json.dumps(gpt2_shaped(), ensure_ascii=False), encoding="utf-8")
        tok = TurboTextTokenizer(path)
    write_ids(root / "gpt2.front.ids.bin", [tok.ids(s).tolist() for s in strings])
    _write_json(root / "chunks.json", chunk_cases(tok, strings, CHUNK_CASES, CHUNK_BUDGETS))
