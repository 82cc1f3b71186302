"""Kokoro's shippable out-of-vocabulary fallback: letter-to-sound rules learned from misaki's
own lexicons (``rules.py`` says why and how), in place of misaki's espeak-ng."""

from conversion.kokoro.fallback.rules import LetterRules, letter_rules, write_fallback

__all__ = ["LetterRules", "letter_rules", "write_fallback"]
