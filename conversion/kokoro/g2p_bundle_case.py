"""The Python side of VoxportHostTests' KokoroG2PBundleTests.swift: bundles with and without
``g2p/``, and misaki's phonemes for a few sentences.

    .venv/bin/python conversion/kokoro/g2p_bundle_case.py OUT

Writes into OUT (created if missing):

    bundle/         a Kokoro-style bundle holding ``vocab.json`` and ``g2p/`` as the export
                    writes it (``add_g2p_files``; no graph: the folder does not depend on one)
    old/            the same without ``g2p/`` (a bundle exported before it carried one)
    phonemes.json   [[text, phonemes], ...]: misaki's ``G2P.__call__`` with no fallback and
                    ``unk=""`` (so every word is read by the lexicon, as the Swift side's is)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script by the Swift test: the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conversion.core.bundle import BundleWriter  # noqa: E402
from conversion.kokoro.g2p_files import add_g2p_files  # noqa: E402
from conversion.kokoro.host_files import VOCAB_FILE, vocab_bytes  # noqa: E402
from conversion.kokoro.text.g2p import offline_spacy_model  # noqa: E402

SENTENCES = [
    "Hello, world. The weather is lovely today, so let's go for a walk!",
    "I read the book she had read; Paris and London are cities.",
    "Mr. Smith paid $3.50 for 12 apples on May 5th, 2024.",
]


def _add_vocab(bundle: BundleWriter) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / VOCAB_FILE
        src.write_bytes(vocab_bytes())
        bundle.add_file(src)


def write_case(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with BundleWriter(out / "bundle", "kokoro") as bundle:
        _add_vocab(bundle)
        add_g2p_files(bundle)
    with BundleWriter(out / "old", "kokoro") as bundle:
        _add_vocab(bundle)
    from misaki import en

    with offline_spacy_model():
        g2p = en.G2P(trf=False, british=False, fallback=None, unk="")
    rows = [[s, g2p(s)[0]] for s in SENTENCES]
    (out / "phonemes.json").write_text(json.dumps(rows, ensure_ascii=False) + "\n", "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    write_case(parser.parse_args().out)


if __name__ == "__main__":
    main()
