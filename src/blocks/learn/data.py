"""LightningDataModules: demonstration (context, action) pairs for supervised learning, and on-policy rollouts.

Both load the corpus, build the vocabulary from the 11,196 training examples, and validate on the tuning split
(675 examples) by rolling out the greedy policy. Everything runs in the main process: rendering is cheap numpy,
and a loader worker rendering the next supervised batch measured slower on 2 cores (docs/results.md#speed).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Callable, Sequence
from functools import cached_property, partial

import numpy as np
import pytorch_lightning as pl
import torch
import torch.distributed as dist
from pytorch_lightning.trainer.states import TrainerFn
from torch.utils.data import DataLoader, Dataset, IterableDataset, Sampler

from blocks.corpus.loader import Example, load_split
from blocks.corpus.text import Vocabulary
from blocks.errors import ConfigError
from blocks.learn.rollout import (
    PendingRollout,
    Rollout,
    RolloutPiece,
    collect_device_rollout,
    collect_rollout,
)
from blocks.model.policy import PolicyNetwork, goal_targets, pad_token_ids
from blocks.render.factory import RENDERERS, make_renderer
from blocks.render.release import ReleaseRenderer
from blocks.render.renderer import Renderer
from blocks.tensor_world import TensorBlocksEnv, device_renderer
from blocks.world.geometry import HORIZON, MAX_BLOCKS, STOP, STOP_DIRECTION
from blocks.world.planner import Demonstration, Oracle, check_route, demonstration, plan_demonstrations
from blocks.world.rewards import RewardConfig
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv

log = logging.getLogger(__name__)
SAMPLINGS = ("shuffle", "replay")  # how supervised batches are drawn (DemonstrationDataModule)
SIMULATORS = ("numpy", "torch")  # where rollouts run: numpy on the CPU, or torch on the policy's device


def distributed_rank() -> tuple[int, int]:
    """(rank, world size) of this process; (0, 1) outside DDP."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class EpochOrder(Sampler[int]):
    """The order of ``count`` items in epoch ``e``, a function of (seed, epoch) alone, so that a run resumed at an
    epoch's start sees the same order as one never stopped.

    It is the order a shuffling ``DataLoader`` with a generator seeded ``seed`` gives in its ``e``-th epoch (each
    epoch draws the loader's base seed, a permutation, and a second permutation when the sampler runs out),
    replayed from the seed: the runs made before resuming was exact keep their figures. The trainer calls
    ``set_epoch`` before each epoch.
    """

    def __init__(self, count: int, seed: int, resume_at: tuple[int, int] | None = None, fixed: bool = False):
        """``resume_at=(epoch, done)``: that epoch, when it comes, leaves out its first ``done`` items (already
        trained on before a mid-epoch checkpoint); its length stays the epoch's, as the trainer counts it.
        ``fixed``: epoch 0's order in every epoch."""
        self.count, self.seed, self.epoch, self.resume_at, self.fixed = count, seed, 0, resume_at, fixed

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed)
        for _ in range(1 if self.fixed else self.epoch + 1):
            torch.empty((), dtype=torch.int64).random_(generator=generator)
            order = torch.randperm(self.count, generator=generator)
            torch.randperm(self.count, generator=generator)
        skip = 0
        if self.resume_at is not None and self.resume_at[0] == self.epoch:
            skip, self.resume_at = self.resume_at[1], None
        return iter(order[skip:].tolist())


