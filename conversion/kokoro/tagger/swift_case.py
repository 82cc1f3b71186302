"""The Python side of VoxportTextTests' TaggerTests.swift.

    .venv/bin/python conversion/kokoro/tagger/swift_case.py OUT [--checked N] [--subset]

Writes into OUT (created if missing), for every corpus sentence or, with --subset, for the
fixed part a debug-build Swift test tags in about 20 s (:func:`in_subset`):

    tagger/         write_tagger's folder (the Swift tagger loads it)
    cases.json      {"attrs": [...], "checked": N, "sentences": [{"index": i, "held_out": bool,
                     "tokens": [{"text", "ws", "tag", "norm"?}]}]}: every corpus sentence
                     tokenised and tagged by spaCy as misaki runs it (``nlp(text)``, tok2vec +
                     tagger); "norm" only where the token's own NORM (a tokenizer special
                     case) differs from its lexeme's
    features.u64    spaCy's ``doc.to_array(attrs)`` per token (all tokens, in order)
    logits.f32      the tagger's scores per token (50 per token, all tokens)
    embed.f32       MultiHashEmbed's output (width per token), first N sentences only
    tok2vec.f32     the encoder's output (width per token), first N sentences only

Every array comes from spaCy/thinc running the real pipeline, never from the exported files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from conversion.kokoro.tagger.corpus import corpus
from conversion.kokoro.tagger.pipeline import tagger_pipeline
from conversion.kokoro.tagger.writer import write_tagger
from conversion.kokoro.text.prose import is_held_out


def in_subset(index: int) -> bool:
    """Every sixteenth sentence, and every eighth held-out one (156 of 2,071)."""
    return index % 16 == 0 or (is_held_out(index) and index % 8 == 0)


def write_case(out: Path, checked: int, subset: bool) -> None:
    nlp = tagger_pipeline()
    write_tagger(out / "tagger", nlp)
    t2v = nlp.get_pipe("tok2vec").model
    embed = t2v.layers[0]
    output = nlp.get_pipe("tagger").model.layers[-1]
    attrs = next(n for n in t2v.walk() if n.name == "extract_features").attrs["columns"]
    labels = list(nlp.get_pipe("tagger").labels)

    sentences, features, logits, embeds, encoded = [], [], [], [], []
    texts = [(i, s) for i, s in enumerate(corpus()) if not subset or in_subset(i)]
    for (i, _), doc in zip(texts, nlp.pipe(s for _, s in texts), strict=True):
        tokens = []
        for tk in doc:
            token = {"text": tk.text, "ws": bool(tk.whitespace_), "tag": tk.tag_}
            if tk.norm_ != tk.lex.norm_:
                token["norm"] = tk.norm_
            tokens.append(token)
        sentences.append({"index": i, "held_out": is_held_out(i), "tokens": tokens})
        features.append(doc.to_array(attrs).astype("<u8"))
        X = t2v.predict([doc])[0]
        scores = output.predict([X])[0]
        # The scores are the tagger's: their argmax is the tag spaCy set.
        assert [labels[k] for k in scores.argmax(axis=1)] == [tk.tag_ for tk in doc], doc.text
        logits.append(scores)
        if len(sentences) <= checked:
            embeds.append(embed.predict([doc])[0])
            encoded.append(X)

    (out / "features.u64").write_bytes(np.concatenate(features).astype("<u8").tobytes())
    for name, arrays in (("logits", logits), ("embed", embeds), ("tok2vec", encoded)):
        (out / f"{name}.f32").write_bytes(np.concatenate(arrays).astype("<f4").tobytes())
    case = {"attrs": list(attrs), "checked": checked, "sentences": sentences}
    (out / "cases.json").write_text(json.dumps(case, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--checked", type=int, default=20, help="sentences with intermediate arrays"
    )
    parser.add_argument("--subset", action="store_true", help="only the sentences in_subset picks")
    args = parser.parse_args()
    write_case(args.out, args.checked, args.subset)


if __name__ == "__main__":
    main()
