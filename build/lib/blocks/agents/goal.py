"""Acting from the goal head (ours): step the chosen block towards where the network says its goal is.

A network trained with ``network.goal_head=true`` (or ``network.goal_map=true``) predicts, from the same images,
instruction and previous action as its action heads, the offset from the moved block to its goal. This agent
reads that offset afresh at every step and moves the block the block head picks one step along the axis with
the larger remaining offset, or stops when the offset on both axes is under ``stop_within`` steps. A move that
leaves the picture unchanged failed (another block or the edge was in the way): the next step tries the other
axis. The network is unchanged; only the rule that turns its outputs into an action differs from
:class:`PolicyAgent`'s most probable action. Given several networks (an ensemble) it averages their goal
predictions and block log-probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from blocks.agents.baselines import Seed
from blocks.agents.policy import PolicyAgent
from blocks.corpus.text import Vocabulary
from blocks.errors import ConfigError
from blocks.model.policy import PolicyNetwork
from blocks.world.geometry import BLOCK_SIDE, NUM_DIRECTIONS, STEP, STOP
from blocks.world.task import Task

STEP_IN_BLOCKS = STEP / BLOCK_SIDE  # one move, 0.66 block lengths: the unit of the predicted offsets' grid
LEFT, RIGHT, UP, DOWN = range(4)


class GoalSeekingAgent(PolicyAgent):
    """Moves the predicted block towards the predicted goal; see the module docstring."""

    def __init__(
        self,
        policy: PolicyNetwork | Sequence[PolicyNetwork],
        vocabulary: Vocabulary | Sequence[str] | Sequence[Vocabulary | Sequence[str]],
        frames: int = 5,
        image_size: int = 120,
        stop_within: float = 0.5,
        device: str | torch.device | None = None,
        render: str = "flat",
    ):
        super().__init__(policy, vocabulary, frames, image_size, greedy=True, device=device, render=render)
        if not all(p.has_goal_head for p in self.policies):
            raise ConfigError(
                "agent=goal needs a network with a goal head: a checkpoint trained with network.goal_head=true "
                "or network.goal_map=true"
            )
        if stop_within <= 0:
            raise ConfigError(f"agent.stop_within must be positive, got {stop_within}")
        self.stop_within = stop_within

    def begin(
        self, tasks: Sequence[Task], seed: Seed = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks, seed, instructions)
        self.blocked_axis = np.full(len(tasks), -1)  # axis (0: x, 1: z) of a move that just failed, else -1
        self.last_frame: np.ndarray | None = None

    @torch.no_grad()
    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        frame, previous = observation["image"], observation["previous_action"]
        distribution, goal = self.read(observation, goal=True)
        block = distribution.block_log_probs.argmax(1).cpu().numpy()
        offset = goal[:, 2:].cpu().numpy()  # (n, 2): x, z in block lengths

        if self.last_frame is not None:
            moved = (previous >= 0) & (previous != STOP)
            unchanged = (frame == self.last_frame).reshape(len(frame), -1).all(axis=1)
            axis_of_previous = (previous % NUM_DIRECTIONS) // 2  # left/right: x, up/down: z
            self.blocked_axis = np.where(
                moved & unchanged, axis_of_previous, np.where(moved, -1, self.blocked_axis)
            )
        self.last_frame = frame.copy()

        remaining = np.abs(offset)
        remaining[self.blocked_axis == 0, 0] = 0.0
        remaining[self.blocked_axis == 1, 1] = 0.0
        axis = remaining.argmax(axis=1)
        rows = np.arange(len(axis))
        go = remaining[rows, axis] >= self.stop_within * STEP_IN_BLOCKS
        positive = offset[rows, axis] > 0
        direction = np.where(axis == 0, np.where(positive, RIGHT, LEFT), np.where(positive, UP, DOWN))
        return np.where(go, block * NUM_DIRECTIONS + direction, STOP)
