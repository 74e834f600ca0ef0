"""``data=rollouts``: on-policy rollouts of the current policy, on the CPU (numpy) or on its device (torch)."""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Sequence
from functools import cached_property, partial

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from blocks.corpus.loader import Example
from blocks.data.base import BlocksDataModule, PositionedLoader, StreamState, distributed_rank, epoch_shard
from blocks.data.collect import collect_device_rollout, collect_rollout
from blocks.data.rollout_tensors import PendingRollout, Rollout, RolloutPiece
from blocks.errors import ConfigError
from blocks.model.policy import PolicyNetwork, pad_token_ids
from blocks.render.renderer import Renderer
from blocks.tensor_world import TensorBlocksEnv, device_renderer
from blocks.world.geometry import HORIZON
from blocks.world.planner import Demonstration, Oracle, demonstration
from blocks.world.rewards import RewardConfig
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv

log = logging.getLogger(__name__)

SIMULATORS = ("numpy", "torch")  # where rollouts run: numpy on the CPU, or torch on the policy's device


class DeviceWorlds:
    """The torch world (``data.simulator=torch``) with a numpy world's rewards, horizon and demonstrations, built
    once for each device it is asked for."""

    def __init__(self, env: VectorBlocksEnv, renderer: Renderer):
        self.env = env
        self.renderer = renderer
        self.worlds: dict[torch.device, TensorBlocksEnv] = {}

    def __call__(self, device: torch.device | str) -> TensorBlocksEnv:
        device = torch.device(device)
        if device not in self.worlds:
            self.worlds[device] = TensorBlocksEnv(
                self.env.reward_config, self.env.horizon, device_renderer(self.renderer, device),
                self.env.demonstrations, device,
            )  # fmt: skip
        return self.worlds[device]


class RolloutStream(IterableDataset):
    """Yields the pieces of rollouts of the current policy; an epoch visits every example once.

    Each rollout of ``rollouts_per_batch`` episodes (simulated together) makes one optimizer step per group of
    ``episodes_per_update`` episodes, each accumulated over ``chunks_per_update`` backward passes. A rollout is
    sampled when its first piece is trained on (:class:`PendingRollout`). With one update per rollout, the
    default, every update learns from episodes the weights it changes sampled; more updates per rollout learn
    from older weights' episodes, which only the oracle's imitation allows (its labels do not depend on them).

    Under DDP every rank takes its own shard of a shared permutation, samples with its own seed, and yields the
    same number of batches, so that no rank waits for another forever. ``consumed`` (batches of this epoch
    already trained on) makes a stream resumable to the batch: the rollout in progress is collected again and its
    first batches skipped, so a run resumed from a mid-epoch checkpoint ends its epoch exactly where Lightning
    expects it to (and validates there).
    """

    def __init__(
        self,
        examples: Sequence[Example],
        token_ids: Sequence[list[int]],
        renderer: Renderer,
        reward: RewardConfig,
        horizon: int = HORIZON,
        rollouts_per_batch: int = 32,
        episodes_per_update: int | None = None,
        chunks_per_update: int = 1,
        frames: int = 5,
        seed: int = 0,
        demonstrations: Callable[[Task], Demonstration | None] = demonstration,
        oracle: Oracle | None = None,
        simulator: str = "numpy",
    ):
        episodes_per_update = episodes_per_update or rollouts_per_batch
        if episodes_per_update < 1 or rollouts_per_batch % episodes_per_update:
            raise ConfigError("data.batch_size must be a positive multiple of data.episodes_per_update")
        if not 1 <= chunks_per_update <= episodes_per_update:
            raise ConfigError("data.chunks_per_update must lie in [1, data.episodes_per_update]")
        self.examples = examples
        self.token_ids = token_ids
        self.env = VectorBlocksEnv(
            reward=reward, horizon=horizon, render_frames=renderer.render, demonstrations=demonstrations
        )
        self.renderer = renderer
        self.simulator = simulator
        self.device_env = DeviceWorlds(self.env, renderer)  # the torch world on the policy's device
        self.rollouts_per_batch = rollouts_per_batch
        self.updates_per_rollout = rollouts_per_batch // episodes_per_update
        self.chunks_per_update = chunks_per_update
        self.frames = frames
        self.seed = seed
        self.policy: PolicyNetwork | None = None
        self.oracle = oracle  # labels every visited state (the oracle learner); None for the bandit
        self.oracle_rollin = 0.0  # probability of the oracle's action at each step (with an oracle)
        self.epoch = 0
        self.consumed = 0  # batches of this epoch handed out; Lightning stops at len() without exhausting us

    def rollouts_per_epoch(self) -> int:
        _, world = distributed_rank()
        return math.ceil(len(self.examples) / (world * self.rollouts_per_batch))

    @property
    def batches_per_rollout(self) -> int:
        return self.updates_per_rollout * self.chunks_per_update

    def __len__(self) -> int:
        return self.rollouts_per_epoch() * self.batches_per_rollout

    def shard(self, epoch: int) -> np.ndarray:
        return epoch_shard(
            len(self.examples), self.rollouts_per_epoch() * self.rollouts_per_batch, self.seed, epoch
        )

    def __iter__(self):
        if self.policy is None:
            raise RuntimeError("RolloutStream has no policy: the learner attaches it at fit start")
        if self.consumed >= len(self):  # the last epoch was used up: start the next one
            self.epoch += 1
            self.consumed = 0
        rank, _ = distributed_rank()
        shard = self.shard(self.epoch)
        first, skip = divmod(self.consumed, self.batches_per_rollout)
        for r in range(first, self.rollouts_per_epoch()):
            chosen = shard[r * self.rollouts_per_batch : (r + 1) * self.rollouts_per_batch]
            seed = np.random.SeedSequence([self.seed, rank, self.epoch, r]).generate_state(1, np.uint64)[0]
            tokens, lengths = pad_token_ids([self.token_ids[i] for i in chosen])
            tasks = [self.examples[i].task for i in chosen]
            pending = PendingRollout(
                partial(self.collect, tasks, tokens, lengths, int(seed) % (2**63)),
                self.updates_per_rollout, self.chunks_per_update,
            )  # fmt: skip
            for index in range(skip, len(pending)):
                self.consumed += 1
                yield RolloutPiece(pending, index)
            skip = 0

    def collect(self, tasks: list[Task], tokens: torch.Tensor, lengths: torch.Tensor, seed: int) -> Rollout:
        """One rollout of the current policy on ``tasks``, sampled with ``seed`` (called from the training step)."""
        if self.simulator == "torch":
            env = self.device_env(next(self.policy.parameters()).device)
            generator = torch.Generator(env.device).manual_seed(seed)
            return collect_device_rollout(self.policy, env, tasks, tokens, lengths, generator, self.frames)
        generator = torch.Generator().manual_seed(seed)
        return collect_rollout(self.policy, self.env, tasks, tokens, lengths, generator, self.frames, self.oracle,
                               self.oracle_rollin)  # fmt: skip


