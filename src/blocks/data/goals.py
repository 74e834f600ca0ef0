"""``data=goals``: instructions and their start boards (no pictures) for the goal predictor."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from blocks.corpus.loader import Example
from blocks.data.base import BlocksDataModule, EpochOrder
from blocks.model.policy import pad_token_ids
from blocks.world.geometry import BLOCK_SIDE
from blocks.world.planner import moved_block
from blocks.world.transitions import pad_boards


def goal_batch(examples: list[Example], token_ids: list[list[int]]) -> dict[str, torch.Tensor]:
    """Tensors of a batch: words, the start boards in block lengths, and the moved block with its goal."""
    tokens, lengths = pad_token_ids(token_ids)
    positions, present = pad_boards([x.task.start for x in examples])
    blocks = [moved_block(x.task) for x in examples]
    goals = np.stack([x.task.goal[b] for x, b in zip(examples, blocks, strict=True)])
    return {
        "tokens": tokens,
        "lengths": lengths,
        "positions": torch.from_numpy(positions / BLOCK_SIDE).float(),
        "present": torch.from_numpy(present),
        "logo": torch.tensor([x.decoration == "logo" for x in examples]),
        "block": torch.tensor(blocks),
        "goal": torch.from_numpy(goals / BLOCK_SIDE).float(),
    }


class GoalDataModule(BlocksDataModule):
    """Batches of corpus examples for :class:`GoalLearner`: training examples shuffled, the tuning split in order."""

    def __init__(self, batch_size: int = 64, **kwargs: Any):
        super().__init__(**kwargs)
        self.batch_size = batch_size

    @cached_property
    def train_ids(self) -> list[list[int]]:
        return self.token_ids(self.train_examples)

    def token_ids(self, examples: Sequence[Example]) -> list[list[int]]:
        """Unknown words read as the agent reads them (``mend_unknown``); training has none, only tuning does."""
        return [self.vocabulary.encode(x.tokens, mend_unknown=True) for x in examples]

    def _loader(self, examples: list[Example], ids: list[list[int]], shuffle: bool) -> DataLoader:
        return DataLoader(
            range(len(examples)),
            batch_size=self.batch_size if shuffle else self.val_batch_size,
            sampler=EpochOrder(len(examples), self.seed) if shuffle else None,
            collate_fn=lambda rows: goal_batch([examples[i] for i in rows], [ids[i] for i in rows]),
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_examples, self.train_ids, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_examples, self.token_ids(self.val_examples), shuffle=False)
