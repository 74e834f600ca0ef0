"""Instructions with exact goals, written from a small grammar whose phrases and weights come from the training split.

The goal network misreads three rare kinds of instruction (two or more reference blocks, compositional ones, none
naming a reference block; docs/experiments/generated-instructions.md). No more human instructions exist, so this
module writes more of them on the corpus's own boards: each template's phrases are counted in the training split's
instructions (a phrase the split never uses is never written), and each goal follows from the board by the relation
the corpus's goals keep to those words, measured on the training split first (:func:`measure`).

python -m blocks.data.generate --count 200 --grid docs/experiments/generated  # a sample as PNG grids to check
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from blocks.corpus.loader import Example
from blocks.corpus.text import tokenize
from blocks.data.relabel import LOGO_WORDS
from blocks.world.geometry import BLOCK_SIDE
from blocks.world.planner import moved_block
from blocks.world.task import Task

KINDS = ("one_reference", "two_references", "no_reference", "compositional")
AXES = {"left": (-1.0, 0.0), "right": (1.0, 0.0), "above": (0.0, 1.0), "below": (0.0, -1.0)}

# The grammar's slots: every phrase the templates may write. Weights are the phrase's count in the training split's
# instructions (:func:`count_phrases`); a phrase counted 0 times is never written.
VERBS = ("move", "place", "put", "position", "slide", "take")
RELATIONS = {
    "left": ("to the left of", "left of", "west of", "directly to the left of"),
    "right": ("to the right of", "right of", "east of", "directly to the right of"),
    "above": ("above", "on top of", "north of", "directly above"),
    "below": ("below", "under", "beneath", "south of", "directly below"),
}
DIAGONALS = {  # the corpus's own order: the row first
    ("above", "left"): ("above and to the left of",),
    ("above", "right"): ("above and to the right of",),
    ("below", "left"): ("below and to the left of",),
    ("below", "right"): ("below and to the right of",),
}
STEP_WORDS = {"left": ("to the left", "left"), "right": ("to the right", "right"), "above": ("up",),
              "below": ("down",)}  # fmt: skip
COUNTED = re.compile(
    r"\b(one|two|three|four|five|six|[1-6]) (?:block )?(?:spaces?|squares?|lengths?|units?|steps?) "
    r"(?:to the )?(left|right|up|down)\b"
)
DISTANCE = re.compile(
    r"\b(away|spaces?|blocks? (?:length|width)s?|lengths?)\b"
)  # "two blocks away from the edge"
BETWEEN_GAP = (1.8, 2.6)  # block lengths between two references with one slot between them (see measure)
NUMBERS = ("one", "two", "three", "four", "1", "2", "3", "4")
REGIONS = {  # no reference block: where on the table along (x, z), in units of the edge's distance; None: as it was
    "top left corner": (-1.0, 1.0), "top right corner": (1.0, 1.0), "bottom left corner": (-1.0, -1.0),
    "bottom right corner": (1.0, -1.0), "top edge": (None, 1.0), "bottom edge": (None, -1.0),
    "left edge": (-1.0, None), "right edge": (1.0, None), "middle of the top edge": (0.0, 1.0),
    "middle of the bottom edge": (0.0, -1.0), "middle of the left edge": (-1.0, 0.0),
    "middle of the right edge": (1.0, 0.0), "center": (0.0, 0.0),
}  # fmt: skip
SURFACES = ("table", "board")
EDGES = {side: REGIONS[f"{side} edge"] for side in ("top", "bottom", "left", "right")}


def _number(word: str) -> int:
    return {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}.get(word) or int(word)


def mentioned_labels(example: Example) -> set[int]:
    """The blocks (0-based labels) the words name: a digit 1-20 (also as "6's") on a digit board, a brand's word on a
    logo board."""
    if example.decoration == "logo":
        forms = {f: i for i, spellings in enumerate(LOGO_WORDS) for s in spellings for f in (s, s + "'s")}
        return {forms[t] for t in example.tokens if t in forms}
    labels = set()
    for token in example.tokens:
        match = re.fullmatch(r"(\d+)(?:'s)?", token)
        if match and 1 <= int(match.group(1)) <= 20:
            labels.add(int(match.group(1)) - 1)
    return labels


def count_phrases(texts: Sequence[str]) -> dict[str, int]:
    """How many of the instructions use each phrase of the grammar (as whole words; a verb only as the first)."""
    padded = [f" {t} " for t in texts]
    phrases = {p for family in RELATIONS.values() for p in family} | {
        p for d in DIAGONALS.values() for p in d
    }
    phrases |= {"between", "in the same column as", "in the same row as", "then", "spaces", "space"}
    phrases |= set(REGIONS) | {f"of the {s}" for s in SURFACES}
    counts = {p: sum(f" {p} " in t for t in padded) for p in sorted(phrases)}
    counts |= {f"verb:{v}": sum(t.split()[:1] == [v] for t in texts) for v in VERBS}
    counts |= {f"steps:{w}": sum(f" spaces {w} " in t or f" space {w} " in t for t in padded)
               for words in STEP_WORDS.values() for w in words}  # fmt: skip
    counts |= {f"number:{n}": sum(f" {n} space" in t for t in padded) for n in NUMBERS}
    joined = re.compile(r"\bspaces? (?:to the )?\w+ (and then|then|and) \w+ spaces?\b")
    counts |= {
        f"joint:{j}": sum(m == j for t in texts for m in joined.findall(t))
        for j in ("and", "then", "and then")
    }
    return counts


@dataclass(frozen=True)
class Relations:
    """How the corpus's goals relate to its words, measured on its training split (block lengths unless named)."""

    adjacent: float  # from a single reference to the goal beside it ("left of X"), along the relation's axis
    across: float  # the median offset across that axis (how exactly "left of" means "level with")
    step: float  # one counted "space" ("two spaces left"), from the block's own start
    extent: float  # board units: the goals lie within [-extent, extent] on both axes (their 99th percentile)
    between: float  # "between X and Y" with X and Y BETWEEN_GAP apart: the goal's median distance from their midpoint
    edge: float  # board units: "to the bottom edge of the table" puts the block's centre this far from the middle
    # (the median of such instructions' goals where 20 or more exist, else extent less half a block)
    measured_on: dict[str, int] = field(default_factory=dict)  # how many instructions each figure rests on
    phrases: dict[str, int] = field(default_factory=dict)  # :func:`count_phrases` of the split


