"""The lexicon's English test corpus, made offline and deterministically.

Prose: sentences of Python's own ``pydoc_data.topics`` (prose paragraphs, topics in name
order). Generated: seeded templates with names, abbreviations, heteronyms in both readings,
contractions with straight and curly apostrophes, -s/-ed/-ing forms, capitalised unknowns,
hyphenated and ALL-CAPS words, misaki's ``[word](stress)`` marks, and some numbers and money
(misaki sends those to its number reader, which the Swift lexicon leaves out; they are
recorded to check it says so). Every fifth sentence (index % 5 == 4) is held out of
development and reported on its own.
"""

from __future__ import annotations

import random
import re

from ..text import prose

PROSE_SENTENCES = 2400
GENERATED_SENTENCES = 1600
WORD_SENTENCES = 1500
SEED = 3104


def prose_sentences(limit: int = PROSE_SENTENCES) -> list[str]:
    return prose.prose_sentences(limit, min_words=3)


NAMES = [
    "Alice",
    "Dr. Smith",
    "Mr. O'Brien",
    "Mrs. García",
    "Prof. Chen",
    "Ms. Lee",
    "St. John",
    "Zorblatt",
    "Quixley",
    "Brannigan",
    "Ngozi",
    "Siobhan",
    "Vladislav",
    "McAllister",
]
PLACES = ["New York", "the U.S.", "Washington, D.C.", "London", "the U.K.", "Mt. Fuji", "Frobtown"]
ABBREVIATIONS = [
    "e.g.",
    "i.e.",
    "etc.",
    "vs.",
    "vs",
    "approx.",
    "Jr.",
    "Inc.",
    "a.m.",
    "p.m.",
    "U.N.",
    "NASA",
    "FBI",
    "AM",
    "PM",
    "TV",
    "CEO",
    "Esq.",
    "Ave.",
    "No.",
]
HETERONYMS = [
    ("I will read the report tomorrow.", "She read the report yesterday."),
    ("Lead pipes are dangerous.", "They lead the team to victory."),
    ("We live in {place}.", "The band played a live show."),
    ("Please record the meeting.", "That was a record year."),
    ("He gave me a present.", "She will present the results."),
    ("That object is heavy.", "Do not object to the plan."),
    ("What is the use of this?", "We use it every day."),
    ("I used to read a lot.", "They used the old tools."),
    ("The wind was strong.", "Wind the clock before bed."),
    ("Take out the refuse.", "They refuse to pay."),
]
CONTRACTIONS = [
    "I don't know.",
    "I don’t know.",
    "It's late.",
    "It’s late.",
    "We're here.",
    "We’re here.",
    "She'll come.",
    "She’ll come.",
    "They've gone.",
    "They’ve gone.",
    "You can't stop.",
    "You can’t stop.",
    "He won't wait.",
    "He won’t wait.",
    "I'd rather not.",
    "I’d rather not.",
    "That's John's car.",
    "That’s John’s car.",
    "We'd've helped.",
    "Y'all should go.",
    "I'm gonna try.",
    "She isn't ready.",
    "She isn’t ready.",
    "Let's go.",
    "Let’s go.",
    "The dogs' bowls are empty.",
    "The boss’s office is closed.",
    "'Tis the season.",
]
VERBS = [
    "walk",
    "jump",
    "need",
    "want",
    "stop",
    "plan",
    "hope",
    "bake",
    "fix",
    "carry",
    "try",
    "admit",
    "visit",
    "panic",
    "edit",
    "frolic",
    "gallop",
    "snorkel",
    "blorf",
    "zazzle",
]
NOUNS = [
    "box",
    "church",
    "judge",
    "city",
    "knife",
    "wolf",
    "potato",
    "kiss",
    "wish",
    "bus",
    "thesis",
    "bench",
    "glimp",
    "frabble",
    "quizz",
]
ADJECTIVES = [
    "well-known",
    "state-of-the-art",
    "self-driving",
    "long-term",
    "old-fashioned",
    "blue-green",
    "re-entered",
    "co-op",
    "x-ray",
    "T-shirt",
]
CAPS = [
    "URGENT",
    "WARNING",
    "PLEASE",
    "DON'T",
    "STOP",
    "READ",
    "LIVE",
    "THE",
    "A",
    "IN",
    "TO",
    "BY",
    "AN",
    "USED",
    "USB",
    "HTML",
    "SQL",
    "NATO",
    "OK",
    "IOU",
    "GIF",
    "JPEG",
    "WIFI",
]
MARKS = [
    "[read](-1)",
    "[live](+2)",
    "[Kokoro](/kˈOkəɹO/)",
    "[record](0.5)",
    "[the](-2)",
    "[present](1)",
    "[object](-0.5)",
    "[use](0)",
    "[lead](2)",
    "[a](+1)",
]
MONEY = ["$5", "$3.50", "$1,200", "£20", "€7.99", "$0.99", "$45.00", "£1", "$1"]
NUMBERS = ["3", "42", "1984", "2,500", "3.14", "1st", "22nd", "103rd", "1990s", "-7", "0.5", "100"]