class ReplayBatches(Sampler[list[int]]):
    """Batches as the release's supervised stage drew them (``data.sampling=replay``): the examples one by one
    in the epoch's order; after each, its steps enter a memory of the last ``memory`` steps and one batch is drawn
    from it: ``batch_size / 2`` distinct steps, then up to ``batch_size / 2`` more distinct ones (the two halves may
    share steps). One Adam step per example, so about twice the updates of shuffled batches per epoch, each
    leaning on the latest examples.

    ``steps[i]``: the dataset indices of example i's steps. The order is :class:`EpochOrder`'s, or with
    ``fixed_order`` epoch 0's order every epoch (the release shuffled its data once). The memory at an epoch's
    start is the end of the previous epoch's, rebuilt from that epoch's order, and each epoch draws from its own
    generator: a function of (seed, epoch), so resuming mid-epoch (``resume_at=(epoch, batches done)``) is exact.
    """

    def __init__(
        self,
        steps: Sequence[np.ndarray],
        seed: int,
        batch_size: int = 32,
        memory: int = 2000,
        fixed_order: bool = False,
        resume_at: tuple[int, int] | None = None,
    ):
        self.steps, self.seed, self.batch_size, self.memory = steps, seed, batch_size, memory
        self.fixed_order, self.resume_at, self.epoch = fixed_order, resume_at, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.steps)

    def order(self, epoch: int) -> list[int]:
        sampler = EpochOrder(len(self.steps), self.seed, fixed=self.fixed_order)
        sampler.set_epoch(epoch)
        return list(sampler)

    def __iter__(self):
        memory: list[np.ndarray] = []  # newest example last
        held = 0
        if self.epoch > 0:  # the previous epoch's last examples, as many as the memory held at its end
            for i in reversed(self.order(self.epoch - 1)):
                if held >= self.memory:
                    break
                memory.insert(0, self.steps[i])
                held += len(self.steps[i])
        rng = np.random.default_rng([self.seed, self.epoch])
        skip = 0
        if self.resume_at is not None and self.resume_at[0] == self.epoch:
            skip, self.resume_at = self.resume_at[1], None
        half = self.batch_size // 2
        for done, i in enumerate(self.order(self.epoch)):
            memory.append(self.steps[i])
            pool = np.concatenate(memory)[-self.memory :]
            first = rng.choice(len(pool), min(half, len(pool)), replace=False)
            second = rng.choice(len(pool), min(self.batch_size - len(first), len(pool)), replace=False)
            if done >= skip:
                yield pool[np.concatenate([first, second])].tolist()
            while sum(len(m) for m in memory[1:]) >= self.memory:
                memory.pop(0)


class PositionedLoader(DataLoader):
    """A loader whose place in its epoch the data module's checkpoint state holds (``StreamState``, or
    ``DemonstrationDataModule.state_dict``), so that a run resumed mid-epoch goes on exactly. Saying so (the
    ``state_dict`` interface, with nothing of its own to save) keeps the trainer from warning that it may not."""

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


def epoch_shard(count: int, per_rank: int, seed: int, epoch: int) -> np.ndarray:
    """This rank's ``per_rank`` indices of ``count`` items for ``epoch``: a permutation shared by all ranks, dealt
    round-robin and wrapped around, so that every rank gets the same number (no rank waits for another)."""
    rank, world = distributed_rank()
    order = np.random.default_rng([seed, epoch]).permutation(count)
    return np.resize(order, per_rank * world)[rank::world]


def batches_done(trainer: pl.Trainer | None) -> int | None:
    """Batches of the current epoch whose step completed, while fitting (None otherwise): what a checkpoint
    taken now has trained on, however far the loader has already read ahead."""
    if trainer is None or trainer.state.fn != TrainerFn.FITTING:
        return None
    return int(trainer.fit_loop.epoch_loop.batch_progress.current.completed)


