"""Text clean-up before G2P: keep what misaki understands, remove what only confuses it.

Deliberately light: misaki already expands numbers, currencies, dates and abbreviations
and maps straight quotes to curly ones, and doing any of that here would diverge from the
publisher's pipeline. This only makes the text well-formed: NFC composition, paragraphs at
newlines (the publisher's ``KPipeline`` also splits at ``\\n+``), one space for any run of
other whitespace, and no control or invisible format characters (zero-width spaces, BOMs,
bidi marks), which misaki would otherwise turn into empty or unknown tokens.
"""

from __future__ import annotations

import re
import unicodedata

_SPACES = re.compile(r"[^\S\n]+")
_NEWLINES = re.compile(r"\n+")


def _visible(ch: str) -> bool:
    """False for control (Cc, newline aside) and format (Cf) characters."""
    if ch == "\n":
        return True
    return unicodedata.category(ch) not in ("Cc", "Cf") or ch.isspace()


def normalize_text(text: str) -> str:
    """NFC text whose paragraphs are separated by single newlines, each stripped, with no
    empty paragraphs, single spaces, and no control or format characters."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    # Unicode line/paragraph separators and vertical tabs end paragraphs like newlines.
    text = re.sub(r"[\u2028\u2029\v\f\x85]", "\n", text)
    text = "".join(ch for ch in text if _visible(ch))
    text = _SPACES.sub(" ", text)
    lines = (line.strip() for line in _NEWLINES.split(text))
    return "\n".join(line for line in lines if line)


def paragraphs(text: str) -> list[str]:
    """The normalised text's paragraphs (never empty strings)."""
    normalized = normalize_text(text)
    return normalized.split("\n") if normalized else []
