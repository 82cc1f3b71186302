"""spaCy's English tokenizer (misaki's ``en_core_web_sm``) as data for the Swift port."""

from .writer import FORMAT, JSON_NAME, write_tokenizer

__all__ = ["FORMAT", "JSON_NAME", "write_tokenizer"]
