"""The factored action distribution: a softmax over 20 blocks and one over 5 directions (4 moves + STOP).

P(move b, d) = P_block(b) * P_dir(d) and P(STOP) = P_dir(STOP): the 81 probabilities sum to one.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.distributions import Categorical

from blocks.world.geometry import NUM_DIRECTIONS, STOP, STOP_DIRECTION


class FactoredActionDistribution:
    """Distribution over the 81 actions from block logits ``(B, 20)`` and direction logits ``(B, 5)``."""

    def __init__(self, block_logits: torch.Tensor, direction_logits: torch.Tensor):
        self.block = Categorical(logits=block_logits)
        self.direction = Categorical(logits=direction_logits)

    @classmethod
    def mean_of(cls, distributions: Sequence[FactoredActionDistribution]) -> FactoredActionDistribution:
        """An ensemble's distribution: the renormalised mean of the members' block and direction log-probs."""
        if len(distributions) == 1:
            return distributions[0]
        blocks = torch.stack([d.block_log_probs for d in distributions]).mean(0)
        return cls(blocks, torch.stack([d.direction_log_probs for d in distributions]).mean(0))

    @property
    def block_log_probs(self) -> torch.Tensor:
        return self.block.logits

    @property
    def direction_log_probs(self) -> torch.Tensor:
        return self.direction.logits

    def action_log_probs(self) -> torch.Tensor:
        """``(B, 81)`` log-probabilities of every action id."""
        moves = self.block.logits[:, :, None] + self.direction.logits[:, None, :NUM_DIRECTIONS]
        return torch.cat(
            [moves.flatten(1), self.direction.logits[:, STOP_DIRECTION : STOP_DIRECTION + 1]], dim=1
        )

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """log P(action) of action ids ``(B,)``."""
        return self.action_log_probs().gather(1, actions[:, None]).squeeze(1)

    def log_prob_parts(self, block: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
        """log P_block(b) + log P_dir(d): the bandit's log-likelihood of what it sampled (STOP keeps its block)."""
        return self.block.log_prob(block) + self.direction.log_prob(direction)

    def entropy(self) -> torch.Tensor:
        """H(P_block) + H(P_dir), the entropy bonus of the learners."""
        return self.block.entropy() + self.direction.entropy()

    def greedy(self) -> torch.Tensor:
        """The most probable of the 81 actions."""
        return self.action_log_probs().argmax(dim=1)

    def sample(
        self, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample block and direction independently: (action ids, blocks, directions).

        With a ``generator`` the draw happens on the generator's device, so seeded sampling is the same on any device.
        """
        device = self.block.probs.device
        on = generator.device if generator is not None else device
        block = torch.multinomial(self.block.probs.to(on), 1, generator=generator).squeeze(1).to(device)
        direction = (
            torch.multinomial(self.direction.probs.to(on), 1, generator=generator).squeeze(1).to(device)
        )
        return to_action(block, direction), block, direction


def to_action(block: torch.Tensor, direction: torch.Tensor) -> torch.Tensor:
    """Action ids of (block, direction) pairs; direction 4 is STOP whatever the block."""
    return torch.where(
        direction == STOP_DIRECTION, torch.full_like(block, STOP), block * NUM_DIRECTIONS + direction
    )


def from_action(
    actions: torch.Tensor, stop_block: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(block, direction) of action ids; STOP takes ``stop_block`` (default 0) as its block."""
    is_stop = actions == STOP
    fallback = torch.zeros_like(actions) if stop_block is None else stop_block
    block = torch.where(is_stop, fallback, actions // NUM_DIRECTIONS)
    direction = torch.where(is_stop, torch.full_like(actions, STOP_DIRECTION), actions % NUM_DIRECTIONS)
    return block, direction


class EpsilonGreedy:
    """A Q-network's choice among the 81 actions: the best value, or with probability ``epsilon`` a uniform one.

    Shares :class:`FactoredActionDistribution`'s acting interface (``greedy``, ``sample``, ``mean_of``)."""

    def __init__(self, q_values: torch.Tensor, epsilon: float = 0.0):
        self.q_values = q_values
        self.epsilon = epsilon

    @classmethod
    def mean_of(cls, distributions: Sequence[EpsilonGreedy]) -> EpsilonGreedy:
        """An ensemble: the mean of the members' action values."""
        if len(distributions) == 1:
            return distributions[0]
        return cls(torch.stack([d.q_values for d in distributions]).mean(0), distributions[0].epsilon)

    def greedy(self) -> torch.Tensor:
        return self.q_values.argmax(dim=1)

    def sample(
        self, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(action ids, blocks, directions) of an epsilon-greedy draw; STOP has block 0 and direction 4."""
        device = self.q_values.device
        on = generator.device if generator is not None else device
        n = len(self.q_values)
        explore = torch.rand(n, generator=generator, device=on).to(device) < self.epsilon
        uniform = torch.randint(STOP + 1, (n,), generator=generator, device=on).to(device)
        actions = torch.where(explore, uniform, self.greedy())
        block, direction = from_action(actions)
        return actions, block, direction
