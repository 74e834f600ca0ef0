"""Relabelled training examples: the blocks' logos or digits permuted, the names in the instruction rewritten."""

from __future__ import annotations

import numpy as np
import pytest

from blocks.corpus.download import LOGO_BRANDS
from blocks.corpus.loader import Example, load_split
from blocks.corpus.relabel import (
    digit_words,
    draw_permutation,
    relabel_example,
    relabel_task,
    relabel_words,
    with_relabels,
)
from blocks.corpus.text import tokenize
from blocks.world.planner import demonstration
from blocks.world.task import Task

KNOWN = frozenset(tokenize("move the block so that its edge touches top right left of to a and space"))


def swap(*pairs: tuple[str, str], n: int = 20) -> list[int]:
    """The permutation of ``n`` blocks exchanging the named logos (or 1-based digits)."""
    p = list(range(n))
    for a, b in pairs:
        i = LOGO_BRANDS.index(a) if a in LOGO_BRANDS else int(a) - 1
        j = LOGO_BRANDS.index(b) if b in LOGO_BRANDS else int(b) - 1
        p[i], p[j] = j, i
    return p


def test_logo_names_are_rewritten_in_every_spelling_and_the_rest_is_kept():
    p = swap(("toyota", "stella"), ("sri", "cocacola"), ("mercedesbenz", "hp"))
    assert (
        relabel_words("Move the Toyota block so that its edge touches SRI's top right.", "logo", p, KNOWN)
        == "Move the stella artois block so that its edge touches coca cola's top right."
    )
    assert (
        relabel_words("Coca-Cola to the right of Mercedes Benz", "logo", p, KNOWN) == "sri to the right of hp"
    )
    assert relabel_words("stella artois to the left of BENZ", "logo", p, KNOWN) == "toyota to the left of hp"
    assert (
        relabel_words("Move coke to the right of hp", "logo", p, KNOWN)
        == "Move sri to the right of mercedes benz"
    )
    assert (
        relabel_words("Move Pepsi to the right of Shell", "logo", p, KNOWN)
        == "Move pepsi to the right of shell"
    )
    # a board of 3 logos: the name of a logo that is not on it stays
    assert relabel_words("Move BMW left of UPS", "logo", [2, 0, 1], KNOWN) == "Move adidas left of ups"


def test_a_word_that_may_name_an_unknown_logo_leaves_the_instruction_unrelabelled():
    p = swap(("toyota", "stella"))
    assert relabel_words("Move the plunger to the right of Toyota", "logo", p, KNOWN) is None
    assert relabel_words("Move the heinikin block to the right of Toyota", "logo", p, KNOWN) is None
    assert relabel_words("Move the logo to the right of Toyota", "logo", p, KNOWN) == (
        "Move the logo to the right of stella artois"
    )


def test_digit_names_are_rewritten_and_counts_are_kept():
    p = swap(("4", "17"), ("5", "16"), ("2", "3"))
    assert relabel_words("Take block 17 and place it 2 spaces below block 5.", "digit", p, KNOWN) == (
        "Take block 4 and place it 2 spaces below block 16."
    )
    assert relabel_words("There should be 3 box lengths between boxes 4 and 5", "digit", p, KNOWN) == (
        "There should be 3 box lengths between boxes 17 and 16"
    )
    assert relabel_words(
        "leave 2 blocks of space, 1 block's worth, 1/2, 1.5 and the 2nd row", "digit", p, KNOWN
    ) == ("leave 2 blocks of space, 1 block's worth, 1/2, 1.5 and the 2nd row")
    assert (
        relabel_words("Move the 4 block under 17's corner", "digit", p, KNOWN)
        == "Move the 17 block under 4's corner"
    )
    assert relabel_words("Move block 21 next to 2", "digit", p, KNOWN) == "Move block 21 next to 3"
    assert relabel_words("Move block five next to 2", "digit", p, KNOWN) is None


def test_relabelled_task_gives_each_block_place_to_its_new_label_and_the_plan_follows():
    start = np.array([[-0.6, -0.2], [-0.3, -0.2], [0.7, 0.8]])
    goal = np.array([[0.4, 0.3], [-0.3, -0.2], [0.7, 0.8]])
    task = Task(start, goal, "digit")
    p = [2, 0, 1]
    moved = relabel_task(task, p)
    for i in range(3):
        np.testing.assert_array_equal(moved.start[p[i]], task.start[i])
        np.testing.assert_array_equal(moved.goal[p[i]], task.goal[i])
    plan, relabelled = demonstration(task), demonstration(moved)
    assert relabelled.block == p[plan.block] == 2
    np.testing.assert_allclose(relabelled.points, plan.points)
    np.testing.assert_array_equal(relabelled.actions % 4, plan.actions % 4)