def _templates(r: random.Random) -> list[str]:
    name, other = r.sample(NAMES, 2)
    place = r.choice(PLACES)
    abbr = r.choice(ABBREVIATIONS)
    a, b = r.choice(HETERONYMS)
    c = r.choice(CONTRACTIONS)
    v, v2 = r.sample(VERBS, 2)
    n = r.choice(NOUNS)
    adj = r.choice(ADJECTIVES)
    caps = r.choice(CAPS)
    mark = r.choice(MARKS)
    return [
        f"{name} met {other} in {place}, {abbr}",
        a.format(place=place),
        b.format(place=place),
        f"{c} {name} said so.",
        f"She {v}s, he {v}ed, and they are {v}ing {r.choice(['now', 'again', 'a lot'])}.",
        f"The {n}s and the {n}'s owners {v2}ed by the {adj} {n}.",
        f"{caps} {r.choice(['do', 'the', 'an', 'in'])} {caps.lower()} "
        f"{r.choice(['it', 'to', 'a'])} {abbr}",
        f"Then {name} {mark} the {n} and {v2} it.",
        f"It cost {r.choice(MONEY)} for {r.choice(NUMBERS)} {n}s in {place}.",
        f"{name.upper()} AND {other} {r.choice(['WALKED', 'READ', 'LIVED', 'USED'])} "
        f"TO {place.upper()}.",
        f"Is it {r.choice(['Quorvath', 'Blimpstein', 'Xanthe', 'Eberhardt'])}'s {adj} {n}? "
        f"I'm {v}ing it.",
    ]


def generated_sentences(limit: int = GENERATED_SENTENCES, seed: int = SEED) -> list[str]:
    r = random.Random(seed)
    out: list[str] = []
    while len(out) < limit:
        out.extend(_templates(r))
    return out[:limit]


def _lexicon_words() -> tuple[list[str], list[str]]:
    """misaki's gold words (letters, apostrophes, hyphens) in code-point order: the words with
    part-of-speech entries, and the rest."""
    from conversion.kokoro.lexicon.writer import grown_dictionary

    gold = grown_dictionary("us_gold")
    words = [w for w in sorted(gold) if re.fullmatch(r"[A-Za-z][A-Za-z'-]*", w)]
    return [w for w in words if isinstance(gold[w], dict)], [
        w for w in words if isinstance(gold[w], str)
    ]


def word_sentences(limit: int = WORD_SENTENCES, seed: int = SEED) -> list[str]:
    """Eight words drawn from misaki's gold lexicon (two with part-of-speech entries), some
    given -s/-ed/-ing, a capital, ALL CAPS or an apostrophe."""
    r = random.Random(seed + 1)
    tagged, plain = _lexicon_words()
    out = []
    for _ in range(limit):
        words = r.sample(tagged, 2) + r.sample(plain, 6)
        r.shuffle(words)
        for k, w in enumerate(words):
            roll = r.random()
            if roll < 0.12:
                words[k] = w + r.choice(["s", "ed", "ing", "es", "'s", "d"])
            elif roll < 0.2:
                words[k] = w.upper()
            elif roll < 0.28:
                words[k] = w.capitalize()
        out.append(" ".join(words) + r.choice([".", "?", "!", ",", ""]))
    return out


def corpus() -> list[str]:
    """Prose and generated sentences interleaved (one generated after every two prose), then
    the rest of the generated and the lexicon-word sentences."""
    prose, generated = prose_sentences(), generated_sentences()
    out: list[str] = []
    k = 0
    for i, s in enumerate(prose):
        out.append(s)
        if i % 2 == 1 and k < len(generated):
            out.append(generated[k])
            k += 1
    return out + generated[k:] + word_sentences()
