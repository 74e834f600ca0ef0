import pytest
import torch

from blocks.corpus.text import Vocabulary, tokenize
from blocks.data.relabel import LabelWords, relabel
from blocks.errors import ConfigError
from blocks.learn.goal import GoalLearner
from blocks.model.policy import pad_token_ids

WORDS = Vocabulary(
    tokenize("move block 2 spaces left of the toyota bmw burger king mcdonald's under so it is below")
    + [str(k) for k in range(1, 21)]
)


def batch_of(instructions: list[str], logo: list[bool], blocks: list[int], count: int = 8) -> dict:
    tokens, lengths = pad_token_ids([WORDS.encode(tokenize(t)) for t in instructions])
    n = len(instructions)
    positions = torch.randn(n, 20, 2)
    present = torch.zeros(n, 20, dtype=torch.bool)
    present[:, :count] = True
    return {"tokens": tokens, "lengths": lengths, "positions": positions, "present": present,
            "logo": torch.tensor(logo), "block": torch.tensor(blocks), "goal": torch.randn(n, 2)}  # fmt: skip


def words_of(batch: dict, row: int) -> str:
    return " ".join(WORDS.decode(batch["tokens"][row, : int(batch["lengths"][row])].tolist()))


def test_digits_are_relabelled_but_counts_are_not():
    words = LabelWords(WORDS.to_list())
    mapping = {2: 6, 6: 2, 1: 4, 4: 1}  # labels 3 <-> 7, 2 <-> 5 (indices are labels minus one)
    ids = WORDS.encode(tokenize("move block 3 2 spaces left of 7 so it is below 5"))
    assert WORDS.decode(words.rewrite(ids, mapping, logo=False)) == tokenize(
        "move block 7 2 spaces left of 3 so it is below 2"
    )
    # On a logo board a number is never a label.
    assert words.rewrite(ids, mapping, logo=True) == ids


def test_the_labels_named_in_the_words_skip_counts_and_the_other_decoration():
    words = LabelWords(WORDS.to_list())
    ids = WORDS.encode(tokenize("move block 3 2 spaces left of 7 so it is below the toyota"))
    assert words.mentioned(ids, logo=False) == {2, 6}  # "2 spaces" is a count
    assert words.mentioned(ids, logo=True) == {17}
    ids = WORDS.encode(tokenize("move the Burger King under McDonald's"))
    assert words.mentioned(ids, logo=True) == {2, 7} and words.mentioned(ids, logo=False) == set()


def test_logo_names_are_relabelled_with_their_second_words_and_possessives():
    words = LabelWords(WORDS.to_list())
    toyota, bmw, burger_king, mcdonalds = 17, 1, 2, 7
    mapping = {toyota: burger_king, burger_king: mcdonalds, mcdonalds: toyota, bmw: bmw}
    ids = WORDS.encode(tokenize("move the Burger King under the Toyota block left of McDonald's"))
    assert WORDS.decode(words.rewrite(ids, mapping, logo=True)) == tokenize(
        "move the McDonald's under the Burger block left of Toyota"
    )


def test_a_relabelled_board_moves_each_position_with_its_label():
    batch = batch_of(["move block 3 left of 7", "move the toyota under the bmw"], [False, True], [2, 17], 20)
    torch.manual_seed(0)
    out = relabel(batch, LabelWords(WORDS.to_list()), probability=1.0)
    for row in range(2):
        permuted = out["positions"][row]
        # the same set of positions, each moved to one slot
        assert torch.equal(permuted.sort(0).values, batch["positions"][row].sort(0).values)
        moved_from, moved_to = int(batch["block"][row]), int(out["block"][row])
        assert torch.equal(permuted[moved_to], batch["positions"][row, moved_from])
    assert (
        words_of(out, 0) == f"move block {int(out['block'][0]) + 1} left of " + words_of(out, 0).split()[-1]
    )
    assert torch.equal(out["present"], batch["present"]) and torch.equal(out["goal"], batch["goal"])
    # probability 0 leaves the batch as it was
    same = relabel(batch, LabelWords(WORDS.to_list()), probability=0.0)
    assert all(torch.equal(same[k], batch[k]) for k in batch)


def test_only_present_labels_are_exchanged():
    batch = batch_of(["move block 3 left of 7"] * 16, [False] * 16, [2] * 16, count=8)
    out = relabel(batch, LabelWords(WORDS.to_list()), probability=1.0)
    assert (out["block"] < 8).all()
    assert torch.equal(out["positions"][:, 8:], batch["positions"][:, 8:])


def test_the_relabelling_share_is_checked():
    with pytest.raises(ConfigError, match="relabel"):
        GoalLearner(WORDS.to_list(), relabel=1.5)
    assert GoalLearner(WORDS.to_list()).label_words is None


def test_labels_without_a_word_stay():
    words = LabelWords(WORDS.to_list())
    assert words.named(logo=False).all()
    named = words.named(logo=True)
    assert named.sum() == 4  # toyota, bmw, burger (king), mcdonald's
    batch = batch_of(["move the toyota under the bmw"] * 16, [True] * 16, [17] * 16, count=20)
    out = relabel(batch, words, probability=1.0)
    assert torch.equal(out["positions"][:, ~named], batch["positions"][:, ~named])
    assert set(out["block"].tolist()) <= set(torch.nonzero(named).flatten().tolist())
