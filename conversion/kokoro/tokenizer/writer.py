"""Write ``tokenizer.json``: spaCy's tokenizer settings, verbatim, for the Swift port.

The regexes are the compiled patterns' own Python source strings (the Swift side compiles them
with ICU after the one syntax change it needs); the special cases are ``Tokenizer.rules``, every
piece as ``[ORTH, NORM or null]``. The bytes depend only on the installed pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spacy.attrs import NORM, ORTH

from ..tagger.pipeline import tagger_pipeline

FORMAT = "voxport-spacy-tokenizer/1"
JSON_NAME = "tokenizer.json"


def _pattern(bound_method: Any) -> str | None:
    """The regex source behind ``prefix_search`` and the like (a bound ``re.Pattern`` method)."""
    if bound_method is None:
        return None
    pattern = bound_method.__self__
    # Python 3 str patterns are Unicode-aware anyway (flag 32 = re.UNICODE); any other flag
    # (IGNORECASE, VERBOSE...) would change the meaning of the source string.
    if pattern.flags & ~32:
        raise ValueError(f"pattern flags {pattern.flags} are not exported: only re.UNICODE is")
    return pattern.pattern


def _pieces(substrings: list[dict[int, str]]) -> list[list[str | None]]:
    extra = {k for s in substrings for k in s} - {ORTH, NORM}
    if extra:
        raise ValueError(f"special case sets attributes {extra} beyond ORTH and NORM")
    return [[s[ORTH], s.get(NORM)] for s in substrings]


def description(nlp: Any) -> dict[str, Any]:
    tok = nlp.tokenizer
    meta = nlp.meta
    return {
        "format": FORMAT,
        "source": {"pipeline": f"{meta['lang']}_{meta['name']}", "version": meta["version"]},
        "prefix": _pattern(tok.prefix_search),
        "suffix": _pattern(tok.suffix_search),
        "infix": _pattern(tok.infix_finditer),
        "token_match": _pattern(tok.token_match),
        "url_match": _pattern(tok.url_match),
        "faster_heuristics": bool(tok.faster_heuristics),
        "rules": {k: _pieces(v) for k, v in sorted(tok.rules.items())},
    }


def write_tokenizer(dest: Path, nlp: Any = None) -> list[Path]:
    """Write the tokenizer of ``nlp`` (default: misaki's ``en_core_web_sm`` pipeline) into
    ``dest`` (created if missing); returns the files written."""
    nlp = tagger_pipeline() if nlp is None else nlp
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / JSON_NAME
    text = json.dumps(description(nlp), indent=1, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return [path]
