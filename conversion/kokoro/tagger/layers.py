"""The tok2vec and tagger weights of the loaded pipeline, with the architecture each assumes.

Every fact the Swift port relies on (attribute order, table rows, hash seeds, window, depth,
maxout pieces, padding, labels) is read from the thinc model itself and checked here, so a
pipeline built differently fails the export in one line instead of tagging wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from conversion.core.errors import UserError


class TaggerArchitectureError(UserError):
    """The spaCy pipeline's tok2vec or tagger is not the architecture the port computes."""


@dataclass(frozen=True)
class HashTable:
    attr: str
    seed: int
    E: np.ndarray  # (rows, width)


@dataclass(frozen=True)
class MaxoutNorm:
    """thinc ``Maxout(normalize=True)``: W (nO, nP, nI), b (nO, nP), then LayerNorm G, b."""

    W: np.ndarray
    b: np.ndarray
    G: np.ndarray
    beta: np.ndarray


@dataclass(frozen=True)
class TaggerWeights:
    attrs: list[str]
    tables: list[HashTable]
    mixer: MaxoutNorm
    encoder: list[MaxoutNorm]
    window: int
    pad: int
    output_W: np.ndarray  # (labels, width)
    output_b: np.ndarray
    labels: list[str]


def _require(ok: bool, what: str) -> None:
    if not ok:
        raise TaggerArchitectureError(
            f"spaCy tagger pipeline: {what}; the Swift port computes spacy.Tok2Vec.v2 "
            "(MultiHashEmbed.v2 + MaxoutWindowEncoder.v2) and spacy.Tagger.v2 only"
        )


def _f32(a: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float32))


def _maxout_norm(maxout: Any, norm: Any) -> MaxoutNorm:
    _require(maxout.name == "maxout" and norm.name == "layernorm", "expected maxout>>layernorm")
    return MaxoutNorm(
        W=_f32(maxout.get_param("W")),
        b=_f32(maxout.get_param("b")),
        G=_f32(norm.get_param("G")),
        beta=_f32(norm.get_param("b")),
    )


def read_weights(nlp: Any) -> TaggerWeights:
    """The arrays of ``nlp``'s tok2vec and tagger, checked against the ported architecture."""
    _require(list(nlp.pipe_names) == ["tok2vec", "tagger"], f"pipes {nlp.pipe_names}")
    t2v = nlp.get_pipe("tok2vec").model
    nodes = list(t2v.walk(order="dfs_pre"))
    names = [n.name for n in nodes]

    extract = [n for n in nodes if n.name == "extract_features"]
    _require(len(extract) == 1, "one extract_features layer")
    attrs = [str(a) for a in extract[0].attrs["columns"]]

    hashembeds = [n for n in nodes if n.name == "hashembed"]
    _require(len(hashembeds) == len(attrs), f"{len(hashembeds)} hash tables for {len(attrs)} attrs")
    for i, h in enumerate(hashembeds):
        _require(h.attrs["column"] == i, f"hash table {i} reads column {h.attrs['column']}")
    tables = [
        HashTable(attr=a, seed=int(h.attrs["seed"]), E=_f32(h.get_param("E")))
        for a, h in zip(attrs, hashembeds, strict=True)
    ]
    width = tables[0].E.shape[1]

    maxouts = [n for n in nodes if n.name == "maxout"]
    norms = [n for n in nodes if n.name == "layernorm"]
    _require(len(maxouts) == len(norms) >= 2, "maxout>>layernorm pairs")
    for m in maxouts:
        _require(m.get_dim("nO") == width, f"maxout width {m.get_dim('nO')} != {width}")
    mixer = _maxout_norm(maxouts[0], norms[0])
    _require(mixer.W.shape[2] == width * len(attrs), "mixer reads the concatenated tables")
    encoder = [_maxout_norm(m, n) for m, n in zip(maxouts[1:], norms[1:], strict=True)]

    windows = {n.attrs["window_size"] for n in nodes if n.name == "expand_window"}
    _require(len(windows) == 1, f"one window size, got {windows}")
    window = int(windows.pop())
    residuals = [
        n for n in nodes if n.name.startswith("residual(") and n.name.count("residual(") == 1
    ]
    _require(len(residuals) == len(encoder), "every encoder layer residual")
    for layer in encoder:
        _require(layer.W.shape[2] == width * (2 * window + 1), "encoder reads the window")
    pads = [n.attrs["pad"] for n in nodes if n.name.startswith("with_array(residual")]
    _require(len(pads) == 1, "one padded encoder")
    _require("staticvectors" not in names, "no static vectors")

    tagger = nlp.get_pipe("tagger")
    softmax = [n for n in tagger.model.walk() if n.name == "softmax"]
    _require(len(softmax) == 1, "one softmax output layer")
    labels = [str(label) for label in tagger.labels]
    W = _f32(softmax[0].get_param("W"))
    _require(W.shape == (len(labels), width), f"softmax W {W.shape}")
    return TaggerWeights(
        attrs=attrs,
        tables=tables,
        mixer=mixer,
        encoder=encoder,
        window=window,
        pad=int(pads[0]),
        output_W=W,
        output_b=_f32(softmax[0].get_param("b")),
        labels=labels,
    )
