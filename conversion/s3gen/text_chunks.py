"""The `voxport tokenize MODEL` verb of a model built on T3 + S3Gen: the chunks its pipeline
would speak, from the snapshot's `tokenizer.json`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from conversion.core.errors import UserError
from conversion.core.port import ModelPort

from .export import TOKENIZER


def print_chunks(port: ModelPort, tokenizer_type: Any, args: argparse.Namespace) -> int:
    """The chunks of `args.text` (each its text after the model's punc_norm and its ids), cut
    by `tokenizer_type` over the snapshot's tokenizer at the config's text budget, as JSON on
    stdout: a host's `VP_TOKENS`."""
    folder, config = port.resolve(args.weights, args.config, args.weights_seed)
    tokenizer_json = Path(folder) / TOKENIZER
    if not tokenizer_json.is_file():
        raise UserError(f"{port.name}: {folder} has no {TOKENIZER}: pass a complete snapshot")
    chunks = tokenizer_type(tokenizer_json).chunks(args.text, config.text_budget)
    doc = {
        "model": port.name,
        "text_budget": config.text_budget,
        "chunks": [{"text": c.text, "ids": [int(i) for i in c.ids]} for c in chunks],
    }
    print(json.dumps(doc, ensure_ascii=False))
    return 0
