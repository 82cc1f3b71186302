"""misaki 0.9.4's American-English lexicons as files VoxportText's ``MisakiLexicon`` reads.

:func:`write_lexicon` writes misaki's gold and silver dictionaries exactly as
``misaki.en.Lexicon(british=False)`` holds them (after ``grow_dictionary``), one text file
each; not yet part of the Kokoro export.
"""

from .writer import write_lexicon

__all__ = ["write_lexicon"]
