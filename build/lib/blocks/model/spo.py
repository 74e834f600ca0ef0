"""The network of Xiong et al. (2018), "Scheduled Policy Optimization": the paper's encoders, other heads.

The image CNN (to 200) and the instruction LSTM (250, averaged over the words) are the paper's. The block to move
is read from the instruction alone (``text_block_head``: ReLU(Linear(250 -> 120)) -> 20 logits), so it is the same
at every step of an episode; the direction reads the picture, the words and the previous direction (a 24-d
embedding: four moves, STOP, none yet) through ReLU(Linear(200 + 250 + 24 -> 120)) -> 5 logits, and a value head
on the same 120 units estimates the immediate reward. With ``text_block_head=False`` the block is read from the
direction's hidden layer too (an ablation). The interface is :class:`PolicyNetwork`'s, so agents and rollouts
use it unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from blocks.model.distribution import FactoredActionDistribution
from blocks.model.policy import ImageEncoder, PolicyNetwork, standardize
from blocks.world.geometry import MAX_BLOCKS, NUM_DIRECTIONS, STOP


class SPONetwork(PolicyNetwork):
    """See the module docstring; ``joint_features`` holds the block's 120 units, then the direction's."""

    block_per_episode = True  # rollouts sample the block once and keep it

    def __init__(
        self,
        vocab_size: int,
        image_size: int = 120,
        frames: int = 5,
        word_dim: int = 150,
        text_dim: int = 250,
        image_dim: int = 200,
        conv_channels: int = 32,
        direction_embedding_dim: int = 24,
        hidden_dim: int = 120,
        text_block_head: bool = True,
        init: str = "appendix",
    ):
        nn.Module.__init__(self)
        self.init = init
        self.frames = frames
        self.hidden_dim = hidden_dim
        self.text_block_head = text_block_head
        self.use_previous_action = True
        self.word_embedding = nn.Embedding(vocab_size, word_dim, padding_idx=0)
        self.lstm = nn.LSTM(word_dim, text_dim, batch_first=True)
        self.image_encoder = ImageEncoder(3 * frames, image_size, conv_channels, image_dim)
        self.direction_embedding = nn.Embedding(
            NUM_DIRECTIONS + 2, direction_embedding_dim
        )  # moves, STOP, NONE
        self.hidden = nn.Linear(image_dim + text_dim + direction_embedding_dim, hidden_dim)
        self.block_hidden = nn.Linear(text_dim, hidden_dim) if text_block_head else None
        self.block_head = nn.Linear(hidden_dim, MAX_BLOCKS)
        self.direction_head = nn.Linear(hidden_dim, NUM_DIRECTIONS + 1)
        self.value_head = nn.Linear(hidden_dim, 1)
        self.goal_head = self.goal_map = None
        self.reset_parameters()

    def previous_direction(self, previous: torch.Tensor) -> torch.Tensor:
        """Direction ids of previous actions ``(B,)``: 0-3 the moves, 4 STOP, 5 none yet (-1)."""
        direction = torch.where(
            previous == STOP, torch.full_like(previous, NUM_DIRECTIONS), previous % NUM_DIRECTIONS
        )
        return torch.where(previous < 0, torch.full_like(previous, NUM_DIRECTIONS + 1), direction)

    def joint_features(
        self, images: torch.Tensor, instruction: torch.Tensor, previous_action: torch.Tensor
    ) -> torch.Tensor:
        """``(B, 2 * hidden_dim)``: the block's hidden units, then the direction's."""
        parts = [
            self.image_encoder(standardize(images)),
            instruction,
            self.direction_embedding(self.previous_direction(previous_action)),
        ]
        direction = F.relu(self.hidden(torch.cat(parts, dim=1)))
        block = F.relu(self.block_hidden(instruction)) if self.block_hidden is not None else direction
        return torch.cat([block, direction], dim=1)

    def action_distribution(self, features: torch.Tensor) -> FactoredActionDistribution:
        block, direction = features.split(self.hidden_dim, dim=1)
        return FactoredActionDistribution(self.block_head(block), self.direction_head(direction))

    def value(self, features: torch.Tensor) -> torch.Tensor:
        """The estimated immediate reward ``(B,)`` of the state (the PPO baseline)."""
        return self.value_head(features[:, self.hidden_dim :]).squeeze(1)

    def reset_direction_head(self) -> None:
        nn.init.normal_(self.direction_head.weight, std=0.01)
        nn.init.zeros_(self.direction_head.bias)
