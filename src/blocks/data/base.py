"""What every DataModule shares: the corpus and vocabulary, the tuning split for validation, and an epoch
order that resumes to the batch and shards by rank under DDP (Lightning does not shard an IterableDataset).

Everything runs in the main process: rendering is cheap numpy, and a loader worker rendering the next supervised
batch measured slower on 2 cores (docs/results-archive.md#speed).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from functools import cached_property

import numpy as np
import pytorch_lightning as pl
import torch
import torch.distributed as dist
from pytorch_lightning.trainer.states import TrainerFn
from torch.utils.data import DataLoader, DistributedSampler, Sampler

from blocks.corpus.loader import Example, load_split
from blocks.corpus.text import Vocabulary
from blocks.errors import ConfigError
from blocks.render.factory import check_render, make_renderer
from blocks.render.release import ReleaseRenderer
from blocks.render.renderer import Renderer
from blocks.world.planner import Demonstration, check_route, demonstration, plan_demonstrations
from blocks.world.task import Task

log = logging.getLogger(__name__)


def distributed_rank() -> tuple[int, int]:
    """(rank, world size) of this process; (0, 1) outside DDP."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class EpochOrder(DistributedSampler):
    """The order of ``count`` items in epoch ``e``, a function of (seed, epoch) alone, so that a run resumed at an
    epoch's start sees the same order as one never stopped.

    It is the order a shuffling ``DataLoader`` with a generator seeded ``seed`` gives in its ``e``-th epoch (each
    epoch draws the loader's base seed, a permutation, and a second permutation when the sampler runs out),
    replayed from the seed: the runs made before resuming was exact keep their figures. The trainer calls
    ``set_epoch`` before each epoch.

    Under DDP each of ``world`` ranks takes every ``world``-th item of that order (padded with its first items to a
    multiple of ``world``), the shard Lightning's ``DistributedSamplerWrapper`` gave it; being a
    ``DistributedSampler`` itself, it is not wrapped, so a resumed epoch's shorter shard is not indexed past its
    end (the wrapper indexed the order it had been handed by the full epoch's length).
    """

    def __init__(
        self,
        count: int,
        seed: int,
        resume_at: tuple[int, int] | None = None,
        fixed: bool = False,
        rank: int | None = None,
        world: int | None = None,
    ):
        """``resume_at=(epoch, done)``: that epoch, when it comes, leaves out the first ``done`` items of this
        rank's shard (already trained on before a mid-epoch checkpoint); its length stays the epoch's, as the
        trainer counts it. ``fixed``: epoch 0's order in every epoch. ``rank``, ``world``: this process's place
        (default: the running process group's, or 0 of 1)."""
        if rank is None or world is None:
            rank, world = distributed_rank()
        super().__init__(range(count), num_replicas=world, rank=rank, shuffle=False, drop_last=False)
        self.count, self.seed, self.epoch, self.resume_at, self.fixed = count, seed, 0, resume_at, fixed

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return math.ceil(self.count / self.num_replicas)

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed)
        for _ in range(1 if self.fixed else self.epoch + 1):
            torch.empty((), dtype=torch.int64).random_(generator=generator)
            order = torch.randperm(self.count, generator=generator)
            torch.randperm(self.count, generator=generator)
        order = order.tolist()
        padded = order + order[: len(self) * self.num_replicas - self.count]
        shard = padded[self.rank :: self.num_replicas]
        skip = 0
        if self.resume_at is not None and self.resume_at[0] == self.epoch:
            skip, self.resume_at = self.resume_at[1], None
        return iter(shard[skip:])


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
        sampler = EpochOrder(len(self.steps), self.seed, fixed=self.fixed_order, rank=0, world=1)
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
        check_render(render)
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
