"""Run one agent on one instruction and keep every frame: for notebooks, GIFs and people who want to look."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from blocks.agents.baselines import Agent
from blocks.render.renderer import Renderer
from blocks.world.geometry import HORIZON, describe_action
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv


@dataclass
class Episode:
    """Frames ``(H, W, 3)`` from the start to the end, the actions taken, and the final figures."""

    instruction: str
    decoration: str = "digit"  # how the blocks are labelled: "digit" or "logo"
    frames: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    error: float = float("nan")
    min_distance: float = float("nan")

    def describe(self) -> list[str]:
        """Each action as the picture names its block: 'block 13 down', 'Toyota left', 'STOP'."""
        return [describe_action(a, self.decoration) for a in self.actions]


def run_episode(
    agent: Agent, task: Task, instruction: str, renderer: Renderer, horizon: int = HORIZON
) -> Episode:
    """Let ``agent`` follow ``instruction`` from ``task.start``; the goal is only used to measure the error."""
    env = VectorBlocksEnv(horizon=horizon, render_frames=renderer.render)
    observation, _ = env.reset([task])
    agent.begin([task], seed=0, instructions=[instruction])
    episode = Episode(
        instruction, task.decoration, frames=[observation["image"][0].transpose(1, 2, 0).copy()]
    )
    while not env.all_done:
        action = agent.act(observation)
        observation, *_ = env.step(action)
        episode.actions.append(int(action[0]))
        episode.frames.append(observation["image"][0].transpose(1, 2, 0).copy())
    (result,) = env.results()
    episode.error, episode.min_distance = result.error, result.min_distance
    return episode
