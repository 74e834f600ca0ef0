"""The paper's non-learned systems: STOP, RANDOM and DEMONSTRATIONS.

An agent sees a batch of episodes: ``begin(tasks, seed)`` once, then ``act(observation)`` each step with the
vector environment's observation, returning one action id per board.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from blocks.world.geometry import NUM_ACTIONS, STOP
from blocks.world.planner import demonstration
from blocks.world.task import Task


class Agent:
    """Base class: agents that need the images say so, so that the evaluator renders only for them."""

    needs_images = False

    def begin(
        self, tasks: Sequence[Task], seed: int | None = None, instructions: Sequence[str] | None = None
    ) -> None:
        self.num_envs = len(tasks)

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError


class StopAgent(Agent):
    """Stops at once: its error is the distance between start and goal."""

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        return np.full(self.num_envs, STOP, np.int64)


class RandomAgent(Agent):
    """Uniform over the 81 actions until it samples STOP or reaches the horizon; seeded."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def begin(
        self, tasks: Sequence[Task], seed: int | None = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks)
        self.rng = np.random.default_rng(self.seed if seed is None else seed)

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        return self.rng.integers(NUM_ACTIONS, size=self.num_envs)


class DemonstrationAgent(Agent):
    """Replays the shortest-path demonstration of each task."""

    def begin(
        self, tasks: Sequence[Task], seed: int | None = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks)
        plans = [demonstration(t).actions for t in tasks]
        self.plans = np.full((len(tasks), max(len(p) for p in plans) + 1), STOP, np.int64)
        for i, p in enumerate(plans):
            self.plans[i, : len(p)] = p

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        step = np.minimum(observation["steps"], self.plans.shape[1] - 1)
        return self.plans[np.arange(self.num_envs), step]