def measure(examples: Sequence[Example]) -> Relations:
    """The relations of :class:`Relations` on ``examples`` (the training split)."""
    texts = [" ".join(x.tokens) for x in examples]
    along, across, steps, between, edges = [], [], [], [], []
    for x, text in zip(examples, texts, strict=True):
        block = moved_block(x.task)
        others = sorted(mentioned_labels(x) - {block})
        words = [d for d, family in RELATIONS.items() if any(f" {p} " in f" {text} " for p in family)]
        counted = COUNTED.findall(text)
        if len(others) == 1 and len(words) == 1 and not counted and " and " not in text:
            offset = (x.task.goal[block] - x.task.start[others[0]]) / BLOCK_SIDE
            axis = np.array(AXES[words[0]])
            along.append(float(offset @ axis))
            across.append(float(abs(offset @ axis[::-1])))
        elif not others and len(counted) == 1 and "then" not in text:  # "two spaces left" of its own start
            number, word = counted[0]
            axis = np.array(AXES[{"up": "above", "down": "below"}.get(word, word)])
            steps.append(
                float((x.task.goal[block] - x.task.start[block]) @ axis / BLOCK_SIDE / _number(number))
            )
        elif not others and not counted and "corner" not in text and not DISTANCE.search(text):
            for side, (
                x_unit,
                z_unit,
            ) in EDGES.items():  # "at the bottom edge of the table", no distance from it
                if re.search(rf"\b{side} (?:edge|side|end) of the (?:table|board)\b", text):
                    edges.append(float(x.task.goal[block] @ np.array([x_unit or 0.0, z_unit or 0.0])))
        elif len(others) == 2 and "between" in x.tokens:
            a, b = x.task.start[others[0]], x.task.start[others[1]]
            if BETWEEN_GAP[0] <= np.linalg.norm(a - b) / BLOCK_SIDE < BETWEEN_GAP[1]:
                between.append(float(np.linalg.norm(x.task.goal[block] - (a + b) / 2) / BLOCK_SIDE))
    goals = np.abs(np.concatenate([x.task.goal for x in examples]))
    return Relations(
        adjacent=round(float(np.median(along)), 3),
        across=round(float(np.median(across)), 3),
        step=round(float(np.median(steps)), 3),
        extent=round(float(np.percentile(goals, 99)), 3),
        between=round(float(np.median(between)), 3),
        # too few "at the edge" instructions to trust their median: the outermost goals' centres (the world's edge)
        edge=round(
            float(np.median(edges)) if len(edges) >= 20 else float(np.percentile(goals, 99)) - BLOCK_SIDE / 2,
            3,
        ),
        measured_on={
            "adjacent": len(along),
            "step": len(steps),
            "between": len(between),
            "edge": len(edges),
            "extent": len(goals),
        },
        phrases=count_phrases(texts),
    )


