"""Generated instructions: every goal on the board and free, the moved block named, each relation kept exactly; the
relations measured on the real training split where the corpus is present."""

from __future__ import annotations

import numpy as np
import pytest

from blocks.data.generate import (
    AXES,
    KINDS,
    Generator,
    Relations,
    count_phrases,
    kind_of,
    measure,
    mentioned_labels,
    moved_block,
)
from blocks.world.geometry import BLOCK_SIDE
from blocks.world.task import Task

PHRASES = [
    "move block 3 to the left of block 7", "place the 2 block right of 5", "put block 4 above block 9",
    "slide block 1 under the 6 block", "move block 8 between block 2 and block 3",
    "place block 5 in the same column as block 1 and in the same row as block 2",
    "move block 6 to the bottom edge of the table", "move block 2 to the top left corner of the board",
    "move block 7 two spaces to the left and one space up", "place block 3 north of block 4 then two spaces down",
    "position block 9 directly below block 10", "take block 11 above and to the left of block 12",
    "move the 4 block three spaces right", "move block 1 east of block 2", "put block 5 west of block 3",
    "put block 6 on top of block 8", "place block 8 beneath block 9", "move block 2 south of block 5",
    "move block 12 below and to the right of block 1", "place block 3 above and to the right of block 2",
    "move block 4 below and to the left of block 3", "move block 9 to the right of block 1",
    "put block 1 directly above block 2", "move block 2 directly to the left of block 1",
    "move block 3 directly to the right of block 2", "move block 5 to the center of the table",
    "move block 5 to the right edge of the board", "move block 7 to the left edge of the table",
    "move block 1 to the top edge of the table", "move block 1 to the top right corner of the table",
    "move block 1 to the bottom left corner of the table", "move block 1 to the bottom right corner of the board",
    "move block 1 to the middle of the top edge of the table", "move block 1 to the middle of the left edge of it",
    "move block 1 to the middle of the right edge of the table", "move block 1 to the middle of the bottom edge",
    "move block 2 four spaces up and then 1 space down", "move block 2 3 spaces down and 2 spaces to the right",
]  # fmt: skip


def small_boards(count: int = 40, seed: int = 0) -> list[Task]:
    """Boards of 5 to 12 blocks on a grid of block-and-a-bit steps, as the corpus lays them out."""
    rng = np.random.default_rng(seed)
    cells = np.array([(x, z) for x in range(-5, 6) for z in range(-5, 6)]) * 1.09 * BLOCK_SIDE
    boards = []
    for _ in range(count):
        start = cells[rng.choice(len(cells), rng.integers(5, 13), replace=False)]
        boards.append(Task(start, start, "logo" if rng.random() < 0.5 else "digit"))
    return boards


@pytest.fixture
def relations() -> Relations:
    return Relations(adjacent=1.09, across=0.0, step=1.09, extent=0.99, between=0.0, edge=0.92,
                     phrases=count_phrases(PHRASES))  # fmt: skip


def test_every_generated_goal_is_on_the_board_free_and_keeps_its_words(relations):
    made = Generator(relations, seed=3).examples(small_boards(), 400)
    assert {kind_of(x) for x in made} == set(KINDS)
    for x in made:
        block = moved_block(x.task)
        goal, start = x.task.goal[block], x.task.start
        assert np.abs(goal).max() <= relations.extent
        others = np.delete(start, block, axis=0)
        assert np.all(np.abs(others - goal).max(axis=1) >= BLOCK_SIDE)  # no overlap
        assert np.array_equal(np.delete(x.task.goal, block, axis=0), others)  # one block moves
        assert block in mentioned_labels(x)  # the moved block is named
        text = " ".join(x.tokens)
        if kind_of(x) == "one_reference" and " and " not in text:
            (reference,) = mentioned_labels(x) - {block}
            offset = (goal - start[reference]) / BLOCK_SIDE
            direction = next(d for d in AXES if any(w in text for w in _words(d)))
            assert np.allclose(offset, np.array(AXES[direction]) * relations.adjacent)
        if kind_of(x) == "two_references" and "between" in x.tokens:
            first, second = sorted(mentioned_labels(x) - {block})
            assert np.allclose(goal, (start[first] + start[second]) / 2)
        if kind_of(x) == "no_reference":
            assert mentioned_labels(x) == {block} and ("edge" in text or "corner" in text or "center" in text)
        if kind_of(x) == "compositional":
            moved = (goal - start[block]) / BLOCK_SIDE / relations.step
            assert (
                np.allclose(moved, np.round(moved)) and (moved != 0).sum() == 2
            )  # whole spaces on both axes


