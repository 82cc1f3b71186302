"""Edge strings for the tokenizer port, drawn by a seeded generator (deterministic).

Fragments that exercise each tokenizer rule (URLs and e-mails for ``url_match``; contractions,
abbreviations and emoticons for the special cases; currency, units, quotes, brackets and
ellipses for prefixes and suffixes; hyphens, slashes and operators for infixes; non-Latin
scripts, combining marks and odd whitespace), joined by the separators spaCy treats
differently (one space, runs of spaces, tabs, newlines, no-break space, nothing).
"""

from __future__ import annotations

import random

SEED = 31
COUNT = 1500

FIXED = [
    "",
    " ",
    "  ",
    " a",
    "a ",
    "a  b",
    "\t",
    "\n\n",
    " \n ",
    "a\tb",
    "a \t b",
    "  lead",
    "trail  ",
]

FRAGMENTS = [
    "https://example.com/a?b=1&c=2",
    "http://127.0.0.1:8080/x",
    "www.google.com",
    "example.org",
    "ftp://files.example.net/pub",
    "john.doe@example.com",
    "@user",
    "#hashtag",
    "😀",
    "👍🏽",
    "🇺🇸",
    ":)",
    ":-(",
    "<3",
    "(:",
    "^_^",
    "¯\\_(ツ)_/¯",
    "well-known",
    "--",
    "—",
    "–",
    "a-b-c",
    "1-2",
    "state-of-the-art",
    "e-mail",
    "3-4pm",
    "'hello'",
    '"hi"',
    "“quoted”",
    "‘single’",
    "rock 'n' roll",
    "'90s",
    "''",
    "``",
    "„low“",
    "can't",
    "Can't",
    "CAN'T",
    "can’t",
    "won't",
    "don't",
    "gonna",
    "Gonna",
    "gotta",
    "wanna",
    "y'all",
    "I'm",
    "it's",
    "It’s",
    "we'll",
    "they'd",
    "'cause",
    "ain't",
    "shouldn't've",
    "U.S.",
    "U.S",
    "e.g.",
    "i.e.",
    "a.m.",
    "p.m.",
    "5p.m.",
    "Dr.",
    "Mr.",
    "Mrs.",
    "St.",
    "etc.",
    "Jan.",
    "vs.",
    "No.",
    "Inc.",
    "$5.50",
    "€10",
    "£3",
    "US$20",
    "5$",
    "10km",
    "5kg",
    "100%",
    "3.14",
    "1,000,000",
    "20°C",
    "10°F.",
    "5'11\"",
    "20:30",
    "2024-01-01",
    "1/2",
    "a/b",
    "and/or",
    "2+2",
    "3*4",
    "x^2",
    "(hello)",
    "[x]",
    "{y}",
    "<tag>",
    "...",
    "…",
    "?!",
    "!!!",
    "C++",
    "O'Neill",
    "o'clock",
    "naïve",
    "café",
    "Straße",
    "e\u0301",
    "ﬁne",
    "x²",
    "Ελληνικά",
    "Русский",
    "中文字符",
    "日本語です。",
    "한국어",
    "العربية",
    "עברית",
    "हिन्दी",
    "'s",
    "’s",
    "n't",
    ".",
    ",",
    ";",
    "Hello",
    "world",
    "the",
    "end.",
    "word,",
    "(a)",
    "a:b",
    "a=b",
    "a<b",
    "ok?",
    "¿qué?",
    "¡sí!",
]
PREFIXES = ["", "", "", "(", '"', "“", "'", "[", "$", "...", "¿"]
SUFFIXES = ["", "", "", ")", '"', "”", "'", ".", ",", "!", "?", "...", ":", ";", "'s", "%", "km"]
# Single characters where Python's re and ICU could read a class or an escape differently:
# punctuation and symbols of every kind, digits of other scripts, combining marks, emoji
# pieces (ZWJ, skin tone, variation selector, regional indicators), letters beyond the BMP,
# and whitespace Python's str.isspace knows (\x0b, \x1c, \x85, \u2028, \u3000).
CHARACTERS = (
    "aZé9_-.,:;!?'\"()[]{}<>/\\|@#$%^&*+=~`§°²½€£¥₹"
    "‘’“”«»„‹›…—–‐−·•′″"
    "ÆßœſǅΣσςДжא٣١۴߂३৩๓。、？！「」（）０Ａｚ"
    "\u0301\u0308\u200d\u200b\u00ad\ufe0f\U0001f3fd\U0001f1fa\U0001f1f8\U0001f600"
    "\U0001d400\U00020000\U0001f4a9"
    " \t\n\x0b\x0c\r\x1c\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000"
)
CHARACTER_STRINGS = 1000

SEPARATORS = [" ", " ", " ", " ", "  ", "   ", "\t", "\n", " \n ", "", "\u00a0", "\r\n"]


def fuzz_strings(count: int = COUNT, seed: int = SEED) -> list[str]:
    """``count`` fragment strings, then CHARACTER_STRINGS strings of random characters."""
    r = random.Random(seed)
    out = list(FIXED)
    while len(out) < count:
        parts = []
        for _ in range(r.randint(1, 6)):
            parts.append(r.choice(PREFIXES) + r.choice(FRAGMENTS) + r.choice(SUFFIXES))
            parts.append(r.choice(SEPARATORS))
        if r.random() < 0.7:
            parts.pop()
        out.append("".join(parts))
    for _ in range(CHARACTER_STRINGS):
        out.append("".join(r.choice(CHARACTERS) for _ in range(r.randint(1, 12))))
    return out
