"""blocks.data: what learners read (rollouts, their tensors, demonstration batches, replay) and how it shards
by rank and resumes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from blocks.data.collect import collect_rollout
from blocks.data.demonstrations import DemonstrationDataModule
from blocks.data.rollout_tensors import gather_stacks
from blocks.data.rollouts import RolloutDataModule, RolloutStream
from blocks.errors import ConfigError
from blocks.model.policy import PolicyNetwork
from blocks.render.history import FrameHistory
from blocks.world.rewards import RewardConfig
from blocks.world.vector_env import VectorBlocksEnv

VOCAB = ["<pad>", "<unk>", "move", "block", "left"]


@pytest.mark.parametrize("side", [6, 5])  # pictures of whole 4-byte words, and not
def test_gathered_stacks_equal_the_history_the_policy_saw(side):
    frames = torch.randint(0, 256, (7, 2, 3, side, side), dtype=torch.uint8)
    history = FrameHistory(2, 5, (3, side, side))
    seen = []
    for t in range(7):
        history.push(frames[t].numpy())
        stacks = gather_stacks(frames, torch.tensor([t, t]), torch.tensor([0, 1]))
        assert np.array_equal(stacks.numpy(), history.stack())
        seen.append(history.stack().copy())
    # Any (step, board) pairs in one call, in any order: each its own history, black before its first picture.
    steps, boards = torch.tensor([6, 0, 3, 1, 0]), torch.tensor([1, 0, 0, 1, 1])
    stacks = gather_stacks(frames, steps, boards)
    for row, (t, b) in enumerate(zip(steps.tolist(), boards.tolist(), strict=True)):
        assert np.array_equal(stacks[row].numpy(), seen[t][b])


def test_collect_rollout_records_what_happened(renderer, two_block_task):
    policy = PolicyNetwork(len(VOCAB))
    env = VectorBlocksEnv(reward=RewardConfig(), render_frames=renderer.render)
    tokens, lengths = torch.tensor([[2, 3], [2, 4]]), torch.tensor([2, 2])
    rollout = collect_rollout(
        policy, env, [two_block_task] * 2, tokens, lengths, torch.Generator().manual_seed(0)
    )
    steps = rollout.active.sum(0)
    assert rollout.frames.shape[0] == int(steps.max()) and rollout.frames.shape[1:] == (2, 3, 120, 120)
    assert rollout.previous_action[0].tolist() == [-1, -1]
    assert np.allclose(rollout.final_error.numpy(), env.error)
    assert (rollout.reward[~rollout.active] == 0).all()


def test_stream_shards_by_rank_with_equal_counts(monkeypatch, two_block_task):
    import blocks.data.base as base
    import blocks.data.rollouts as rollouts

    examples = list(range(10))
    stream = RolloutStream.__new__(RolloutStream)
    stream.examples, stream.rollouts_per_batch, stream.seed = examples, 3, 0
    shards = []
    for rank in (0, 1):
        for module in (base, rollouts):
            monkeypatch.setattr(module, "distributed_rank", lambda rank=rank: (rank, 2))
        shards.append(stream.shard(epoch=0))
    assert len(shards[0]) == len(shards[1]) == 6  # ceil(10 / (2 * 3)) = 2 batches of 3 per rank
    assert set(shards[0]) | set(shards[1]) == set(examples)
    for module in (base, rollouts):
        monkeypatch.setattr(module, "distributed_rank", lambda: (0, 1))
    assert not np.array_equal(stream.shard(0), stream.shard(1))  # a new order each epoch


def test_stream_state_resumes_where_it_stopped(corpus_root):
    def fresh():
        dm = RolloutDataModule(
            root=str(corpus_root), batch_size=2, max_train_examples=6, seed=0, chunks_per_update=2
        )
        torch.manual_seed(0)  # the same policy each time: a resumed stream must replay the same rollouts
        dm.attach_policy(PolicyNetwork(len(dm.vocabulary)))
        return dm

    def resolved(pieces):
        """The chunks of the stream's pieces, each rollout sampled when its first piece is asked for."""
        return [piece.pending.piece(piece.index, torch.device("cpu")) for piece in pieces]

    first = fresh()
    batches = resolved(first.train_dataloader())  # 3 rollouts of 2 episodes, 2 chunks each
    assert len(batches) == len(first.train_dataloader()) == 6
    assert [b.last for b in batches] == [False, True] * 3
    resumed = fresh()
    resumed.load_state_dict({"epoch": 0, "consumed": 4})
    last = resolved(resumed.train_dataloader())
    assert len(last) == 2 and torch.equal(last[0].rollout.frames, batches[4].rollout.frames)
    assert torch.equal(last[1].rollout.block, batches[5].rollout.block)
    assert resumed.state_dict() == {"epoch": 0, "consumed": 6}
    assert len(list(resumed.train_dataloader())) == 6 and resumed.state_dict()["epoch"] == 1
    # Mid-rollout (a checkpoint taken between an update's chunks): the rollout is collected again and the
    # batches already trained on are skipped, so the epoch still has exactly len() batches.
    middle = fresh()
    middle.load_state_dict({"epoch": 0, "consumed": 3})
    rest = resolved(middle.train_dataloader())
    assert [b.last for b in rest] == [True, False, True]
    assert torch.equal(rest[0].steps, batches[3].steps) and torch.equal(rest[0].boards, batches[3].boards)
    # Checkpoints written before the count was per batch saved whole rollouts as "position".
    old = fresh()
    old.load_state_dict({"epoch": 0, "position": 2})
    assert old.stream.consumed == 4


