"""Relabelled copies of training examples: the blocks' logos or digits permuted, the instruction's names rewritten.

Which block carries which logo or digit is arbitrary, but each training board is seen with one labelling only,
so a learner can memorise where "the Toyota block" stands on that board instead of finding it in the picture
(our networks place the goal 0.65 block lengths from the truth on training steps and 2.9 on new ones). A
permutation ``p`` moves block ``i``'s place to block ``p[i]``, which is drawn with ``p[i]``'s logo or digit, and
every name in the instruction is rewritten the same way: the same moves on a board the learner has not seen.

Names are found with a lexicon of the corpus's spellings (logos) or as numbers 1..n (digits); numbers that count
("2 spaces", "3 block lengths", "1/2") are kept. An instruction holding a word that might name a block but is
not in the lexicon (a misspelt or invented brand: "plunger", "bird", "heinekin") is not relabelled at all, so
that no copy points at the wrong block; that skips 8 % of the logo instructions. Digit instructions that name a
block in words ("block five") are skipped too (1 %).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

import numpy as np

from blocks.corpus.download import LOGO_BRANDS
from blocks.corpus.loader import Example
from blocks.corpus.text import tokenize
from blocks.world.task import Task

# Each logo's name as the corpus writes it (regular expressions over lower-cased words; spaces, hyphens or
# nothing between the parts of a two-word name) and the name a relabelled instruction uses for it.
_LOGO_NAMES: dict[str, tuple[str, str]] = {
    "adidas": ("adidas", r"adidas|adidias|addidas"),
    "bmw": ("bmw", r"bmw"),
    "burgerking": ("burger king", r"burger[\s-]*king|burgerking"),
    "cocacola": ("coca cola", r"coca[\s-]*cola|cocacola|coke|coca|cola"),
    "esso": ("esso", r"esso"),
    "heineken": ("heineken", r"heineken"),
    "hp": ("hp", r"hp"),
    "mcdonalds": ("mcdonalds", r"mc\s?donald'?s|mcdonald"),
    "mercedesbenz": ("mercedes benz", r"mercedes[\s-]*benz|mercedes|mercedez|benz"),
    "nvidia": ("nvidia", r"nvidia|nividia"),
    "pepsi": ("pepsi", r"pepsi"),
    "shell": ("shell", r"shell"),
    "sri": ("sri", r"sri"),
    "starbucks": ("starbucks", r"starbucks|starbuck'?s?"),
    "stella": ("stella artois", r"stella[\s-]*artois|stella|artois"),
    "target": ("target", r"target"),
    "texaco": ("texaco", r"texaco"),
    "toyota": ("toyota", r"toyota"),
    "twitter": ("twitter", r"twitter"),
    "ups": ("ups", r"ups"),
}
if tuple(_LOGO_NAMES) != LOGO_BRANDS:  # block i carries LOGO_BRANDS[i]
    raise ImportError("blocks.corpus.relabel's lexicon is out of step with LOGO_BRANDS")

# Words of logo instructions that appear in no digit instruction and yet name no block.
_LOGO_ONLY_WORDS = frozenset(
    {"logo", "logos", "logo's", "symbol", "symbols", "get", "remove", "unit", "units"}
)

_NUMBER_WORD = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
    r"|seventeen|eighteen|nineteen|twenty)"
)
_BLOCK_WORD = r"(?:block|box|cube|square)"
_UNIT_WORD = r"(?:space|spot|place|length|width|unit|step|time|row|column|sapce|worth|inch|inche)e?s?"
# A number that counts rather than names: "2 spaces", "3 block lengths", "1 block's worth", "2 blocks of",
# "1 cube-space"; or part of "1/2", "1.5", "2nd".
_COUNT_AFTER = re.compile(
    rf"\s*-?\s*(?:{_UNIT_WORD}\b|{_BLOCK_WORD}(?:es|s)\b|{_BLOCK_WORD}'s|{_BLOCK_WORD}\s*-?\s*{_UNIT_WORD}\b)"
    r"|[/.]\d|st\b|nd\b|rd\b|th\b"
)
_NUMBER = re.compile(r"(?<![A-Za-z0-9/.])\d+(?![A-Za-z0-9])")
_WORD_AFTER_BLOCK = re.compile(rf"\b{_BLOCK_WORD}(?:es|s)?\s+{_NUMBER_WORD}\b")


@cache
def _logo_pattern() -> re.Pattern:
    alternatives = "|".join(f"(?P<{brand}>{forms})" for brand, (_, forms) in _LOGO_NAMES.items())
    return re.compile(rf"(?<![a-z0-9])(?:{alternatives})(?P<possessive>'s|s')?(?![a-z0-9])")


def digit_words(examples: Sequence[Example]) -> frozenset[str]:
    """Every word of the digit boards' instructions: such a word never names a logo."""
    return frozenset(t for x in examples if x.decoration == "digit" for t in x.tokens)


