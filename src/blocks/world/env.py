"""The Blocks world as a Gymnasium environment: one board, the same transition code as the vector env."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from blocks.world.geometry import HORIZON, NUM_ACTIONS, validate_actions
from blocks.world.rewards import RewardConfig
from blocks.world.task import Task
from blocks.world.vector_env import Frames, VectorBlocksEnv


class BlocksEnv(gym.Env):
    """One episode at a time over a list of tasks.

    Observation: the current ``(size, size, 3)`` RGB image. ``reset(seed=..., options={"index": i})`` starts
    task ``i`` (a seeded random task without it). Episodes terminate at STOP and are truncated after
    ``horizon`` moves. ``info`` carries the distance error, whether the move failed, and the instruction
    when one was given for the task.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        tasks: Sequence[Task],
        render_frames: Frames,
        image_size: int = 120,
        instructions: Sequence[str] | None = None,
        reward: RewardConfig | None = None,
        horizon: int = HORIZON,
        render_mode: str | None = "rgb_array",
    ):
        if not tasks:
            raise ValueError("BlocksEnv needs at least one task")
        if instructions is not None and len(instructions) != len(tasks):
            raise ValueError("give one instruction per task")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.tasks = list(tasks)
        self.instructions = list(instructions) if instructions is not None else None
        self.render_mode = render_mode
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = gym.spaces.Box(0, 255, (image_size, image_size, 3), np.uint8)
        self._world = VectorBlocksEnv(reward=reward, horizon=horizon, render_frames=render_frames)
        self.index = 0

    def _image(self) -> np.ndarray:
        return np.ascontiguousarray(self._world.frames[0].transpose(1, 2, 0))

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"index": self.index, "error": float(self._world.error[0])}
        if self.instructions is not None:
            info["instruction"] = self.instructions[self.index]
        return info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if options and "index" in options:
            index = int(options["index"])
            if not 0 <= index < len(self.tasks):
                raise IndexError(f"task index {index} out of range [0, {len(self.tasks)})")
            self.index = index
        else:
            self.index = int(self.np_random.integers(len(self.tasks)))
        self._world.reset([self.tasks[self.index]])
        return self._image(), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._world.num_envs == 0:
            raise RuntimeError("call reset() before step()")
        action = validate_actions(np.array([action]) if np.ndim(action) == 0 else action, 1)
        if self._world.done[0]:
            raise RuntimeError("the episode has ended; call reset()")
        _, reward, terminated, truncated, info = self._world.step(action)
        out = self._info() | {"failed": bool(info["failed"][0])}
        return self._image(), float(reward[0]), bool(terminated[0]), bool(truncated[0]), out

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            return None
        return self._image()