class RolloutDataModule(StreamState, BlocksDataModule):
    """The bandit's training stream: rollouts generated with the learner's current policy at every step."""

    def __init__(
        self,
        reward: str = "shaped",
        horizon: int = HORIZON,
        batch_size: int = 32,
        episodes_per_update: int | None = None,
        chunks_per_update: int | None = None,
        simulator: str = "numpy",
        absent_move_fails: bool = False,
        **kwargs,
    ):
        """``batch_size`` episodes per rollout, one optimizer step per ``episodes_per_update`` of them (default: all,
        one update per rollout), each
        accumulated over ``chunks_per_update`` backward passes. ``simulator=torch`` rolls out on the policy's
        device (``blocks.tensor_world``), for GPUs. The default chunking: on the CPU min(16, episodes_per_update)
        (small pieces stay in cache), with the torch world 1 (on a GPU each piece only adds kernel launches: one
        H200 trained at about 1,600 frames/s with 16 pieces, 23,500 with one; docs/results-archive.md#speed).
        ``absent_move_fails`` pays moves of blocks that are not on the board as failed moves
        (:class:`~blocks.world.rewards.RewardConfig`)."""
        super().__init__(**kwargs)
        if simulator not in SIMULATORS:
            raise ConfigError(f"data.simulator={simulator!r}: choose one of {', '.join(SIMULATORS)}")
        self.simulator = simulator
        self.reward = dataclasses.replace(RewardConfig.preset(reward), absent_move_fails=absent_move_fails)
        self.reward_name = reward
        self.horizon = horizon
        self.batch_size = batch_size
        self.episodes_per_update = episodes_per_update = episodes_per_update or batch_size
        self.chunks_per_update = chunks_per_update or (
            1 if simulator == "torch" else min(16, episodes_per_update)
        )

    @cached_property
    def stream(self) -> RolloutStream:
        if self.reward.f2:  # F2 follows the demonstrations: plan them now rather than during the first epoch
            self.plan_demonstrations()
        return RolloutStream(
            self.train_examples,
            self.token_ids(self.train_examples),
            self.renderer,
            self.reward,
            self.horizon,
            self.batch_size,
            self.episodes_per_update,
            self.chunks_per_update,
            self.frames,
            self.seed,
            self.demonstrations,
            simulator=self.simulator,
        )

    def attach_policy(
        self, policy: PolicyNetwork, oracle: bool = False, oracle_rollin: float = 0.0, stop_radius: int = 0
    ) -> None:
        """Roll out ``policy`` from now on; with ``oracle``, label each visited state with the oracle's actions
        (see :class:`Oracle` for ``stop_radius``) and take them instead of the policy's with probability
        ``oracle_rollin``."""
        if oracle and self.simulator != "numpy":
            raise ConfigError("the oracle's labels come from the numpy planner: use data.simulator=numpy")
        self.stream.policy = policy
        self.stream.oracle = Oracle(self.demonstration_route, stop_radius) if oracle else None
        self.stream.oracle_rollin = oracle_rollin

    def train_dataloader(self) -> DataLoader:
        return PositionedLoader(self.stream, batch_size=None, collate_fn=_as_is)


def _as_is(batch: RolloutPiece) -> RolloutPiece:
    """The stream yields whole pieces: the loader passes them on untouched."""
    return batch
