"""Text to utterance-sized chunks of phoneme ids: what the predictor graph takes in.

Each paragraph (newline-separated, as in the publisher's ``KPipeline``) goes through the G2P
whole, so misaki sees every word's context, and its tokens are then grouped:

1. one chunk per sentence (after ``. ! ? …``, with closing quotes and brackets kept);
2. a sentence that does not fit is split at clauses (after ``, ; : —``), packing as many
   consecutive clauses per chunk as fit;
3. a clause that still does not fit is packed word by word;
4. a single word longer than the limit (only garbage input does that) is cut by symbol.

"Fits" means the chunk's phoneme string plus the two pads is at most ``max_ids`` long.
That bounds the ids (never more than the phoneme symbols) and the voice-pack row
``len(phonemes) - 1`` (< 510) at once, so no chunk meets the publisher's 510-phoneme limits.

Unlike ``KPipeline``, which packs whole paragraphs up to 510 phoneme symbols, sentences are
never merged: shorter utterances use smaller token buckets, and the join adds the pause.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from conversion.core.errors import UserError

from .g2p import G2P, Token, english_g2p
from .ids import MAX_IDS, has_speech, load_vocab, phonemes_to_ids, wrap_ids
from .normalize import paragraphs

SENTENCE_ENDS = frozenset(".!?…")
CLAUSE_ENDS = frozenset(",;:—")
# Closing marks stay with the sentence or clause they close.
CLOSERS = frozenset(")”»'’")


class NothingToSayError(UserError):
    """The text has no pronounceable word."""


class UnpronouncedWordWarning(UserWarning):
    """The G2P had no pronunciation for a word; it is skipped."""


@dataclass(frozen=True)
class WordToken:
    """A G2P token as the chunk keeps it (misaki's ``MToken`` reduced to what timing reads)."""

    text: str
    phonemes: str | None
    whitespace: str


@dataclass
class Chunk:
    """One utterance: its text, the phoneme string the model reads, and its ids.

    ``ids`` include the two pads. ``phonemes`` is the string the publisher's ``KModel``
    would receive (symbols outside the vocabulary included), so ``len(phonemes)`` is the
    publisher's voice-pack index + 1 (see ``voices.ref_s_for``). ``tokens`` are the G2P
    tokens whose phonemes make ``phonemes`` (what word timings are counted over); empty for
    a chunk made from phonemes, or cut out of one over-long word.
    """

    text: str
    phonemes: str
    ids: list[int]
    tokens: tuple[WordToken, ...] = ()

    @property
    def n_phonemes(self) -> int:
        return len(self.phonemes)


def tokens_phonemes(tokens: Sequence[Token]) -> str:
    """The phoneme string of consecutive tokens: each token's phonemes, a space where the
    text had whitespace, trimmed (the publisher's joining rule)."""
    return "".join((t.phonemes or "") + (" " if t.whitespace else "") for t in tokens).strip()


def tokens_text(tokens: Sequence[Token]) -> str:
    return "".join(t.text + t.whitespace for t in tokens).strip()


def _made_of(token: Token, symbols: frozenset[str]) -> bool:
    p = (token.phonemes or "").strip()
    return bool(p) and all(c in symbols for c in p)


def split_after(tokens: Sequence[Token], ends: frozenset[str]) -> list[list[Token]]:
    """Groups of tokens, each closed after a run of end marks and closing marks."""
    groups: list[list[Token]] = []
    current: list[Token] = []
    in_tail = False  # the group has reached its end marks; only closers may follow
    for i, t in enumerate(tokens):
        current.append(t)
        if _made_of(t, ends):
            in_tail = True
        elif not (in_tail and _made_of(t, CLOSERS)):
            in_tail = False
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if in_tail and (nxt is None or not (_made_of(nxt, ends) or _made_of(nxt, CLOSERS))):
            groups.append(current)
            current, in_tail = [], False
    if current:
        groups.append(current)
    return groups


def _words(tokens: Sequence[Token]) -> list[list[Token]]:
    return [[t] for t in tokens]


# Each level splits a too-long group finer; after the last, a single token is cut by symbol.
_LEVELS: tuple[Callable[[Sequence[Token]], list[list[Token]]], ...] = (
    lambda ts: split_after(ts, CLAUSE_ENDS),
    _words,
)


def _fits(tokens: Sequence[Token], budget: int) -> bool:
    return len(tokens_phonemes(tokens)) <= budget


# A piece of a paragraph: its text, its phonemes, and the tokens they come from.
_Piece = tuple[str, str, tuple[WordToken, ...]]


def _piece(tokens: Sequence[Token]) -> _Piece:
    kept = tuple(WordToken(t.text, t.phonemes, t.whitespace) for t in tokens)
    return tokens_text(tokens), tokens_phonemes(tokens), kept


def _pack(groups: list[list[Token]], budget: int, level: int) -> list[_Piece]:
    """Pieces of consecutive groups packed greedily under ``budget``."""
    pieces: list[_Piece] = []
    current: list[Token] = []
    for group in groups:
        if _fits(current + group, budget):
            current = current + group
            continue
        if current:
            pieces.append(_piece(current))
        current = []
        if _fits(group, budget):
            current = list(group)
        else:
            pieces.extend(_split_long(group, budget, level))
    if current:
        pieces.append(_piece(current))
    return pieces


def _split_long(group: list[Token], budget: int, level: int) -> list[_Piece]:
    if level < len(_LEVELS):
        finer = _LEVELS[level](group)
        if len(finer) > 1:
            return _pack(finer, budget, level + 1)
        return _split_long(group, budget, level + 1)
    # One token longer than a whole utterance: cut its phonemes; the text repeats, and no
    # token spans a cut piece, so these are not timed.
    text, ps = tokens_text(group), tokens_phonemes(group)
    return [(text, ps[i : i + budget].strip(), ()) for i in range(0, len(ps), budget)]


def _warn_unpronounced(tokens: Sequence[Token]) -> None:
    missing = [t.text for t in tokens if t.phonemes is None and t.text.strip()]
    if missing:
        warnings.warn(
            f"no pronunciation for {', '.join(repr(w) for w in missing)}; skipped (check the "
            "spelling, or write the word as it sounds)",
            UnpronouncedWordWarning,
            stacklevel=3,
        )


def chunk_from_phonemes(
    phonemes: str,
    text: str = "",
    vocab: Mapping[str, int] | None = None,
    max_ids: int = MAX_IDS,
    tokens: tuple[WordToken, ...] = (),
) -> Chunk:
    """A chunk from a ready phoneme string (as ``KPipeline.generate_from_tokens(str)``)."""
    if len(phonemes) + 2 > max_ids:
        raise UserError(
            f"phoneme string of {len(phonemes)} symbols is too long for one utterance (at "
            f"most {max_ids - 2}): pass text instead, which is split into sentences"
        )
    return Chunk(text, phonemes, wrap_ids(phonemes_to_ids(phonemes, vocab)), tokens)


def text_to_chunks(
    text: str,
    g2p: G2P | None = None,
    max_ids: int = MAX_IDS,
    vocab: Mapping[str, int] | None = None,
) -> list[Chunk]:
    """Normalise, phonemise and split ``text`` into chunks of at most ``max_ids`` ids (pads
    included). ``g2p`` defaults to :func:`english_g2p`; chunks with nothing to say (a lone
    "…") are left out. Raises :class:`NothingToSayError` when no chunk is left."""
    if max_ids < 3:
        raise ValueError(f"max_ids must leave room for a phoneme between the pads: {max_ids}")
    paras = paragraphs(text)
    if not paras:
        raise NothingToSayError("nothing to say: the text is empty; give some words to speak")
    g2p = english_g2p() if g2p is None else g2p
    vocab = load_vocab() if vocab is None else vocab
    budget = max_ids - 2
    chunks: list[Chunk] = []
    for para in paras:
        _, tokens = g2p(para)
        _warn_unpronounced(tokens)
        for sentence in split_after(tokens, SENTENCE_ENDS):
            for piece_text, ps, kept in _pack([sentence], budget, 0):
                chunk = chunk_from_phonemes(ps, piece_text, vocab, max_ids, kept)
                if has_speech(chunk.ids, vocab):
                    chunks.append(chunk)
    if not chunks:
        shown = text.strip()
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise NothingToSayError(
            f"nothing to say: {shown!r} has no pronounceable word; give words, not only "
            "punctuation or symbols"
        )
    return chunks
