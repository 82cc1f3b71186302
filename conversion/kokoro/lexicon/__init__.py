"""misaki 0.9.4's American-English lexicons as files VoxportText's ``MisakiLexicon`` reads.

:func:`write_lexicon` writes misaki's gold and silver dictionaries as misaki packages them, one
text file each; the reader grows them as ``misaki.en.Lexicon(british=False)`` does
(``grow_dictionary``). The Kokoro export writes them into ``g2p/lexicon/`` (``g2p_files``).
"""

from .writer import write_lexicon

__all__ = ["write_lexicon"]
