"""``data=goals``: instructions and their start boards (no pictures) for the goal predictor."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from blocks.corpus.loader import Example
from blocks.data.base import BlocksDataModule, EpochOrder
from blocks.errors import ConfigError
from blocks.model.policy import pad_token_ids
from blocks.world.geometry import BLOCK_SIDE
from blocks.world.planner import moved_block
from blocks.world.transitions import pad_boards

log = logging.getLogger(__name__)


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

    def __init__(
        self,
        batch_size: int = 64,
        generated: int = 0,
        generated_kinds: Sequence[str] | None = None,
        generated_only: bool = False,
        **kwargs: Any,
    ):
        """``generated``: that many generated instructions (:mod:`blocks.data.generate`, on the training boards,
        drawn with the seed) join the training examples, of ``generated_kinds`` in equal shares (default: the
        generator's mix), or replace them (``generated_only``: a first stage before the corpus); the tuning split
        stays the corpus's own."""
        from blocks.data.generate import KINDS

        super().__init__(**kwargs)
        self.batch_size = batch_size
        if isinstance(generated, bool) or not isinstance(generated, int) or generated < 0:
            raise ConfigError(f"data.generated={generated!r}: must be an integer >= 0")
        self.generated = generated
        unknown = [k for k in generated_kinds or () if k not in KINDS]
        if unknown or (generated_kinds is not None and not generated_kinds):
            raise ConfigError(
                f"data.generated_kinds={list(generated_kinds or [])}: a list of {', '.join(KINDS)}"
            )
        self.generated_shares = dict.fromkeys(generated_kinds, 1.0) if generated_kinds else None
        if generated_only and not generated:
            raise ConfigError(
                "data.generated_only=true trains on generated instructions alone: set data.generated"
            )
        self.generated_only = generated_only

    @cached_property
    def train_examples(self) -> list[Example]:
        examples = super().train_examples
        if not self.generated:
            return examples
        from blocks.corpus.loader import load_split
        from blocks.data.generate import Generator, measure

        # the relations and phrases of the whole training split, whatever subset is trained on
        relations = measure(load_split("train", self.root, exclude_tune=True))
        made = Generator(relations, self.seed).examples(
            [x.task for x in examples], self.generated, self.generated_shares
        )
        log.info("%d generated instructions join %d training examples (%s)", len(made), len(examples),
                 ", ".join(f"{k} {v}" for k, v in vars(relations).items() if k not in ("phrases", "measured_on")))  # fmt: skip
        return made if self.generated_only else [*examples, *made]

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