def _rewrite_logos(text: str, permutation: Sequence[int], known_words: frozenset[str]) -> str | None:
    lowered = text.lower()
    pattern = _logo_pattern()
    # every word outside the recognised names must be one that names no block
    if any(t not in known_words and t not in _LOGO_ONLY_WORDS for t in tokenize(pattern.sub(" ", lowered))):
        return None
    pieces, end = [], 0
    for match in pattern.finditer(lowered):
        brand = next(name for name, value in match.groupdict().items() if value and name != "possessive")
        block = LOGO_BRANDS.index(brand)
        if block < len(permutation):  # a logo that is not on this board keeps its name
            block = permutation[block]
        pieces += [
            text[end : match.start()],
            _LOGO_NAMES[LOGO_BRANDS[block]][0],
            match.group("possessive") or "",
        ]
        end = match.end()
    return "".join(pieces) + text[end:]


def _rewrite_digits(text: str, permutation: Sequence[int]) -> str | None:
    lowered = text.lower()
    if _WORD_AFTER_BLOCK.search(lowered):
        return None
    n = len(permutation)

    def rename(match: re.Match) -> str:
        number = int(match.group(0))
        if not 1 <= number <= n or _COUNT_AFTER.match(lowered, match.end()):
            return match.group(0)
        return str(permutation[number - 1] + 1)

    return _NUMBER.sub(rename, text)


def relabel_words(
    text: str, decoration: str, permutation: Sequence[int], known_words: frozenset[str]
) -> str | None:
    """``text`` with each name of block ``i`` replaced by block ``permutation[i]``'s (logos: the name's usual
    spelling, possessive kept); None when a logo instruction has a word that is neither a name nor one of
    ``known_words`` (words that name no block, see :func:`digit_words`)."""
    if decoration == "logo":
        return _rewrite_logos(text, permutation, known_words)
    return _rewrite_digits(text, permutation)


def relabel_task(task: Task, permutation: Sequence[int]) -> Task:
    """``task`` with block ``i``'s start and goal given to block ``permutation[i]``."""
    order = np.argsort(permutation)  # new block j was old block order[j]
    return Task(task.start[order], task.goal[order], task.decoration)


def relabel_example(
    example: Example, permutation: Sequence[int], known_words: frozenset[str], tag: str = "relabel"
) -> Example | None:
    """The relabelled copy of ``example`` (uid ending in ``#<tag>``), or None where its names are uncertain."""
    permutation = np.asarray(permutation)
    if sorted(permutation.tolist()) != list(range(example.task.num_blocks)):
        raise ValueError(
            f"permutation must reorder the {example.task.num_blocks} blocks, got {permutation.tolist()}"
        )
    instruction = relabel_words(example.instruction, example.decoration, permutation.tolist(), known_words)
    if instruction is None:
        return None
    return example.variant(tag, instruction, relabel_task(example.task, permutation))


PERMUTATIONS = ("random", "shifted", "reversed")


def draw_permutation(n: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    """A permutation of ``n`` labels: ``random``; ``shifted`` (i -> i + k mod n, k drawn from 1..n-1) or
    ``reversed`` (i -> n - 1 - i), the two that keep which labels are neighbours (but for one pair, shifted)."""
    if kind == "random":
        return rng.permutation(n)
    if kind == "shifted":
        return (np.arange(n) + rng.integers(1, n)) % n if n > 1 else np.arange(n)
    if kind == "reversed":
        return np.arange(n)[::-1].copy()
    raise ValueError(f"the permutation must be one of {list(PERMUTATIONS)}, got {kind!r}")


def with_relabels(
    examples: Sequence[Example],
    copies: int,
    seed: int = 0,
    known_words: frozenset[str] | None = None,
    permutation: str = "random",
) -> list[Example]:
    """The examples, then ``copies`` relabelled copies of each (a fresh ``permutation`` per copy, see
    :func:`draw_permutation`, drawn from ``seed`` and the uid, so the same on every run and rank); an example whose
    names are uncertain gets no copies. ``known_words`` defaults to the digit instructions' words among
    ``examples``; pass the whole corpus's for a small subset."""
    if copies < 0:
        raise ValueError(f"data.relabelled_copies must be 0 or more, got {copies}")
    draw_permutation(2, permutation, np.random.default_rng(0))  # an unknown kind fails before any work
    out = list(examples)
    known_words = digit_words(examples) if known_words is None else known_words
    for k in range(copies):
        for x in examples:
            rng = np.random.default_rng([seed, k, *x.uid.encode()])
            order = draw_permutation(x.task.num_blocks, permutation, rng)
            copy = relabel_example(x, order, known_words, f"relabel-{k}")
            if copy is not None:
                out.append(copy)
    return out
