"""Mirrored training examples: the board reflected, the direction words exchanged, the demonstrations mirrored."""

from __future__ import annotations

import numpy as np
import pytest

from blocks.corpus.loader import Example, load_split
from blocks.corpus.mirror import (
    _ACROSS_X,
    _ACROSS_Z,
    direction_permutation,
    mirror_actions,
    mirror_example,
    mirror_task,
    mirror_words,
    with_mirrors,
)
from blocks.corpus.text import tokenize
from blocks.world.geometry import STOP
from blocks.world.planner import demonstration
from blocks.world.task import Task


def detour_task() -> Task:
    """Block 0 must pass block 1, which stands in its way, to reach a cell up and to the right of it."""
    start = np.array([[-0.6, -0.2], [-0.3, -0.2], [0.7, 0.8]])
    goal = np.array([[0.4, 0.3], [-0.3, -0.2], [0.7, 0.8]])
    return Task(start, goal, "logo")


def example(text: str, uid: str = "train/0/0/0") -> Example:
    return Example(uid, text, tuple(tokenize(text)), detour_task(), 0, 0)


def net_moves(actions: np.ndarray) -> np.ndarray:
    """(right - left, up - down) moves of a demonstration."""
    directions = np.asarray(actions)[np.asarray(actions) != STOP] % 4
    counts = np.bincount(directions, minlength=4)
    return np.array([counts[1] - counts[0], counts[2] - counts[3]])


def test_direction_words_are_exchanged_and_the_rest_is_kept():
    text = "Move the UPS block to the LEFT of Toyota, just above the top-left corner of 13's left side."
    assert mirror_words(text, "x") == (
        "Move the UPS block to the RIGHT of Toyota, just above the top-right corner of 13's right side."
    )
    assert mirror_words(text, "z") == (
        "Move the UPS block to the LEFT of Toyota, just below the bottom-left corner of 13's left side."
    )
    assert mirror_words(text, "xz") == (
        "Move the UPS block to the RIGHT of Toyota, just below the bottom-right corner of 13's right side."
    )
    assert mirror_words("Put it northwest of 3, West of 4", "x") == "Put it northeast of 3, East of 4"
    assert mirror_words("Put it northwest of 3", "z") == "Put it southwest of 3"
    assert mirror_words("Put it northwest of 3", "xz") == "Put it southeast of 3"
    assert mirror_words("slide it beneath 5", "z") == "slide it above 5"
    assert mirror_words("Move 5 left", "none") == "Move 5 left"


def test_every_exchange_of_both_ways_words_is_undone_by_mirroring_again():
    for table in (_ACROSS_X, _ACROSS_Z):
        for word, other in table.items():
            if word not in ("under", "underneath", "beneath", "atop", "higher"):
                assert table[other] == word


def test_mirrored_task_reflects_start_and_goal_and_twice_is_the_task():
    task = detour_task()
    flipped = mirror_task(task, "x")
    np.testing.assert_allclose(flipped.start[:, 0], -task.start[:, 0])
    np.testing.assert_allclose(flipped.start[:, 1], task.start[:, 1])
    np.testing.assert_allclose(mirror_task(task, "z").goal[:, 1], -task.goal[:, 1])
    np.testing.assert_allclose(mirror_task(mirror_task(task, "xz"), "xz").goal, task.goal)
    assert flipped.decoration == "logo"


@pytest.mark.parametrize("mirror", ["x", "z", "xz"])
def test_demonstration_of_the_mirror_is_as_long_and_moves_the_mirrored_way(mirror):
    task = detour_task()
    original, mirrored = demonstration(task), demonstration(mirror_task(task, mirror))
    assert len(mirrored.actions) == len(original.actions) and mirrored.block == original.block
    sign = np.array([-1 if "x" in mirror else 1, -1 if "z" in mirror else 1])
    np.testing.assert_array_equal(net_moves(mirrored.actions), sign * net_moves(original.actions))


