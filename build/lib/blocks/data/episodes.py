"""``data=episodes``: training examples to roll out inside the learner's step (SPO)."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from functools import cached_property

import torch
from torch.utils.data import DataLoader, IterableDataset

from blocks.data.base import BlocksDataModule, PositionedLoader, StreamState, distributed_rank, epoch_shard
from blocks.data.demonstrations import DemonstrationSteps
from blocks.data.rollouts import SIMULATORS, DeviceWorlds
from blocks.errors import ConfigError
from blocks.tensor_world import TensorBlocksEnv
from blocks.world.geometry import HORIZON
from blocks.world.rewards import RewardConfig
from blocks.world.vector_env import VectorBlocksEnv

log = logging.getLogger(__name__)


class ExampleStream(IterableDataset):
    """Yields this rank's example indices, ``batch_size`` per batch (a list); an epoch visits every example once
    (see RolloutStream for the sharding, the equal batch counts and the resumable ``consumed`` count)."""

    def __init__(self, count: int, seed: int = 0, batch_size: int = 1):
        if batch_size < 1:
            raise ConfigError(f"data.batch_size must be at least 1, got {batch_size}")
        self.count = count
        self.seed = seed
        self.batch_size = batch_size
        self.epoch = 0
        self.consumed = 0

    def __len__(self) -> int:
        _, world = distributed_rank()
        return math.ceil(self.count / (world * self.batch_size))

    def __iter__(self):
        if self.consumed >= len(self):
            self.epoch += 1
            self.consumed = 0
        shard = epoch_shard(self.count, len(self) * self.batch_size, self.seed, self.epoch)
        for start in range(self.consumed * self.batch_size, len(shard), self.batch_size):
            self.consumed += 1
            yield [int(i) for i in shard[start : start + self.batch_size]]


class EpisodeDataModule(StreamState, BlocksDataModule):
    """Training examples by index, ``batch_size`` per batch (1: theirs), for a learner that rolls them out itself
    (its schedule decides, example by example, whether to roll out or to imitate the demonstration); it reads
    :meth:`env` and :meth:`demonstration_batch` from here. ``simulator=torch`` puts the world on the policy's
    device (``blocks.tensor_world``), for batches of hundreds of boards on a GPU."""

    def __init__(
        self,
        reward: str = "shaped",
        horizon: int = HORIZON,
        batch_size: int = 1,
        simulator: str = "numpy",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if simulator not in SIMULATORS:
            raise ConfigError(f"data.simulator={simulator!r}: choose one of {', '.join(SIMULATORS)}")
        self.reward = RewardConfig.preset(reward)
        self.horizon = horizon
        self.batch_size = batch_size
        self.simulator = simulator

    @cached_property
    def stream(self) -> ExampleStream:
        return ExampleStream(len(self.train_examples), self.seed, self.batch_size)

    @cached_property
    def numpy_env(self) -> VectorBlocksEnv:
        return VectorBlocksEnv(
            reward=self.reward, horizon=self.horizon, render_frames=self.renderer.render,
            demonstrations=self.demonstrations,
        )  # fmt: skip

    @cached_property
    def device_env(self) -> DeviceWorlds:
        return DeviceWorlds(self.numpy_env, self.renderer)

    def env(self, device: torch.device | str) -> VectorBlocksEnv | TensorBlocksEnv:
        """The world rollouts run in: numpy on the host, or (``simulator=torch``) torch on ``device``."""
        return self.numpy_env if self.simulator == "numpy" else self.device_env(device)

    @cached_property
    def train_token_ids(self) -> list[list[int]]:
        return self.token_ids(self.train_examples)

    def has_demonstration(self, index: int) -> bool:
        """Whether training example ``index`` has a demonstration (all do, but in Figure 4's runs)."""
        return self.demonstrations(self.train_examples[index].task) is not None

    def demonstration_batch(self, indices: Sequence[int]) -> dict[str, torch.Tensor]:
        """Every step of the demonstrations of training examples ``indices`` (each must have one), in their own
        contexts."""
        steps = DemonstrationSteps([self.train_examples[i] for i in indices],
                                   [self.train_token_ids[i] for i in indices], self.renderer, self.frames,
                                   self.demonstrations)  # fmt: skip
        return steps.collate([steps[i] for i in range(len(steps))])

    def train_dataloader(self) -> DataLoader:
        return PositionedLoader(self.stream, batch_size=None)
