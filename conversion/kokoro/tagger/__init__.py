"""misaki's part-of-speech tagger (spaCy ``en_core_web_sm``'s tok2vec + tagger) as plain arrays.

misaki 0.9.4 reads ``token.tag_`` from ``en_core_web_sm`` loaded with only ``tok2vec`` and
``tagger`` enabled. :func:`write_tagger` writes those two components' weights as raw
little-endian float32 files plus one ``tagger.json`` (shapes, hash seeds, attribute order,
labels, the NORM attribute's lookup tables): what VoxportText's ``PartOfSpeechTagger`` reads.
"""

from .writer import write_tagger

__all__ = ["write_tagger"]
