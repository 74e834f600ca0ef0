"""The Blocks world as a Gymnasium environment: one board, the same transition code as the vector env.

The observation is a ``Dict`` any RL library can condition on: the RGB ``image`` ``(size, size, 3)``, the
instruction as ``tokens`` (ids padded with 0 to ``max_tokens``) and its ``length``, and the
``previous_action`` (0 for none yet, else the action id + 1). The ids come from whoever builds the env
(``blocks.gym.make_env`` uses the package's vocabulary), so the world knows nothing of words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from blocks.world.geometry import HORIZON, NUM_ACTIONS, validate_actions
from blocks.world.rewards import RewardConfig
from blocks.world.task import Task
from blocks.world.vector_env import Frames, VectorBlocksEnv


class BlocksEnv(gym.Env):
    """One episode at a time over a list of tasks.

    ``reset(seed=..., options={"index": i})`` starts task ``i`` (a seeded random task without it);
    ``options={"instruction": "..."}`` gives the episode other words than the task's (the tokens in the
    observation follow; it needs ``encode``, the text-to-ids map the builder's vocabulary gives). Episodes
    terminate at STOP and are truncated after ``horizon`` moves. ``info`` carries the task index, the distance
    error, whether the move failed, and the instruction's text when it was given.
    """

    RESET_OPTIONS = ("index", "instruction")

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self,
        tasks: Sequence[Task],
        render_frames: Frames,
        image_size: int = 120,
        instructions: Sequence[str] | None = None,
        token_ids: Sequence[Sequence[int]] | None = None,
        vocab_size: int = 1,
        max_tokens: int = 80,
        reward: RewardConfig | None = None,
        horizon: int = HORIZON,
        render_mode: str | None = "rgb_array",
        encode: Callable[[str], Sequence[int]] | None = None,
    ):
        if not tasks:
            raise ValueError("BlocksEnv needs at least one task")
        for name, given in (("instruction", instructions), ("token id list", token_ids)):
            if given is not None and len(given) != len(tasks):
                raise ValueError(f"give one {name} per task")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.tasks = list(tasks)
        self.instructions = list(instructions) if instructions is not None else None
        self.tokens = np.zeros((len(tasks), max_tokens), np.int64)
        self.lengths = np.ones(len(tasks), np.int64)
        for i, ids in enumerate(token_ids or []):
            ids = list(ids)[:max_tokens]  # the corpus's longest instruction has 77 tokens
            self.tokens[i, : len(ids)] = ids
            self.lengths[i] = max(len(ids), 1)
        self.encode = encode
        self.max_tokens = max_tokens
        self.render_mode = render_mode
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = gym.spaces.Dict(
            {
                "image": gym.spaces.Box(0, 255, (image_size, image_size, 3), np.uint8),
                "tokens": gym.spaces.Box(0, max(vocab_size - 1, 0), (max_tokens,), np.int64),
                "length": gym.spaces.Box(1, max_tokens, (1,), np.int64),
                "previous_action": gym.spaces.Discrete(NUM_ACTIONS + 1),
            }
        )
        self._world = VectorBlocksEnv(reward=reward, horizon=horizon, render_frames=render_frames)
        self.index = 0
        self._words: tuple[str, np.ndarray, int] | None = None  # (text, tokens, length) given at reset

    def _image(self) -> np.ndarray:
        return np.ascontiguousarray(self._world.frames[0].transpose(1, 2, 0))

    def _observation(self) -> dict[str, Any]:
        tokens, length = (
            (self._words[1], self._words[2])
            if self._words
            else (self.tokens[self.index], self.lengths[self.index])
        )
        return {
            "image": self._image(),
            "tokens": tokens.copy(),
            "length": np.array([length], np.int64),
            "previous_action": int(self._world.previous_action[0]) + 1,
        }

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"index": self.index, "error": float(self._world.error[0])}
        if self._words is not None:
            info["instruction"] = self._words[0]
        elif self.instructions is not None:
            info["instruction"] = self.instructions[self.index]
        return info

    def _encoded(self, text: object) -> tuple[str, np.ndarray, int]:
        if not isinstance(text, str):
            raise ValueError(f"options['instruction'] must be a string, got {text!r}")
        if self.encode is None:
            raise ValueError("options['instruction']: this environment has no vocabulary to encode words with "
                             "(build it with encode=..., as blocks.gym.make_env does)")  # fmt: skip
        ids = list(self.encode(text))[: self.max_tokens]
        tokens = np.zeros(self.max_tokens, np.int64)
        tokens[: len(ids)] = ids
        return text, tokens, max(len(ids), 1)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict]:
        super().reset(seed=seed)
        options = options or {}
        unknown = sorted(set(options) - set(self.RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; BlocksEnv takes {list(self.RESET_OPTIONS)}")
        self._words = self._encoded(options["instruction"]) if "instruction" in options else None
        if "index" in options:
            try:
                index = int(options["index"])
            except (TypeError, ValueError):
                raise ValueError(
                    f"reset(options={{'index': ...}}) takes a task number in [0, {len(self.tasks)}), "
                    f"got {options['index']!r}"
                ) from None
            if not 0 <= index < len(self.tasks):
                raise IndexError(f"task index {index} out of range [0, {len(self.tasks)})")
            self.index = index
        else:
            self.index = int(self.np_random.integers(len(self.tasks)))
        self._world.reset([self.tasks[self.index]])
        return self._observation(), self._info()

    def step(self, action: int) -> tuple[dict[str, Any], float, bool, bool, dict]:
        if self._world.num_envs == 0:
            raise RuntimeError("call reset() before step()")
        action = validate_actions(np.array([action]) if np.ndim(action) == 0 else action, 1)
        if self._world.done[0]:
            raise RuntimeError("the episode has ended; call reset()")
        _, reward, terminated, truncated, info = self._world.step(action)
        out = self._info() | {"failed": bool(info["failed"][0])}
        return self._observation(), float(reward[0]), bool(terminated[0]), bool(truncated[0]), out

    def render(self) -> np.ndarray | None:
        if self.render_mode is None:
            return None
        return self._image()
