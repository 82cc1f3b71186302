"""Write the tagger folder: raw little-endian float32 arrays plus ``tagger.json``.

The bytes depend only on the installed pipeline (no clock, no dict-order accident), so the
folder can later be written into the Kokoro bundle as hashed host files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from spacy.symbols import IDS as SYMBOLS

from .layers import MaxoutNorm, TaggerWeights, read_weights
from .norms import norm_tables
from .pipeline import ENABLED, tagger_pipeline

FORMAT = "voxport-tagger/1"
JSON_NAME = "tagger.json"
# thinc's LayerNorm: (X - mean) * (var + 1e-08) ** -0.5 (layers/layernorm.py, _get_moments).
LAYERNORM_EPS = 1e-08


def _arrays(w: TaggerWeights) -> dict[str, np.ndarray]:
    """Every array by file stem, in the order the JSON lists them."""
    out = {f"embed.{t.attr}": t.E for t in w.tables}

    def layer(prefix: str, m: MaxoutNorm) -> None:
        out.update(
            {f"{prefix}.W": m.W, f"{prefix}.b": m.b, f"{prefix}.G": m.G, f"{prefix}.beta": m.beta}
        )

    layer("mixer", w.mixer)
    for i, m in enumerate(w.encoder):
        layer(f"encoder.{i}", m)
    out["output.W"] = w.output_W
    out["output.b"] = w.output_b
    return out


def _description(w: TaggerWeights, nlp: Any, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    meta = nlp.meta
    return {
        "format": FORMAT,
        "source": {
            "pipeline": f"{meta['lang']}_{meta['name']}",
            "version": meta["version"],
            "components": ENABLED,
        },
        "width": int(w.tables[0].E.shape[1]),
        "attrs": [{"name": t.attr, "rows": int(t.E.shape[0]), "seed": t.seed} for t in w.tables],
        "maxout_pieces": int(w.mixer.W.shape[1]),
        "encoder": {"depth": len(w.encoder), "window": w.window, "pad": w.pad},
        "layernorm_eps": LAYERNORM_EPS,
        "labels": w.labels,
        "arrays": {
            name: {"file": f"{name}.f32", "shape": list(a.shape)} for name, a in arrays.items()
        },
        # spaCy's string id is the symbol's number for these names (spacy.strings.get_string_id)
        # and the hash of the UTF-8 bytes for any other string.
        "symbols": dict(sorted(SYMBOLS.items(), key=lambda kv: kv[1])),
        # string id (16 hex digits) of the orth -> norm; first table first.
        "norm_tables": [
            {f"{k:016x}": v for k, v in sorted(t.items())} for t in norm_tables(nlp.vocab)
        ],
    }


def write_tagger(dest: Path, nlp: Any = None) -> list[Path]:
    """Write the tagger of ``nlp`` (default: misaki's ``en_core_web_sm`` pipeline) into
    ``dest`` (created if missing); returns the files written, JSON first."""
    nlp = tagger_pipeline() if nlp is None else nlp
    weights = read_weights(nlp)
    arrays = _arrays(weights)
    dest.mkdir(parents=True, exist_ok=True)
    desc = _description(weights, nlp, arrays)
    json_path = dest / JSON_NAME
    json_path.write_text(json.dumps(desc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    written = [json_path]
    for name, a in arrays.items():
        path = dest / f"{name}.f32"
        path.write_bytes(a.astype("<f4").tobytes())
        written.append(path)
    return written
