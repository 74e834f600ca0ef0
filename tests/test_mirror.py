import pytest
import torch

from blocks.corpus.text import Vocabulary, tokenize
from blocks.errors import ConfigError
from blocks.learn.goal import GoalLearner
from blocks.learn.mirror import MirrorWords, mirror
from blocks.model.policy import pad_token_ids

WORDS = Vocabulary(
    tokenize(
        "move the bmw left of the toyota right next to northeast northwest east west corner leftmost block"
    )
)


def batch_of(instructions: list[str]) -> dict:
    tokens, lengths = pad_token_ids([WORDS.encode(tokenize(t)) for t in instructions])
    n = len(instructions)
    present = torch.zeros(n, 20, dtype=torch.bool)
    present[:, :5] = True
    return {"tokens": tokens, "lengths": lengths, "positions": torch.randn(n, 20, 2), "present": present,
            "logo": torch.ones(n, dtype=torch.bool), "block": torch.zeros(n, dtype=torch.long),
            "goal": torch.randn(n, 2)}  # fmt: skip


def words_of(batch: dict, row: int) -> str:
    return " ".join(WORDS.decode(batch["tokens"][row, : int(batch["lengths"][row])].tolist()))


def test_a_reflected_board_says_left_for_right_and_negates_x_only():
    batch = batch_of(["move the bmw left of the toyota", "move the bmw right next to the northeast corner"])
    out = mirror(batch, MirrorWords(WORDS.to_list()), 1.0)
    assert out["mirrored"].all()
    assert words_of(out, 0) == "move the bmw right of the toyota"
    # "right next to" means "directly next to": it stays; the corner changes side.
    assert words_of(out, 1) == "move the bmw right next to the northwest corner"
    assert torch.equal(out["positions"][..., 0], -batch["positions"][..., 0])
    assert torch.equal(out["positions"][..., 1], batch["positions"][..., 1])
    assert torch.equal(out["goal"], batch["goal"] * torch.tensor([-1.0, 1.0]))
    assert torch.equal(out["lengths"], batch["lengths"])
    twice = mirror(out, MirrorWords(WORDS.to_list()), 1.0)
    assert torch.equal(twice["tokens"], batch["tokens"]) and torch.equal(
        twice["positions"], batch["positions"]
    )


def test_words_without_a_mirror_image_leave_the_example_as_it_was():
    # "rightmost" is not in the vocabulary, so "leftmost" cannot be reflected.
    batch = batch_of(["move the bmw to the leftmost block", "move the bmw east of the toyota"])
    out = mirror(batch, MirrorWords(WORDS.to_list()), 1.0)
    assert out["mirrored"].tolist() == [False, True]
    assert words_of(out, 0) == "move the bmw to the leftmost block"
    assert torch.equal(out["positions"][0], batch["positions"][0])
    assert words_of(out, 1) == "move the bmw west of the toyota"


def test_the_share_reflected_follows_the_probability():
    batch = batch_of(["move the bmw left of the toyota"] * 2000)
    out = mirror(batch, MirrorWords(WORDS.to_list()), 0.25, torch.Generator().manual_seed(0))
    assert 0.22 < out["mirrored"].float().mean() < 0.28
    assert not mirror(batch, MirrorWords(WORDS.to_list()), 0.0)["mirrored"].any()


def test_the_learner_reflects_in_training_and_checks_its_share():
    with pytest.raises(ConfigError):
        GoalLearner(WORDS.to_list(), mirror=1.5)
    settings = dict(dim=16, heads=2, layers=1, translate=0.0, position_noise=0.0, dropout=0.0)
    torch.manual_seed(0)
    reflecting = GoalLearner(WORDS.to_list(), mirror=1.0, **settings)
    plain = GoalLearner(WORDS.to_list(), **settings)
    plain.load_state_dict(reflecting.state_dict())
    for learner in (reflecting, plain):
        learner.log = learner.log_dict = lambda *args, **kwargs: None  # outside a Trainer
    batch = batch_of(["move the bmw left of the toyota", "move the bmw east of the toyota"])
    reflected = mirror(batch, MirrorWords(WORDS.to_list()), 1.0)
    assert torch.allclose(reflecting.training_step(batch, 0), plain.training_step(reflected, 0))
    assert not torch.allclose(plain.training_step(batch, 0), plain.training_step(reflected, 0))
