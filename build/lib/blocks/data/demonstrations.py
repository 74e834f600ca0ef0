"""``data=demonstrations``: (context, action) pairs along the demonstrations, for the supervised learners."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from blocks.corpus.loader import Example
from blocks.data.base import (
    BlocksDataModule,
    EpochOrder,
    PositionedLoader,
    ReplayBatches,
    batches_done,
    distributed_rank,
)
from blocks.errors import ConfigError
from blocks.model.policy import goal_targets, pad_token_ids
from blocks.render.renderer import Renderer
from blocks.world.geometry import MAX_BLOCKS, STOP, STOP_DIRECTION
from blocks.world.planner import Demonstration, demonstration
from blocks.world.task import Task

log = logging.getLogger(__name__)

SAMPLINGS = ("shuffle", "replay")  # how supervised batches are drawn (DemonstrationDataModule)


class DemonstrationSteps(Dataset):
    """Every (example, step) of the demonstrations; the agent context is rendered when a batch is collated.

    The context at step t uses the demonstration's own previous images and previous action. Labels are the gold
    block and the direction, or STOP (whose block label is the gold block), and for the auxiliary goal loss the
    block's goal and its offset from where the block stands, in block lengths.
    """

    def __init__(
        self,
        examples: Sequence[Example],
        token_ids: Sequence[list[int]],
        renderer: Renderer,
        frames: int = 5,
        demonstrations: Callable[[Task], Demonstration] = demonstration,
        first_step_only: bool = False,
    ):
        """``first_step_only``: one pair per example, its start (``model=target`` learns only there)."""
        self.examples = examples
        self.token_ids = token_ids
        self.renderer = renderer
        self.frames = frames
        self.plans = [demonstrations(x.task) for x in examples]
        self.index = np.array(
            [
                (i, t)
                for i, p in enumerate(self.plans)
                for t in range(1 if first_step_only else len(p.actions))
            ],
            np.int64,
        )

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> tuple[int, int]:
        return int(self.index[i, 0]), int(self.index[i, 1])

    def collate(self, items: Sequence[tuple[int, int]]) -> dict[str, torch.Tensor]:
        n, k = len(items), self.frames
        positions = np.zeros((n, k, MAX_BLOCKS, 2))
        present = np.zeros((n, k, MAX_BLOCKS), bool)
        exists = np.zeros((n, k), bool)
        logo = np.zeros((n, k), bool)
        previous = np.full(n, -1, np.int64)
        block = np.zeros(n, np.int64)
        direction = np.zeros(n, np.int64)
        goal, position = np.zeros((n, 2)), np.zeros((n, 2))  # the moved block's goal and where it stands
        for row, (i, t) in enumerate(items):
            task, plan = self.examples[i].task, self.plans[i]
            m = task.num_blocks
            for j in range(k):
                step = t - (k - 1) + j
                if step < 0:
                    continue
                exists[row, j] = True
                positions[row, j, :m] = task.start
                positions[row, j, plan.block] = plan.points[step]
                present[row, j, :m] = True
                logo[row, j] = task.decoration == "logo"
            action = int(plan.actions[t])
            previous[row] = plan.actions[t - 1] if t > 0 else -1
            block[row] = plan.block
            direction[row] = STOP_DIRECTION if action == STOP else action % 4
            goal[row], position[row] = task.goal[plan.block], plan.points[t]
        images = np.zeros((n * k, 3, self.renderer.size, self.renderer.size), np.uint8)
        flat = exists.reshape(-1)
        images[flat] = self.renderer.render(
            positions.reshape(n * k, MAX_BLOCKS, 2)[flat],
            present.reshape(n * k, MAX_BLOCKS)[flat],
            logo.reshape(-1)[flat],
        )
        tokens, lengths = pad_token_ids([self.token_ids[i] for i, _ in items])
        return {
            "images": torch.from_numpy(images.reshape(n, k * 3, self.renderer.size, self.renderer.size)),
            "tokens": tokens,
            "lengths": lengths,
            "previous_action": torch.from_numpy(previous),
            "block": torch.from_numpy(block),
            "direction": torch.from_numpy(direction),
            "goal": torch.from_numpy(goal_targets(goal, position)),
        }


class DemonstrationDataModule(BlocksDataModule):
    """Shuffled mini-batches of demonstration pairs (Lightning shards them under DDP with its sampler)."""

    def __init__(
        self,
        batch_size: int = 32,
        first_step_only: bool = False,
        sampling: str = "shuffle",
        fixed_order: bool = False,
        **kwargs,
    ):
        """``sampling``: ``shuffle`` (every step once an epoch, in shuffled batches) or ``replay`` (the release's: one
        batch per example from a memory of the last 2,000 steps, :class:`ReplayBatches`). ``fixed_order``: the
        first epoch's order in every epoch, as the release shuffled its data once."""
        super().__init__(**kwargs)
        if sampling not in SAMPLINGS:
            raise ConfigError(f"data.sampling={sampling!r}: one of {', '.join(SAMPLINGS)}")
        self.batch_size = batch_size
        self.sampling, self.fixed_order = sampling, fixed_order
        self.resume_at: tuple[int, int] | None = None  # (epoch, batches done) of a mid-epoch checkpoint
        self.first_step_only = first_step_only

    @cached_property
    def steps(self) -> DemonstrationSteps:
        examples = self.demonstrated_examples
        if not examples:
            raise ConfigError("data.demonstration_fraction leaves no demonstrations to learn from")
        self.plan_demonstrations()
        return DemonstrationSteps(
            examples,
            self.token_ids(examples),
            self.renderer,
            self.frames,
            self.demonstrations,
            self.first_step_only,
        )

    def train_dataloader(self) -> DataLoader:
        common = {"collate_fn": self.steps.collate}
        if self.sampling == "replay":
            if distributed_rank()[1] > 1:
                raise ConfigError(
                    "data.sampling=replay draws one example's batch at a time: train on one device"
                )
            starts = np.flatnonzero(np.diff(self.steps.index[:, 0], prepend=-1))
            steps = np.split(np.arange(len(self.steps)), starts[1:])
            batches = ReplayBatches(steps, self.seed, self.batch_size, fixed_order=self.fixed_order,
                                    resume_at=self.resume_at)  # fmt: skip
            return PositionedLoader(self.steps, batch_sampler=batches, **common)
        at = self.resume_at and (self.resume_at[0], self.resume_at[1] * self.batch_size)
        order = EpochOrder(len(self.steps), self.seed, at, fixed=self.fixed_order)
        return PositionedLoader(self.steps, batch_size=self.batch_size, sampler=order, **common)

    def state_dict(self) -> dict[str, int]:
        """Where in its epoch a checkpoint was taken (batches completed), so that resuming goes on from there."""
        done = batches_done(self.trainer)
        return {} if done is None else {"epoch": int(self.trainer.current_epoch), "consumed": done}

    def load_state_dict(self, state: dict[str, int]) -> None:
        if "epoch" in state:
            self.resume_at = (int(state["epoch"]), int(state["consumed"]))


# -- bandit: on-policy rollouts ------------------------------------------------------------------------------------