def test_mirrored_example_agrees_with_its_instruction_and_its_uid_says_so():
    x = mirror_example(example("Move block 1 to the right of block 2"), "xz")
    assert x.tokens == tuple(tokenize(x.instruction)) and "left" in x.tokens
    assert x.uid.endswith("#mirror-xz")
    assert mirror_example(example("anything"), "none").uid == "train/0/0/0"
    assert (
        len(
            {
                y.uid
                for y in with_mirrors([example("a"), example("b", "train/0/0/1")], ["none", "x", "z", "xz"])
            }
        )
        == 8
    )


@pytest.mark.parametrize("bad", [["none", "y"], [], ["x", "x"], "flip"])
def test_unknown_or_repeated_mirrors_are_refused(bad):
    with pytest.raises(ValueError, match="data.mirrors"):
        with_mirrors([example("a")], bad)


@pytest.mark.parametrize("mirror", ["x", "z", "xz"])
def test_reflecting_the_picture_draws_every_block_where_the_reflected_board_has_it(renderer, mirror):
    """``Camera.reflect`` (the agent's mirror views) flips the picture, 3 pixels over for x: the camera is 0.03
    off centre (2.95 pixels at the faces, so a few block edges land one column off). The decorations come out
    mirrored."""
    rng = np.random.default_rng(0)
    positions = rng.uniform(-1.1, 1.1, (4, 20, 2))
    present, logo = np.ones((4, 20), bool), np.array([True, False, True, False])
    sign = np.array([-1.0 if "x" in mirror else 1.0, -1.0 if "z" in mirror else 1.0])
    reflected = renderer.camera.reflect(renderer.render(positions, present, logo), mirror)
    rendered = renderer.render(positions * sign, present, logo)
    drawn = lambda images: (images != images[:, :, 60:61, 60:61]).any(1)  # noqa: E731  (the table's colour)
    assert (drawn(reflected) == drawn(rendered)).mean() > 0.995
    assert 0.9 < (reflected == rendered).all(1).mean() < 1.0  # the mirrored logos and digits
    assert np.array_equal(
        renderer.camera.reflect(reflected, mirror), renderer.render(positions, present, logo)
    )


def test_direction_permutation_and_reflected_actions():
    assert direction_permutation("none").tolist() == [0, 1, 2, 3, 4]
    assert direction_permutation("x").tolist() == [1, 0, 2, 3, 4]  # left <-> right
    assert direction_permutation("xz").tolist() == [1, 0, 3, 2, 4]
    actions = np.array([-1, STOP, 0, 1, 2, 3, 4 * 7 + 1])  # NONE, STOP, block 0 every way, block 7 right
    assert mirror_actions(actions, "x").tolist() == [-1, STOP, 1, 0, 2, 3, 4 * 7]
    assert mirror_actions(actions, "z").tolist() == [-1, STOP, 0, 1, 3, 2, 4 * 7 + 1]


def test_real_mirrors_change_only_direction_words(corpus_root):
    examples = load_split("train", corpus_root, exclude_tune=True)[:2000]
    changed = 0
    for x in examples:
        y = mirror_example(x, "x")
        assert len(y.tokens) == len(x.tokens)
        for a, b in zip(x.tokens, y.tokens, strict=True):
            assert a == b or _ACROSS_X[a] == b
        changed += y.tokens != x.tokens
        assert demonstration(y.task).actions.shape == demonstration(x.task).actions.shape
    assert changed > 0.3 * len(examples)  # left or right is in about half the instructions


def test_data_module_trains_on_every_mirror_with_the_same_vocabulary(corpus_root):
    from blocks.learn.data import DemonstrationDataModule

    plain = DemonstrationDataModule(root=str(corpus_root), max_train_examples=40)
    mirrored = DemonstrationDataModule(
        root=str(corpus_root), max_train_examples=40, mirrors=["none", "x", "z"]
    )
    assert len(mirrored.train_examples) == 3 * len(plain.train_examples) == 120
    assert mirrored.vocabulary.words == plain.vocabulary.words
    assert len(mirrored.steps) == 3 * len(plain.steps)
    batch = mirrored.steps.collate(
        [mirrored.steps[i] for i in range(len(mirrored.steps) - 8, len(mirrored.steps))]
    )
    assert batch["images"].shape == (8, 15, 120, 120)