def block_words(label: int, logo: bool, rng: np.random.Generator) -> str:
    """A block's name as the corpus writes it: "block 7", "the 7 block", "the heineken block"."""
    if logo:
        return f"the {LOGO_WORDS[label][0]} block"
    return ("block {}", "the {} block", "block {}", "{}")[rng.integers(4)].format(label + 1)


class Generator:
    """Writes instructions of :data:`KINDS` on given boards, each with the goal its words define."""

    def __init__(self, relations: Relations, seed: int = 0):
        self.relations = relations
        self.rng = np.random.default_rng(seed)

    def pick(self, options: Sequence[str], key: str = "{}") -> str:
        """One of ``options``, drawn in proportion to how often the training split uses it."""
        weights = np.array([self.relations.phrases.get(key.format(o), 0) for o in options], float)
        if weights.sum() == 0:
            raise ValueError(f"none of {list(options)} occurs in the training split")
        return options[self.rng.choice(len(options), p=weights / weights.sum())]

    def free(self, start: np.ndarray, block: int, goal: np.ndarray) -> bool:
        """The goal is on the board and the moved block there overlaps no other block."""
        if np.abs(goal).max() > self.relations.extent:
            return False
        others = np.delete(start, block, axis=0)
        return bool(np.all(np.abs(others - goal).max(axis=1) >= BLOCK_SIDE * 1.001))

    def write(
        self, start: np.ndarray, logo: bool, kind: str, tries: int = 50
    ) -> tuple[str, np.ndarray, int] | None:
        """An instruction of ``kind`` for the board ``start`` (n, 2): its words, the goal of the moved block and
        which block; None when no try found a free goal."""
        n = len(start)
        for _ in range(tries):
            block, *refs = self.rng.permutation(n)[:3]
            written = getattr(self, f"_{kind}")(start, int(block), [int(r) for r in refs], logo)
            if written is not None and self.free(start, int(block), written[1]):
                return written[0], written[1], int(block)
        return None

    def _verb(self) -> str:
        return self.pick(VERBS, "verb:{}")

    def _one_reference(self, start, block, refs, logo):
        if not refs:
            return None
        r = self.relations
        if self.rng.random() < 0.15:  # a diagonal, about as often as the split names one (~5 % of relations)
            rows, columns = self.rng.choice(["above", "below"]), self.rng.choice(["left", "right"])
            phrase = self.pick(DIAGONALS[rows, columns])
            offset = np.add(AXES[rows], AXES[columns]) * r.adjacent
        else:
            direction = str(self.rng.choice(list(AXES)))
            phrase = self.pick(RELATIONS[direction])
            offset = np.array(AXES[direction]) * r.adjacent
        goal = start[refs[0]] + offset * BLOCK_SIDE
        name, ref = block_words(block, logo, self.rng), block_words(refs[0], logo, self.rng)
        return f"{self._verb()} {name} {phrase} {ref}", goal

    def _two_references(self, start, block, refs, logo):
        if len(refs) < 2:
            return None
        a, b = refs
        name = block_words(block, logo, self.rng)
        first, second = block_words(a, logo, self.rng), block_words(b, logo, self.rng)
        choice = self.rng.integers(3)
        if choice == 0:  # between two blocks one slot apart: the midpoint (measure's "between")
            gaps = np.linalg.norm(start[:, None] - start[None], axis=-1) / BLOCK_SIDE
            near = (gaps >= BETWEEN_GAP[0]) & (gaps < BETWEEN_GAP[1])
            pairs = [(i, j) for i, j in zip(*np.nonzero(near), strict=True) if i < j and block not in (i, j)]
            if not pairs:
                return None
            a, b = (int(k) for k in pairs[self.rng.integers(len(pairs))])
            first, second = block_words(a, logo, self.rng), block_words(b, logo, self.rng)
            return f"{self._verb()} {name} between {first} and {second}", (start[a] + start[b]) / 2
        if choice == 1:  # the column of one and the row of the other
            return (f"{self._verb()} {name} in the same column as {first} and in the same row as {second}",
                    np.array([start[a][0], start[b][1]]))  # fmt: skip
        rows, columns = self.rng.choice(["above", "below"]), self.rng.choice(["left", "right"])
        goal = np.array([start[b][0] + AXES[columns][0] * self.relations.adjacent * BLOCK_SIDE,
                         start[a][1] + AXES[rows][1] * self.relations.adjacent * BLOCK_SIDE])  # fmt: skip
        row_words, column_words = self.pick(RELATIONS[rows]), self.pick(RELATIONS[columns])
        return f"{self._verb()} {name} {row_words} {first} and {column_words} {second}", goal

    def _no_reference(self, start, block, refs, logo):
        region = self.pick(list(REGIONS))
        surface = self.pick(SURFACES, "of the {}")
        goal = np.array([start[block][k] if unit is None else unit * self.relations.edge
                         for k, unit in enumerate(REGIONS[region])])  # fmt: skip
        return f"{self._verb()} {block_words(block, logo, self.rng)} to the {region} of the {surface}", goal

    def _compositional(self, start, block, refs, logo):
        first = str(self.rng.choice(list(AXES)))
        second = str(
            self.rng.choice([d for d in AXES if np.dot(AXES[d], AXES[first]) == 0])
        )  # across the first
        parts, goal = [], start[block].copy()
        for direction in (first, second):
            number = self.pick(NUMBERS, "number:{}")
            words = self.pick(STEP_WORDS[direction], "steps:{}")
            unit = "space" if _number(number) == 1 else "spaces"
            parts.append(f"{number} {unit} {words}")
            goal = goal + np.array(AXES[direction]) * _number(number) * self.relations.step * BLOCK_SIDE
        joint = f" {self.pick(('and', 'then', 'and then'), 'joint:{}')} "
        return f"{self._verb()} {block_words(block, logo, self.rng)} {parts[0]}{joint}{parts[1]}", goal

    def examples(
        self, boards: Sequence[Task], count: int, shares: dict[str, float] | None = None
    ) -> list[Example]:
        """``count`` generated examples on ``boards`` (their starts; each example's goal moves one block), the
        kinds in ``shares`` (default: the three weak kinds equally, the common one as often as each)."""
        shares = shares or dict.fromkeys(KINDS, 0.25)
        kinds = list(shares)
        p = np.array([shares[k] for k in kinds], float)
        made: list[Example] = []
        while len(made) < count:
            board = boards[self.rng.integers(len(boards))]
            kind = kinds[self.rng.choice(len(kinds), p=p / p.sum())]
            written = self.write(board.start, board.decoration == "logo", kind)
            if written is None:
                continue
            text, goal, block = written
            end = board.start.copy()
            end[block] = goal
            made.append(Example(uid=f"generated/{kind}/{len(made)}", instruction=text, tokens=tuple(tokenize(text)),
                                task=Task(board.start.copy(), end, board.decoration), episode=-1,
                                start_frame=-1))  # fmt: skip
        return made