class StreamState:
    """Checkpointing of a data module's ``stream``: its epoch and the batches of it already trained on.

    While fitting, the count is the trainer's (batches whose step completed): a batch the stream has handed out
    but the trainer has not used yet (a prefetch) must be generated again after a resume.
    """

    def state_dict(self) -> dict[str, int]:
        done = batches_done(self.trainer)
        return {"epoch": self.stream.epoch, "consumed": int(self.stream.consumed if done is None else done)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.stream.epoch = int(state["epoch"])
        if "consumed" in state:
            self.stream.consumed = int(state["consumed"])
        else:  # checkpoints before 2026-11-26 counted whole rollouts
            self.stream.consumed = int(state["position"]) * self.stream.batches_per_rollout


class BlocksDataModule(pl.LightningDataModule):
    """Corpus, vocabulary, renderer and the validation stream shared by both learners."""

    def __init__(
        self,
        root: str | None = None,
        image_size: int = 120,
        frames: int = 5,
        max_train_examples: int | None = None,
        max_val_examples: int | None = None,
        val_batch_size: int = 128,
        seed: int = 0,
        demonstration_route: str = "astar",
        demonstration_fraction: float = 1.0,
        render: str = "flat",
    ):
        super().__init__()
        if render not in RENDERERS:
            raise ConfigError(f"data.render={render!r}: unknown picture; one of {', '.join(RENDERERS)}")
        self.render = render
        if not 0.0 <= demonstration_fraction <= 1.0:
            raise ConfigError(f"data.demonstration_fraction must lie in [0, 1], got {demonstration_fraction}")
        self.demonstration_fraction = demonstration_fraction
        self.demonstration_route = check_route(demonstration_route, "data.demonstration_route")
        self.root = root
        self.image_size = image_size
        self.frames = frames
        self.max_train_examples = max_train_examples
        self.max_val_examples = max_val_examples
        self.val_batch_size = val_batch_size
        self.seed = seed

    @cached_property
    def vocabulary(self) -> Vocabulary:
        """Built from all 11,196 training examples, whatever subset is trained on, so checkpoints agree."""
        return Vocabulary.build(x.tokens for x in load_split("train", self.root, exclude_tune=True))

    @cached_property
    def train_examples(self) -> list[Example]:
        """The training examples (``max_train_examples`` of them, if set)."""
        examples = load_split("train", self.root, exclude_tune=True)
        if self.max_train_examples is not None:
            order = np.random.default_rng(self.seed).permutation(len(examples))[: self.max_train_examples]
            examples = [examples[i] for i in sorted(order)]
        return examples

    @cached_property
    def demonstrated_examples(self) -> list[Example]:
        """The training examples that carry a demonstration: all of them, or a ``demonstration_fraction`` share
        drawn with the seed (the paper's Figure 4); the others give only their goal. None at 0."""
        examples = self.train_examples
        keep = round(self.demonstration_fraction * len(examples))
        chosen = np.sort(np.random.default_rng(self.seed).permutation(len(examples))[:keep])
        return [examples[i] for i in chosen]

    @cached_property
    def _demonstrated_keys(self) -> set[bytes]:
        return {x.task.key() for x in self.demonstrated_examples}

    def plan_demonstrations(self) -> None:
        """Plan the demonstrated examples' paths up front, on every core (the first epoch would plan them one by
        one between rollouts)."""
        tasks = [x.task for x in self.demonstrated_examples]
        if tasks:
            log.info("planning the demonstrations of %d training examples", len(tasks))
            plan_demonstrations(tasks, self.demonstration_route, processes=os.cpu_count() or 1)

    def demonstrations(self, task: Task) -> Demonstration | None:
        """The demonstration of ``task`` along the configured route; None for a task kept without one."""
        if self.demonstration_fraction < 1.0 and task.key() not in self._demonstrated_keys:
            return None
        return demonstration(task, route=self.demonstration_route)

    @cached_property
    def val_examples(self) -> list[Example]:
        examples = load_split("tune", self.root)
        return examples[: self.max_val_examples] if self.max_val_examples is not None else examples

    @cached_property
    def renderer(self) -> Renderer | ReleaseRenderer:
        return make_renderer(self.render, self.root, self.image_size)

    def token_ids(self, examples: Sequence[Example]) -> list[list[int]]:
        return [self.vocabulary.encode(x.tokens) for x in examples]

    def val_dataloader(self) -> DataLoader:
        """Batches of tuning-example indices; the learner rolls out its greedy policy on them."""
        return DataLoader(range(len(self.val_examples)), batch_size=self.val_batch_size, collate_fn=list)


# -- supervised: demonstration pairs ------------------------------------------------------------------------------
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
        H200 trained at about 1,600 frames/s with 16 pieces, 23,500 with one; docs/results.md#speed).
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
        return PositionedLoader(self.stream, batch_size=None, collate_fn=_identity)


def _identity(batch: RolloutPiece) -> RolloutPiece:
    return batch


# -- learners that roll out one example at a time (SPO) ------------------------------------------------------------
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