def test_relabelled_board_has_its_blocks_in_the_same_places_with_other_faces(renderer):
    task = Task(np.array([[-0.6, -0.2], [-0.3, 0.5], [0.7, 0.8]]), np.zeros((3, 2)) + 0.9, "digit")
    moved = relabel_task(task, [1, 2, 0])
    before, after = (renderer.render_board(t.start, logo=False) for t in (task, moved))
    table = before[0, 0]  # a corner of the picture shows the table
    on_block = lambda image: np.any(image != table, axis=-1)  # noqa: E731
    assert (on_block(before) == on_block(after)).mean() > 0.999
    assert np.any(before != after)  # the digits changed


def test_relabel_example_refuses_a_permutation_of_the_wrong_blocks():
    x = Example(
        "train/0/0/0",
        "Move 1 left of 2",
        ("move", "1", "left", "of", "2"),
        Task(np.zeros((2, 2)), np.ones((2, 2))),
        0,
        0,
    )
    with pytest.raises(ValueError, match="permutation"):
        relabel_example(x, [0, 0], KNOWN)
    assert relabel_example(x, [1, 0], KNOWN, "relabel-0").instruction == "Move 2 left of 1"


def test_real_copies_change_only_the_names_and_are_the_same_on_every_run(corpus_root):
    examples = load_split("train", corpus_root, exclude_tune=True)[::5]
    copies = with_relabels(examples, 1, seed=3)[len(examples) :]
    by_uid = {x.uid: x for x in examples}
    names = {t for brand in LOGO_BRANDS for t in tokenize(brand)} | set(
        tokenize(
            "burger king coca cola coke mercedes benz mercedez stella artois mcdonald mcdonald's nividia"
        )
        + tokenize("starbuck adidias addidas")
    )

    def plain(tokens):  # the tokens that name no block
        return [t for t in tokens if not (t.removesuffix("'s").isdigit() or t.removesuffix("'s") in names)]

    for decoration, share in (("logo", 0.85), ("digit", 0.95)):
        mine = [y for y in copies if y.decoration == decoration]
        assert len(mine) > share * sum(x.decoration == decoration for x in examples)
    renamed = 0
    for y in copies:
        x = by_uid[y.uid.split("#")[0]]
        assert plain(y.tokens) == plain(x.tokens)
        renamed += y.tokens != x.tokens
        assert demonstration(y.task).actions.shape == demonstration(x.task).actions.shape
    assert renamed > 0.9 * len(copies)
    again = with_relabels(examples, 1, seed=3)[len(examples) :]
    assert [y.instruction for y in again] == [y.instruction for y in copies]
    other = with_relabels(examples, 1, seed=4)[len(examples) :]
    assert [y.instruction for y in other] != [y.instruction for y in copies]
    assert "5" in digit_words(examples) and "toyota" not in digit_words(examples)


def test_data_module_adds_the_copies_with_the_same_vocabulary(corpus_root):
    from blocks.learn.data import DemonstrationDataModule

    plain = DemonstrationDataModule(root=str(corpus_root), max_train_examples=40)
    relabelled = DemonstrationDataModule(root=str(corpus_root), max_train_examples=40, relabelled_copies=2)
    assert 2.8 * 40 < len(relabelled.train_examples) <= 3 * 40
    assert relabelled.vocabulary.words == plain.vocabulary.words
    batch = relabelled.steps.collate(
        [relabelled.steps[i] for i in range(len(relabelled.steps) - 8, len(relabelled.steps))]
    )
    assert batch["images"].shape == (8, 15, 120, 120)
    with pytest.raises(ValueError, match="data.relabelled_copies"):
        DemonstrationDataModule(root=str(corpus_root), relabelled_copies=-1)


def test_shifted_and_reversed_permutations_keep_which_labels_are_neighbours():
    rng = np.random.default_rng(0)
    for kind in ("shifted", "reversed"):
        for n in (2, 7, 20):
            p = draw_permutation(n, kind, rng)
            assert sorted(p.tolist()) == list(range(n)) and not np.array_equal(p, np.arange(n))
            steps = np.abs(np.diff(p))
            assert (steps == 1).sum() >= n - 2  # shifted breaks one pair at the wrap-around
    assert sorted(draw_permutation(20, "random", rng).tolist()) == list(range(20))
    with pytest.raises(ValueError, match="permutation must be one of"):
        with_relabels([], 1, permutation="sorted")
