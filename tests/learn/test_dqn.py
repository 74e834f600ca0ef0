"""DQN (the paper's baseline): epsilon-greedy acting, the prioritised replay memory, the temporal-difference target."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from blocks.errors import ConfigError
from blocks.learn.dqn import DQNLearner, ReplayMemory, td_errors
from blocks.model.distribution import EpsilonGreedy
from blocks.model.dqn import QNetwork
from blocks.world.geometry import STOP

VOCAB = ["<pad>", "<unk>", "move", "block"]


def test_epsilon_greedy_acts_greedily_and_explores_uniformly():
    q = torch.zeros(4000, 81)
    q[:, 7] = 1.0
    assert (EpsilonGreedy(q, 0.0).sample(torch.Generator().manual_seed(0))[0] == 7).all()
    actions, block, direction = EpsilonGreedy(q, 1.0).sample(torch.Generator().manual_seed(0))
    assert 0.005 < (actions == 7).float().mean() < 0.03 and len(actions.unique()) == 81
    stop = actions == STOP
    assert (direction[stop] == 4).all() and (block[~stop] == actions[~stop] // 4).all()
    both = EpsilonGreedy.mean_of([EpsilonGreedy(q), EpsilonGreedy(-q)])
    assert torch.equal(both.q_values, torch.zeros_like(q))


def test_replay_memory_keeps_the_last_transitions_and_draws_by_priority():
    memory = ReplayMemory(4, exponent=1.0)
    memory.add(torch.arange(6), [[i] for i in range(6)])
    assert len(memory) == 4 and sorted(int(item[0]) for item in memory.items) == [2, 3, 4, 5]
    memory.update(np.arange(4), np.array([0.0, 0.0, 10.0, 0.0]))
    index, _ = memory.sample(200, torch.Generator().manual_seed(0))
    assert (index == 2).mean() > 0.95


def test_td_target_stops_at_the_end_of_an_episode():
    torch.manual_seed(0)
    online, target = QNetwork(len(VOCAB)), QNetwork(len(VOCAB))
    with torch.no_grad():
        target.q_head.bias.fill_(5.0)  # every next action is worth about 5
    batch = {
        "stack": torch.zeros(2, 15, 120, 120, dtype=torch.uint8),
        "next_stack": torch.zeros(2, 15, 120, 120, dtype=torch.uint8),
        "tokens": torch.tensor([[2, 3], [2, 3]]), "lengths": torch.tensor([2, 2]),
        "previous": torch.tensor([-1, -1]), "action": torch.tensor([3, 80]),
        "reward": torch.tensor([1.0, 1.0]), "done": torch.tensor([False, True]),
    }  # fmt: skip
    _, errors = td_errors(online, target, batch, gamma=0.5)
    chosen = errors + torch.tensor([1.0 + 0.5 * 5.0, 1.0])  # error = Q(s, a) - target
    assert torch.allclose(chosen, torch.zeros(2), atol=0.05)  # an untrained Q is about 0


def test_dqn_learner_needs_the_q_network_and_sane_settings():
    with pytest.raises(ConfigError, match="network=dqn"):
        DQNLearner(VOCAB, {"architecture": "paper"})
    with pytest.raises(ConfigError, match="gamma"):
        DQNLearner(VOCAB, {"architecture": "dqn"}, gamma=1.5)
    learner = DQNLearner(VOCAB, {"architecture": "dqn"}, epsilon_frames=100)
    assert learner.policy.epsilon == 1.0
    learner.frames_seen = 50
    assert learner.epsilon() == pytest.approx(0.55)
    learner.frames_seen = 1000
    assert learner.epsilon() == pytest.approx(0.1)


def test_dqn_learns_the_value_of_a_rewarded_action(corpus_root):
    """A few Lightning steps on real rollouts: the memory fills, the loss is finite, the target syncs per epoch."""
    import pytorch_lightning as pl

    from blocks.data.rollouts import RolloutDataModule

    data = RolloutDataModule(root=str(corpus_root), batch_size=4, max_train_examples=8, seed=0)
    learner = DQNLearner(data.vocabulary.to_list(), {"architecture": "dqn"}, memory_size=64, replay_batch=8)
    trainer = pl.Trainer(max_epochs=1, limit_val_batches=0, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
    trainer.fit(learner, data)
    assert len(learner.memory) == min(64, learner.frames_seen) and learner.frames_seen >= 8
    assert learner.policy.epsilon < 1.0
    for ours, theirs in zip(learner.policy.parameters(), learner.target.parameters(), strict=True):
        assert torch.equal(ours, theirs)  # synchronised at the epoch's end
