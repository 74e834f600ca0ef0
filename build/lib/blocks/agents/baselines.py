"""The paper's non-learned systems: STOP, RANDOM and DEMONSTRATIONS.

An agent sees a batch of episodes: ``begin(tasks, seed)`` once, then ``act(observation)`` each step with the
vector environment's observation, returning one action id per board. ``seed`` is one seed per episode (the
evaluator derives each from the run's seed and the example's place in the split, so that a figure does not
depend on how the examples were batched), or a single int for the whole batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from blocks.world.geometry import NUM_ACTIONS, STOP
from blocks.world.planner import demonstration
from blocks.world.task import Task

Seed = int | Sequence[int] | None  # one per episode, or one for the batch


def episode_seeds(seed: Seed, count: int, first: int = 0) -> list[int]:
    """One seed per episode: as given, or derived from a single seed (0 when None) and the episodes' places
    ``first``, ``first + 1``, ... (the evaluator passes each example's place in the split)."""
    if seed is None or isinstance(seed, int | np.integer):
        sequences = (np.random.SeedSequence([int(seed or 0), first + i]) for i in range(count))
        return [int(s.generate_state(1)[0]) for s in sequences]
    if len(seed) != count:
        raise ValueError(f"{len(seed)} seeds for {count} episodes")
    return [int(s) for s in seed]


class Agent:
    """Base class: agents that need the images say so, so that the evaluator renders only for them."""

    needs_images = False

    def begin(
        self, tasks: Sequence[Task], seed: Seed = None, instructions: Sequence[str] | None = None
    ) -> None:
        self.num_envs = len(tasks)

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError


class StopAgent(Agent):
    """Stops at once: its error is the distance between start and goal."""

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        return np.full(self.num_envs, STOP, np.int64)


class RandomAgent(Agent):
    """Uniform over the 81 actions until it samples STOP or reaches the horizon; each episode draws from its own
    seeded stream, so its actions do not depend on which episodes share its batch."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def begin(
        self, tasks: Sequence[Task], seed: Seed = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks)
        self.rngs = [
            np.random.default_rng(s) for s in episode_seeds(self.seed if seed is None else seed, len(tasks))
        ]

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        return np.array([rng.integers(NUM_ACTIONS) for rng in self.rngs], np.int64)


class DemonstrationAgent(Agent):
    """Replays the shortest-path demonstration of each task."""

    def begin(
        self, tasks: Sequence[Task], seed: Seed = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks)
        plans = [demonstration(t).actions for t in tasks]
        self.plans = np.full((len(tasks), max(len(p) for p in plans) + 1), STOP, np.int64)
        for i, p in enumerate(plans):
            self.plans[i, : len(p)] = p

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        step = np.minimum(observation["steps"], self.plans.shape[1] - 1)
        return self.plans[np.arange(self.num_envs), step]
