"""Chatterbox's text front end, for the Swift one (ios/Sources/VoxportText): `text/` of the
Chatterbox fixtures, written by `swift_fixtures.write_fixtures`.

- `corpus.json`: the tokenizer corpus (`conversion.fixtures.text.corpus`), held-out part marked.
- `shaped.tokenizer.json`: a Chatterbox-shaped BPE trained here (~700 ids, Whitespace
  pre-tokenizer, the publisher's specials); `stand_in.tokenizer.json`: the snapshot's stand-in
  (`weights.write_tokenizer`, a WordLevel over characters).
- `<tok>.ids.bin`: Hugging Face `tokenizers`' ids for every corpus string (`ids_file`);
  `<tok>.front.ids.bin`: `TextTokenizer.ids` (punc_norm, [SPACE], [START] ... [STOP]);
  `front.json`: `punc_norm` of every string.
- `chunks.json`: `TextTokenizer.chunks` at small budgets (the long-text split), with errors.
"""

from __future__ import annotations

import json
from pathlib import Path

from conversion.fixtures.text import corpus as text_corpus
from conversion.fixtures.text.chunk_cases import chunk_cases
from conversion.fixtures.text.ids_file import encode_all, write_corpus, write_ids
from conversion.fixtures.text.shapes import chatterbox_shaped, load

from .text import TextTokenizer
from .weights import write_tokenizer

CHUNK_BUDGETS = (6, 12, 24, 48)
CHUNK_CASES = 60  # corpus strings (every 100th) split at each budget


def write_text_fixtures(root: Path) -> None:
    from chatterbox.tts import punc_norm

    root.mkdir(parents=True, exist_ok=True)
    strings = text_corpus.corpus()
    write_corpus(root / "corpus.json", strings, text_corpus.HELD_OUT_EVERY)
    shaped = root / "shaped.tokenizer.json"
    shaped.write_text(json.dumps(chatterbox_shaped(text_corpus.prose()), indent=0) + "\n")
    write_tokenizer(root / "stand_in.tokenizer.json")
    normed = [punc_norm(s) for s in strings]
    (root / "front.json").write_text(json.dumps(normed, ensure_ascii=False, indent=0) + "\n")
    for name in ("shaped", "stand_in"):
        path = root / f"{name}.tokenizer.json"
        write_ids(root / f"{name}.ids.bin", encode_all(load(json.loads(path.read_text())), strings))
        front = TextTokenizer(path)
        write_ids(root / f"{name}.front.ids.bin", [front.ids(s).tolist() for s in strings])
    cases = chunk_cases(TextTokenizer(shaped), strings, CHUNK_CASES, CHUNK_BUDGETS)
    (root / "chunks.json").write_text(json.dumps(cases, ensure_ascii=False, indent=0) + "\n")