def test_supervised_batches_hold_the_demonstration_contexts(corpus_root):
    dm = DemonstrationDataModule(root=str(corpus_root), batch_size=4, max_train_examples=2, seed=0)
    steps = dm.steps
    batch = steps.collate([steps[0], steps[1]])
    assert batch["images"].shape == (2, 15, 120, 120)
    assert (
        batch["images"][0, :12].max() == 0 and batch["images"][0, 12:].max() > 0
    )  # first step: one real frame
    assert batch["previous_action"][0] == -1 and batch["previous_action"][1] == int(steps.plans[0].actions[0])
    assert batch["block"][0] == steps.plans[0].block


def test_replay_batches_draw_as_the_release_did_and_resume_exactly():
    from collections import Counter

    from blocks.data.base import ReplayBatches

    lengths = [7, 3, 12, 5, 9, 4, 11, 6]
    steps = np.split(np.arange(sum(lengths)), np.cumsum(lengths)[:-1])
    sampler = ReplayBatches(steps, seed=4, batch_size=8, memory=20)
    seen: list[int] = []  # every step in the order its example came, across epochs
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert len(batches) == len(lengths)  # one batch (one Adam step) per example
        for i, batch in zip(sampler.order(epoch), batches, strict=True):
            seen += steps[i].tolist()
            pool = seen[-20:]  # the memory: the last 20 steps, this example's included
            # Each half draws distinct places of the memory (a step there twice may come twice).
            assert all(not Counter(half) - Counter(pool) for half in (batch[:4], batch[4:]))
            assert len(batch) == min(4, len(pool)) + min(8 - min(4, len(pool)), len(pool))
        if epoch == 1:
            whole_epoch_1 = batches
    # Resuming in the middle of epoch 1 yields that epoch's remaining batches exactly.
    resumed = ReplayBatches(steps, seed=4, batch_size=8, memory=20, resume_at=(1, 3))
    resumed.set_epoch(1)
    assert list(resumed) == whole_epoch_1[3:]
    fixed = ReplayBatches(steps, seed=4, batch_size=8, memory=20, fixed_order=True)
    assert fixed.order(0) == fixed.order(2) != sampler.order(2)
    with pytest.raises(ConfigError, match="data.sampling"):
        DemonstrationDataModule(sampling="release")


def test_the_epoch_order_shards_by_rank_as_lightning_did_and_resumes_each_shard_exactly():
    """Two ranks see the shards Lightning's DistributedSamplerWrapper gave them (every second item of the one
    order, padded with its start); a rank resumed after 3 batches of 2 yields the rest of its own shard, and says
    the epoch's length, which the trainer counts (Lightning used to index past the shortened order: IndexError)."""
    from torch.utils.data import DistributedSampler

    from blocks.data.base import EpochOrder

    whole = EpochOrder(11, seed=3, rank=0, world=1)
    whole.set_epoch(2)
    order = list(whole)
    assert sorted(order) == list(range(11))
    shards = []
    for rank in (0, 1):
        sampler = EpochOrder(11, seed=3, rank=rank, world=2)
        sampler.set_epoch(2)
        shards.append(list(sampler))
        assert len(sampler) == 6 and isinstance(sampler, DistributedSampler)  # Lightning leaves it unwrapped
        resumed = EpochOrder(11, seed=3, resume_at=(2, 3 * 2), rank=rank, world=2)
        other = EpochOrder(11, seed=3, rank=rank, world=2)
        resumed.set_epoch(1), other.set_epoch(1)
        assert list(resumed) == list(other)  # another epoch: untouched
        resumed.set_epoch(2)
        assert list(resumed) == shards[rank][6:] and len(resumed) == 6
        resumed.set_epoch(2)
        assert list(resumed) == shards[rank]  # once only: the next time round the epoch is whole
    padded = order + order[:1]
    assert shards == [padded[0::2], padded[1::2]]
