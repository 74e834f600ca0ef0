"""Run one agent on one instruction and keep every frame: for notebooks, GIFs and people who want to look."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from blocks.agents.baselines import Agent, Seed
from blocks.render.renderer import Renderer
from blocks.world.geometry import HORIZON, describe_action
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv


@dataclass
class Episode:
    """Frames ``(H, W, 3)`` from the start to the end, the block centres ``(n, 2)`` each frame shows, the actions
    taken, and the final figures."""

    instruction: str
    decoration: str = "digit"  # how the blocks are labelled: "digit" or "logo"
    frames: list[np.ndarray] = field(default_factory=list)
    positions: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    error: float = float("nan")
    min_distance: float = float("nan")

    def describe(self) -> list[str]:
        """Each action as the picture names its block: 'block 13 down', 'Toyota left', 'STOP'."""
        return [describe_action(a, self.decoration) for a in self.actions]


def run_episode(
    agent: Agent, task: Task, instruction: str, renderer: Renderer, horizon: int = HORIZON, seed: Seed = 0
) -> Episode:
    """Let ``agent`` follow ``instruction`` from ``task.start``; the goal is only used to measure the error.
    ``seed`` as :meth:`Agent.begin` takes it; ``eval.py`` gives example ``i`` of a split ``episode_seeds(seed, 1, i)``,
    which is what reproduces its episode of a sampling agent."""
    env = VectorBlocksEnv(horizon=horizon, render_frames=renderer.render)
    observation, _ = env.reset([task])
    agent.begin([task], seed=seed, instructions=[instruction])
    n = len(task.start)
    episode = Episode(
        instruction,
        task.decoration,
        frames=[observation["image"][0].transpose(1, 2, 0).copy()],
        positions=[env.positions[0, :n].copy()],
    )
    while not env.all_done:
        action = agent.act(observation)
        observation, *_ = env.step(action)
        episode.actions.append(int(action[0]))
        episode.frames.append(observation["image"][0].transpose(1, 2, 0).copy())
        episode.positions.append(env.positions[0, :n].copy())
    (result,) = env.results()
    episode.error, episode.min_distance = result.error, result.min_distance
    return episode
