"""Mirrored copies of training examples: the board reflected, the instruction's direction words exchanged.

The board is symmetric about both axes (x and z in [-1.25, 1.25]) and the camera looks straight down on it, so
reflecting every block centre across x = 0 and/or z = 0 gives a valid board whose picture is the mirror image,
except that the logos and digits are still drawn the right way round. Exchanging "left"/"right" (and the like)
keeps the instruction true of the reflected board. Each training example so yields up to four; the learner
can no longer memorise one picture per instruction and has to read where the words point.

Words whose reflection is unclear ("over", "front", "back") are left as they are, and so are misspelt direction
words ("rigth"): a little label noise on the mirrored copies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

from blocks.corpus.loader import Example
from blocks.world.geometry import NUM_DIRECTIONS, STOP
from blocks.world.task import Task

MIRRORS = ("none", "x", "z", "xz")  # none: the example itself; x: left <-> right; z: up <-> down; xz: both


def _both_ways(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    table = {}
    for a, b in pairs:
        table[a], table[b] = b, a
    return table


# Reflection across x = 0: what was on the left is on the right.
_ACROSS_X = _both_ways(
    [
        ("left", "right"),
        ("lefts", "rights"),
        ("leftmost", "rightmost"),
        ("lefthand", "righthand"),
        ("leftcorner", "rightcorner"),
        ("leftof", "rightof"),
        ("west", "east"),
        ("western", "eastern"),
        ("westward", "eastward"),
        ("northwest", "northeast"),
        ("southwest", "southeast"),
    ]
)

# Reflection across z = 0: what was at the top of the picture is at the bottom.
_ACROSS_Z = _both_ways(
    [
        ("top", "bottom"),
        ("tops", "bottoms"),
        ("topmost", "bottommost"),
        ("above", "below"),
        ("up", "down"),
        ("upward", "downward"),
        ("upwards", "downwards"),
        ("upper", "lower"),
        ("uppermost", "lowermost"),
        ("highest", "lowest"),
        ("high", "low"),
        ("north", "south"),
        ("northern", "southern"),
        ("northward", "southward"),
        ("northwest", "southwest"),
        ("northeast", "southeast"),
    ]
) | {"under": "above", "underneath": "above", "beneath": "above", "atop": "below", "higher": "lower"}

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")


def check_mirrors(mirrors: Sequence[str], key: str = "data.mirrors") -> tuple[str, ...]:
    """The mirrors as a tuple, or a clear error naming the unknown or repeated ones."""
    if isinstance(mirrors, str):
        mirrors = [mirrors]
    mirrors = tuple(mirrors)
    unknown = [m for m in mirrors if m not in MIRRORS]
    if unknown or not mirrors or len(set(mirrors)) != len(mirrors):
        raise ValueError(f"{key} must be distinct values out of {list(MIRRORS)}, got {list(mirrors)}")
    return mirrors


def mirror_words(text: str, mirror: str) -> str:
    """``text`` with the direction words exchanged for ``mirror``; everything else is kept, case included."""
    tables = [t for axis, t in (("x", _ACROSS_X), ("z", _ACROSS_Z)) if axis in mirror]

    def exchange(match: re.Match) -> str:
        word = match.group(0)
        lower = word.lower()
        for table in tables:
            lower = table.get(lower, lower)
        if lower == word.lower():
            return word
        if word.isupper() and len(word) > 1:
            return lower.upper()
        return lower.capitalize() if word[0].isupper() else lower

    return _WORD.sub(exchange, text)


def mirror_task(task: Task, mirror: str) -> Task:
    """``task`` with every block centre, start and goal, reflected across the axes ``mirror`` names."""
    sign = np.array([-1.0 if "x" in mirror else 1.0, -1.0 if "z" in mirror else 1.0])
    return Task(task.start * sign, task.goal * sign, task.decoration)


def mirror_example(example: Example, mirror: str) -> Example:
    """The mirrored copy of ``example`` (itself for ``none``); its uid ends in ``#mirror-<axes>``."""
    check_mirrors([mirror])
    if mirror == "none":
        return example
    return example.variant(
        f"mirror-{mirror}", mirror_words(example.instruction, mirror), mirror_task(example.task, mirror)
    )


# Directions 0-3 are left, right, up, down in the picture (blocks.world.geometry); STOP (4) stays.
_DIRECTION_SWAPS = {"x": (0, 1), "z": (2, 3)}


def direction_permutation(mirror: str) -> np.ndarray:
    """Indices ``p`` such that ``values[..., p]`` re-orders per-direction values (5 of them, STOP last) from the
    original board's directions to the mirrored board's, and back (a reflection is its own inverse)."""
    order = np.arange(5)
    for axis, (a, b) in _DIRECTION_SWAPS.items():
        if axis in mirror:
            order[[a, b]] = order[[b, a]]
    return order


def mirror_actions(actions: np.ndarray, mirror: str) -> np.ndarray:
    """Action ids (block * 4 + direction, STOP, NONE = -1) with each move's direction reflected."""
    actions = np.asarray(actions)
    is_move = (actions >= 0) & (actions < STOP)
    reflected = (
        actions // NUM_DIRECTIONS * NUM_DIRECTIONS + direction_permutation(mirror)[actions % NUM_DIRECTIONS]
    )
    return np.where(is_move, reflected, actions)


def with_mirrors(examples: Sequence[Example], mirrors: Sequence[str]) -> list[Example]:
    """Every example in every mirror, grouped by mirror in the order given."""
    return [mirror_example(x, m) for m in check_mirrors(mirrors) for x in examples]
