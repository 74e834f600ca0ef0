"""SUPERVISED with an oracle planner (the paper's section 7 variant): the network names the block and its target,
the planner walks it there on the simulator's own board.

From the first picture, the instruction and no previous action, the network's block head picks the block and its
goal head the target position (a network trained by ``model=target``, or any with ``network.goal_head=true``).
The planner then plans on the true start board, which an agent acting from pictures could not read: this agent
measures how well the network says *what* to do when *how* is solved for it, not a way to follow instructions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from blocks.agents.baselines import Seed
from blocks.agents.policy import PolicyAgent
from blocks.errors import ConfigError
from blocks.world.geometry import BLOCK_SIDE, HORIZON, STOP
from blocks.world.planner import plan
from blocks.world.task import Task


class OraclePlannerAgent(PolicyAgent):
    """Reads the block and target once, then replays the planner's path (``route``) to the cell nearest it."""

    def __init__(self, *args, route: str = "astar", **kwargs):
        super().__init__(*args, **kwargs)
        if not all(p.goal_head is not None for p in self.policies):
            raise ConfigError(
                "agent=oracle_planner reads the goal head's target: a checkpoint trained with model=target or "
                "network.goal_head=true"
            )
        self.route = route

    def begin(
        self, tasks: Sequence[Task], seed: Seed = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks, seed, instructions)
        self.tasks = list(tasks)  # the simulator's boards: what makes the planner an oracle
        self.plans: np.ndarray | None = None

    @torch.no_grad()
    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        if self.plans is None:
            distribution, goal = self.read(observation, goal=True)
            blocks = distribution.block_log_probs.argmax(1).cpu().numpy()
            targets = goal[:, :2].cpu().numpy() * BLOCK_SIDE
            paths = [
                self.path(t, int(b), target) for t, b, target in zip(self.tasks, blocks, targets, strict=True)
            ]
            self.plans = np.full((len(paths), HORIZON + 1), STOP, np.int64)
            for i, path in enumerate(paths):
                self.plans[i, : len(path)] = path
        step = np.minimum(observation["steps"], HORIZON)
        return self.plans[np.arange(len(self.plans)), step]

    def path(self, task: Task, block: int, target: np.ndarray) -> np.ndarray:
        """The planner's actions taking ``block`` to the reachable cell nearest ``target`` (STOP at once for a
        block not on the board or a target where it already stands)."""
        if block >= task.num_blocks:
            return np.array([STOP])
        goal = task.start.copy()
        goal[block] = target
        if np.linalg.norm(target - task.start[block]) <= 0.01:
            return np.array([STOP])
        return plan(Task(task.start, goal, task.decoration), route=self.route).actions
