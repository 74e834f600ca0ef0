"""``data=goals``: instructions and their start boards (no pictures) for the goal predictor.

With ``teachers`` (a file of ``python -m blocks.runs.goal_teachers``) every training batch also carries what a set
of trained goal predictors read in each example (``teacher_moved``: their block log-probabilities,
``teacher_goal``: their goal for the true block), for ``model.distill``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from blocks.corpus.loader import Example, load_split
from blocks.data.base import BlocksDataModule, EpochOrder
from blocks.errors import ConfigError
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


def examples_digest(examples: Sequence[Example]) -> str:
    """A fingerprint of a list of examples (their words and start boards, in order): teacher targets made for one
    list are refused for another."""
    digest = hashlib.sha256()
    for x in examples:
        digest.update(" ".join(x.tokens).encode())
        digest.update(np.round(np.asarray(x.task.start, np.float64), 4).tobytes())
    return digest.hexdigest()


def load_teachers(
    path: str | Path, examples: Sequence[Example], indices: np.ndarray
) -> dict[str, torch.Tensor]:
    """The teacher targets of ``path`` (made for the full training split ``examples``), rows ``indices``."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"data.teachers: no file {path}; make it with python -m blocks.runs.goal_teachers --out {path} "
            "--goal <goal_predictor.ckpt> ..."
        )
    record = torch.load(path, map_location="cpu", weights_only=True)
    if record["digest"] != examples_digest(examples):
        raise ConfigError(f"data.teachers: {path} was made for other training examples than this corpus's")
    rows = torch.from_numpy(indices)
    return {"teacher_moved": record["moved"][rows], "teacher_goal": record["goal"][rows]}


def episode_folds(examples: Sequence[Example], folds: int) -> np.ndarray:
    """Each example's fold among ``folds``: whole episodes dealt with a fixed seed (an episode's instructions share
    its boards, so a teacher that never saw an example never saw its board sequence either)."""
    episodes = np.array([x.episode for x in examples])
    unique, inverse = np.unique(episodes, return_inverse=True)
    return (np.random.default_rng(0).permutation(len(unique)) % folds)[inverse]


def parse_holdout(holdout: str | None) -> tuple[int, int] | None:
    """``"i/k"`` as (i, k): leave out fold i of k (:func:`episode_folds`)."""
    if holdout is None:
        return None
    try:
        fold, folds = (int(part) for part in str(holdout).split("/"))
    except ValueError:
        fold, folds = -1, 0
    if not 0 <= fold < folds:
        raise ConfigError(
            f"data.holdout must be 'i/k' with 0 <= i < k (fold i of k left out), got {holdout!r}"
        )
    return fold, folds


class GoalDataModule(BlocksDataModule):
    """Batches of corpus examples for :class:`GoalLearner`: training examples shuffled, the tuning split in order."""

    def __init__(
        self, batch_size: int = 64, teachers: str | None = None, holdout: str | None = None, **kwargs: Any
    ):
        super().__init__(**kwargs)
        self.batch_size = batch_size
        self.teachers = teachers
        self.holdout = parse_holdout(holdout)

    @cached_property
    def train_indices(self) -> np.ndarray:
        """Those of the base class, less the held-out fold (``holdout``)."""
        indices = super().train_indices
        if self.holdout is None:
            return indices
        fold, folds = self.holdout
        full_split = load_split("train", self.root, exclude_tune=True)
        return indices[episode_folds(full_split, folds)[indices] != fold]

    @cached_property
    def teacher_targets(self) -> dict[str, torch.Tensor] | None:
        """The teachers' readings of the training examples, in ``train_examples``' order (``None``: no teachers)."""
        if self.teachers is None:
            return None
        full_split = load_split("train", self.root, exclude_tune=True)
        return load_teachers(self.teachers, full_split, self.train_indices)

    @cached_property
    def train_ids(self) -> list[list[int]]:
        return self.token_ids(self.train_examples)

    def token_ids(self, examples: Sequence[Example]) -> list[list[int]]:
        """Unknown words read as the agent reads them (``mend_unknown``); training has none, only tuning does."""
        return [self.vocabulary.encode(x.tokens, mend_unknown=True) for x in examples]

    def _loader(
        self,
        examples: list[Example],
        ids: list[list[int]],
        shuffle: bool,
        extra: dict[str, torch.Tensor] | None = None,
    ) -> DataLoader:
        def collate(rows: list[int]) -> dict[str, torch.Tensor]:
            batch = goal_batch([examples[i] for i in rows], [ids[i] for i in rows])
            return batch | {key: value[rows] for key, value in (extra or {}).items()}

        return DataLoader(
            range(len(examples)),
            batch_size=self.batch_size if shuffle else self.val_batch_size,
            sampler=EpochOrder(len(examples), self.seed) if shuffle else None,
            collate_fn=collate,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_examples, self.train_ids, shuffle=True, extra=self.teacher_targets)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_examples, self.token_ids(self.val_examples), shuffle=False)
