"""The paper's DQN network (appendix A): its encoders and hidden layer, then one layer of 81 action values.

"We use the architecture described in Section 4, except replacing the task specific part with a single
81-dimension layer": no factoring into block and direction. The interface is :class:`PolicyNetwork`'s, so agents,
ensembles and rollouts use it unchanged: its action distribution is epsilon-greedy over the action values (greedy
when acting, ``epsilon`` set by the learner while it explores).
"""

from __future__ import annotations

import torch
from torch import nn

from blocks.model.distribution import EpsilonGreedy
from blocks.model.policy import PolicyNetwork
from blocks.world.geometry import NUM_ACTIONS


class QNetwork(PolicyNetwork):
    def __init__(
        self,
        vocab_size: int,
        image_size: int = 120,
        frames: int = 5,
        word_dim: int = 150,
        text_dim: int = 250,
        image_dim: int = 200,
        conv_channels: int = 32,
        block_embedding_dim: int = 32,
        direction_embedding_dim: int = 24,
        hidden_dim: int = 120,
        use_previous_action: bool = True,
        init: str = "appendix",
    ):
        super().__init__(vocab_size, image_size, frames, word_dim, text_dim, image_dim, conv_channels,
                         block_embedding_dim, direction_embedding_dim, hidden_dim, use_previous_action,
                         init=init)  # fmt: skip
        del self.block_head, self.direction_head  # the task-specific part the paper replaces
        self.q_head = nn.Linear(hidden_dim, NUM_ACTIONS)
        nn.init.normal_(self.q_head.weight, std=0.01)
        nn.init.zeros_(self.q_head.bias)
        self.epsilon = 0.0  # the share of uniformly random actions when sampling (rollouts); acting is greedy

    def q_values(self, features: torch.Tensor) -> torch.Tensor:
        """``(B, 81)`` action values from the hidden layer."""
        return self.q_head(features)

    def action_distribution(self, features: torch.Tensor) -> EpsilonGreedy:
        return EpsilonGreedy(self.q_values(features), self.epsilon)

    def reset_direction_head(self) -> None:
        raise NotImplementedError(
            "a Q-network has no direction head (the paper does not start DQN supervised)"
        )