def _words(direction: str) -> tuple[str, ...]:
    return {"left": ("left of", "west of"), "right": ("right of", "east of"),
            "above": ("above", "on top of", "north of"), "below": ("below", "under", "beneath", "south of")}[direction]  # fmt: skip


def test_a_phrase_the_split_never_uses_is_never_written(relations):
    used = count_phrases(PHRASES)
    unused = {
        p for p, n in used.items() if n == 0 and not p.startswith(("verb:", "number:", "steps:", "joint:"))
    }
    made = Generator(relations, seed=1).examples(small_boards(), 300)
    texts = [f" {' '.join(x.tokens)} " for x in made]
    assert not any(f" {p} " in t for p in unused for t in texts if p not in ("space", "spaces"))
    none = Relations(1.09, 0.0, 1.09, 0.99, 0.0, 0.92, phrases={})
    with pytest.raises(ValueError, match="occurs in the training split"):
        Generator(none).examples(small_boards(), 1)


def test_the_same_seed_writes_the_same_examples(relations):
    first = Generator(relations, seed=5).examples(small_boards(), 50)
    again = Generator(relations, seed=5).examples(small_boards(), 50)
    assert [x.instruction for x in first] == [x.instruction for x in again]
    assert all(np.array_equal(a.task.goal, b.task.goal) for a, b in zip(first, again, strict=True))


def test_the_relations_measured_on_the_training_split(corpus_root, tmp_path):
    """ "left of X" ends one grid step (1.09 block lengths) from X and level with it; one counted space is a step;
    "between" two blocks one slot apart is their midpoint; then a sample drawn as a PNG grid."""
    from blocks.corpus.loader import load_split
    from blocks.data.generate import draw_grid

    train = load_split("fit", corpus_root)
    relations = measure(train)
    assert 1.0 < relations.adjacent < 1.2 and relations.across < 0.1 and 0.9 < relations.step < 1.3
    assert relations.between < 0.3 and 0.9 < relations.extent < 1.1
    assert relations.measured_on["adjacent"] > 1000 and relations.phrases["to the left of"] > 1000
    made = Generator(relations, seed=0).examples([x.task for x in train[:300]], 40)
    out = draw_grid(made, tmp_path / "grid.png", corpus_root, columns=8)
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_goal_data_takes_generated_instructions_of_the_kinds_named(corpus_root):
    """``data.generated_kinds=[compositional]``: every generated example is two counted moves; a kind the
    generator does not write is one line naming the key; without the key the mix is the generator's."""
    from blocks.data.goals import GoalDataModule
    from blocks.errors import ConfigError

    data = GoalDataModule(root=str(corpus_root), generated=24, generated_kinds=["compositional"],
                          max_train_examples=64, seed=3)  # fmt: skip
    made = data.train_examples[64:]
    assert len(made) == 24 and all(" space" in x.instruction for x in made)
    mixed = GoalDataModule(root=str(corpus_root), generated=24, max_train_examples=64, seed=3).train_examples[
        64:
    ]
    assert sum(" space" in x.instruction for x in mixed) < 24
    for wrong in (["between"], []):
        with pytest.raises(ConfigError, match="data.generated_kinds="):
            GoalDataModule(root=str(corpus_root), generated=24, generated_kinds=wrong)


def test_generated_instructions_alone_are_a_first_stage(corpus_root):
    """``data.generated_only``: the training examples are the generated ones (drawn on the corpus's boards), the
    tuning split the corpus's; without ``data.generated`` it is one line."""
    from blocks.data.goals import GoalDataModule
    from blocks.errors import ConfigError

    data = GoalDataModule(
        root=str(corpus_root), generated=30, generated_only=True, max_train_examples=64, seed=3
    )
    corpus = {
        x.instruction
        for x in GoalDataModule(root=str(corpus_root), max_train_examples=64, seed=3).train_examples
    }
    assert len(data.train_examples) == 30 and not corpus & {x.instruction for x in data.train_examples}
    assert data.train_ids and len(data.train_ids) == 30
    with pytest.raises(ConfigError, match="data.generated_only=true"):
        GoalDataModule(root=str(corpus_root), generated_only=True)
