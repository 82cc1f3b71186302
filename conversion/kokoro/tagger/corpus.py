"""The tagger's English test corpus, made offline and deterministically.

Prose: the sentences of Python's own ``pydoc_data.topics`` (its prose paragraphs, topics in
name order). Generated: sentences with numbers, money, dates, ordinals, percentages, names,
abbreviations, heteronyms in both readings, and contractions with straight and curly
apostrophes, drawn from templates by a seeded generator. Every fifth sentence (index % 5 == 4)
is held out: nothing is tuned on it, and its agreement is reported on its own.
"""

from __future__ import annotations

import random

from ..text import prose

PROSE_SENTENCES = 1800
GENERATED_SENTENCES = 700
SEED = 31


def prose_sentences(limit: int = PROSE_SENTENCES) -> list[str]:
    return prose.prose_sentences(limit, min_words=4)


NAMES = [
    "Alice",
    "Dr. Smith",
    "Mr. O'Brien",
    "Mrs. García",
    "Prof. Chen",
    "Sam",
    "Ms. Lee",
    "St. John",
]
PLACES = ["New York", "the U.S.", "Washington, D.C.", "London", "the U.K.", "Paris", "Mt. Fuji"]
MONTHS = [
    "Jan.",
    "February",
    "March",
    "Apr.",
    "May",
    "June",
    "July",
    "Aug.",
    "Sept.",
    "October",
    "Nov.",
    "December",
]
MONEY = ["$5", "$3.50", "$1,200", "£20", "€7.99", "$0.99", "$2 million", "¥500", "$45.00"]
ORDINALS = ["1st", "2nd", "3rd", "4th", "21st", "42nd", "103rd", "11th"]
# (sentence with {} for the heteronym's sentence) pairs: the two readings of each word.
HETERONYMS = [
    ("I will read the report tomorrow.", "She read the report yesterday."),
    ("Lead pipes are dangerous.", "They lead the team to victory."),
    ("We live in {place}.", "The band played a live show."),
    ("Please record the meeting.", "That was a record year."),
    ("He gave me a present.", "She will present the results."),
    ("All members were present.", "Close the door, please."),
    ("The store is close to home.", "Do not object to the plan."),
    ("That object is heavy.", "Wind the clock before bed."),
    ("The wind was strong.", "A tear ran down her cheek."),
    ("Do not tear the paper.", "He plays the bass guitar."),
    ("We caught a bass in the lake.", "Wait a minute."),
    ("The difference is minute.", "What is the use of this?"),
    ("We use it every day.", "They refuse to pay."),
    ("Take out the refuse.", "Does the project progress?"),
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
]


def _templates(r: random.Random) -> list[str]:
    name, other = r.sample(NAMES, 2)
    place = r.choice(PLACES)
    month = r.choice(MONTHS)
    day = r.randint(1, 28)
    year = r.choice([1066, 1492, 1776, 1899, 1905, 1984, 1999, 2000, 2008, 2024, 2031])
    n = r.randint(2, 9999)
    pct = r.choice(["5%", "12.5%", "99%", "0.1%", "-3%"])
    money = r.choice(MONEY)
    ordinal = r.choice(ORDINALS)
    a, b = r.choice(HETERONYMS)
    c = r.choice(CONTRACTIONS)
    people, runners = r.randint(2, 40), r.randint(12, 500)
    hour, minute = r.randint(1, 12), r.choice(["00", "15", "30", "45"])
    meridian = r.choice(["a.m.", "p.m."])
    phone = f"{r.randint(200, 999)}-{r.randint(100, 999)}-{r.randint(1000, 9999)}"
    decade, degrees = r.choice(["1920s", "1960s", "80s", "1990s"]), -r.randint(1, 30)
    chapter, volume = r.randint(1, 30), r.randint(1, 9)
    first, last = r.randint(1, 99), r.randint(100, 400)
    return [
        f"{name} met {other} in {place} on {month} {day}, {year}.",
        f"The ticket cost {money}, and {people} people bought one.",
        f"Sales rose by {pct} in {year}, to {n:,} units.",
        f"{name} finished {ordinal} out of {runners} runners.",
        a.format(place=place),
        b.format(place=place),
        f"{c} {name} said it was {hour}:{minute} {meridian}.",
        f"Call {phone} before {month} {ordinal}, e.g. on a Monday.",
        f"In the {decade}, the temperature was {degrees} degrees.",
        f"Chapter {chapter} of vol. {volume} covers pages {first}–{last}, etc.",
    ]


def generated_sentences(limit: int = GENERATED_SENTENCES, seed: int = SEED) -> list[str]:
    r = random.Random(seed)
    out: list[str] = []
    while len(out) < limit:
        out.extend(_templates(r))
    return out[:limit]


def corpus() -> list[str]:
    """Prose then generated sentences, interleaved so both are in every fifth."""
    prose, generated = prose_sentences(), generated_sentences()
    out: list[str] = []
    k = 0
    for i, s in enumerate(prose):
        out.append(s)
        if i % 3 == 2 and k < len(generated):
            out.append(generated[k])
            k += 1
    return out + generated[k:]