def kind_of(example: Example) -> str:
    """A generated example's kind, from its uid."""
    return example.uid.split("/")[1]


def draw_grid(
    examples: Sequence[Example], out: Path, data_root: Path | str | None = None, columns: int = 8
) -> Path:
    """The examples' boards (start blocks grey-green, the moved block blue at its start, pink at its goal) with their
    words, in one PNG, for a person to check."""
    import textwrap

    import cv2

    from blocks.render.factory import make_renderer
    from blocks.render.marks import draw_frames

    size, caption = 240, 64
    renderer = make_renderer("flat", data_root, size)
    tiles = []
    for x in examples:
        block = moved_block(x.task)
        frame = renderer.render_board(x.task.start, x.decoration == "logo")
        tile = draw_frames(
            [frame], [x.task.start], [], gold_goal=x.task.goal[block], gold_start=x.task.start[block]
        )[0]
        text = np.full((caption, size, 3), 255, np.uint8)
        for i, line in enumerate(textwrap.wrap(x.instruction, 40)[:4]):
            cv2.putText(
                text, line, (3, 13 + 15 * i), cv2.FONT_HERSHEY_SIMPLEX, 0.36, (20, 20, 20), 1, cv2.LINE_AA
            )
        tiles.append(np.concatenate([tile, text]))
    while len(tiles) % columns:
        tiles.append(np.full_like(tiles[0], 255))
    rows = [np.concatenate(tiles[i : i + columns], axis=1) for i in range(0, len(tiles), columns)]
    out.parent.mkdir(parents=True, exist_ok=True)
    from PIL import Image

    # a palette of 64 colours: the boards are flat colours, and a page of 100 stays a few hundred KB
    Image.fromarray(np.concatenate(rows)).quantize(colors=64).save(out, optimize=True)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    from blocks.corpus.loader import load_split

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid", type=Path, help="write the examples as PNG grids of 100 here")
    args = parser.parse_args(argv)
    train = load_split("fit")
    relations = measure(train)
    print({k: v for k, v in vars(relations).items() if k != "phrases"})
    made = Generator(relations, args.seed).examples([x.task for x in train], args.count)
    for x in made[:10]:
        print(kind_of(x), "|", x.instruction)
    if args.grid:
        for page in range(0, len(made), 100):
            print(draw_grid(made[page : page + 100], args.grid / f"sample_{page // 100}.png", columns=10))


if __name__ == "__main__":
    main()
