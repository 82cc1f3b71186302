"""Whisper's WER of Kokoro speaking held-out sentences from two G2Ps' phonemes (issue 31's
"speech of 20 held-out sentences"): the publisher's G2P (misaki with espeak-ng for unknown
words) against phonemes given in a file (what VoxportKit's Swift G2P printed, one
`kokoro.text` `text.json` per sentence) or against Python's own `--fallback rules`.

The sentences are the first `--count` held-out sentences of the G2P corpus
(`conversion/kokoro/lexicon/english_case.py`, never used while building) of at most
`--max-words` words for which the publisher's G2P asks espeak-ng at least once: a sentence
without an unknown word reads the same through either fallback, so it measures nothing.

Each side's phoneme string is split by the chunker's own rules (`split_phonemes`) to the
bundle's largest token bucket, each chunk spoken in the gate's voice with seed 0 (a chunk both
sides share is spoken once: the same ids, voice row and seed give the same audio), the chunks
joined with the pipeline's pause, and all sentences heard by Whisper; the WER is over
the joined references, as the gate's ASR rung counts it.

    python -m docs.tools.g2p_speech_wer --bundle bundles/kokoro-fp32-reduced \
        --phonemes swift-phonemes.jsonl --json out/g2p-speech-wer.json
    python -m docs.tools.g2p_speech_wer --bundle ... --sentences-out sentences.txt  # list only
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np


def fallback_sentences(count: int, max_words: int) -> dict[str, str]:
    """The first `count` held-out corpus sentences of ≤ `max_words` words that make the
    publisher's G2P call its espeak-ng fallback, with the phonemes it gave them."""
    from conversion.kokoro.lexicon.english_case import sentences
    from conversion.kokoro.text.g2p import english_g2p

    g2p = english_g2p()
    asked: list[str] = []
    real = g2p.fallback

    def counting(token):
        asked.append(token.text)
        return real(token)

    g2p.fallback = counting
    out: dict[str, str] = {}
    try:
        for split, _corpus, _index, text in sentences(subset=False):
            if split != "held" or len(text.split()) > max_words:
                continue
            asked.clear()
            phonemes, _ = g2p(text)
            if asked:
                out[text] = phonemes
                if len(out) == count:
                    break
    finally:
        g2p.fallback = real
    return out


def read_phonemes(path: Path) -> dict[str, str]:
    """text -> phonemes from a JSONL of `voxport phonemize kokoro`-shaped documents (one per
    sentence; the `text` key names the sentence, the chunks' phonemes are joined by spaces)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            doc = json.loads(line)
            out[doc["text"]] = " ".join(c["phonemes"] for c in doc["chunks"])
    return out


def speak_both(
    bundle: Path,
    texts: list[str],
    publisher: dict[str, str],
    other: dict[str, str],
    on_row: Callable[[list[dict[str, str]]], None],
) -> list[dict[str, str]]:
    """Each sentence spoken from both sides' phonemes through `bundle`, and what Whisper heard;
    `on_row(rows so far)` after each (the Linux runtime takes minutes a sentence)."""
    from conversion.kokoro import host
    from conversion.kokoro.gate.cases import GATE_VOICE
    from conversion.kokoro.pipeline import KokoroPipeline
    from conversion.kokoro.text.phoneme_split import split_phonemes
    from gates.asr import transcribe

    pack = host.load_voice(GATE_VOICE)
    spoken: dict[tuple[tuple[int, ...], int], np.ndarray] = {}  # by ids and voice row: once
    with KokoroPipeline(bundle) as pipeline:
        max_ids = min(pipeline.tables["predictor"].limits()["T"], host.MAX_IDS)

        def speak(phonemes: str) -> np.ndarray:
            parts = []
            for chunk in split_phonemes(phonemes, max_ids):
                key = (tuple(chunk.ids), chunk.n_phonemes)  # the row counts every symbol
                if key not in spoken:
                    ref_s = host.ref_s_for(pack, chunk.n_phonemes)
                    spoken[key] = pipeline.synthesize_ids(chunk.ids, ref_s, seed=0).audio
                parts.append(spoken[key])
            return host.join_audio(parts)

        rows = []
        for i, t in enumerate(texts):
            row = {"text": t, "publisher": publisher[t], "other": other[t]}
            for side in ("publisher", "other"):
                row[f"{side}_heard"] = transcribe(speak(row[side]), host.SAMPLE_RATE)
            rows.append(row)
            on_row(rows)
            print(f"[{i + 1}/{len(texts)}] same={row['publisher'] == row['other']}", flush=True)
    return rows


def summary(rows: list[dict[str, str]], other_name: str, bundle: Path) -> dict:
    """The WER of each side over the sentences spoken so far (the gate's way: one joined text)."""
    from gates.asr import word_error_rate

    reference = " ".join(r["text"] for r in rows)
    wer = {
        side: word_error_rate(reference, " ".join(r[f"{side}_heard"] for r in rows))
        for side in ("publisher", "other")
    }
    return {
        "bundle": str(bundle),
        "voice": "jf_alpha (the gate's)",
        "other": other_name,
        "sentences": len(rows),
        "identical_phonemes": sum(r["publisher"] == r["other"] for r in rows),
        "wer_publisher": wer["publisher"],
        "wer_other": wer["other"],
        "wer_difference": wer["other"] - wer["publisher"],
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, help="a Kokoro bundle (reduced is what CI gates)")
    p.add_argument("--phonemes", type=Path, help="JSONL of the other side's phonemize docs")
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--max-words", type=int, default=10)
    p.add_argument("--sentences-out", type=Path, help="write the sentences, one a line; stop")
    p.add_argument("--json", type=Path, dest="json_path")
    args = p.parse_args(argv)

    publisher = fallback_sentences(args.count, args.max_words)
    texts = list(publisher)
    if args.sentences_out:
        args.sentences_out.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
        print(f"{len(texts)} sentences -> {args.sentences_out}")
        return 0
    if args.bundle is None:
        p.error("--bundle is needed to speak (or give --sentences-out to list the sentences)")

    from conversion.core.paths import write_text_file
    from conversion.kokoro.text.g2p import english_g2p

    if args.phonemes:
        other_name = f"file {args.phonemes.name}"
        other = read_phonemes(args.phonemes)
        missing = [t for t in texts if t not in other]
        if missing:
            p.error(f"--phonemes lacks {len(missing)} sentences, e.g. {missing[0]!r}")
    else:
        other_name = "python --fallback rules"
        rules = english_g2p("rules")
        other = {t: rules(t)[0] for t in texts}

    def write(rows: list[dict[str, str]]) -> None:
        doc = summary(rows, other_name, args.bundle)
        if args.json_path:
            write_text_file(args.json_path, json.dumps(doc, ensure_ascii=False, indent=1) + "\n")

    rows = speak_both(args.bundle, texts, publisher, other, write)
    doc = summary(rows, other_name, args.bundle)
    print(
        f"{len(rows)} sentences, {doc['identical_phonemes']} with identical phonemes: WER "
        f"publisher (espeak) {doc['wer_publisher']:.3f}, {other_name} {doc['wer_other']:.3f} "
        f"(difference {doc['wer_difference']:+.3f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
