"""Rewards for the learners (section 6 of docs/environment.md, the release's "type 4").

reward = problem reward + F1 (distance shaping) + F2 (trajectory shaping), each term switchable. A failed move
is paid -1 and nothing else, and so is a STOP right after one (the environments pass it as failed). All
functions work on batches of boards as numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from blocks.errors import ConfigError
from blocks.world.geometry import BLOCK_SIDE

REWARD_PRESETS = ("shaped", "no_f1", "no_f2", "distance", "problem")


@dataclass(frozen=True)
class RewardConfig:
    """Which terms make up the reward, and their constants (the paper's delta = delta_f = 0.02)."""

    problem: bool = True  # +1 / -1 at STOP inside / outside the relaxed goal, -delta per move
    f1: bool = True  # phi1(s') - phi1(s), phi1 = -D / L
    f2: bool = True  # o_t - o_prev, o_t = 1 when the action follows the demonstration, else -delta_f
    distance: bool = False  # replace the problem reward with -D(s') / L
    step_penalty: float = 0.02
    trajectory_penalty: float = 0.02
    failure_reward: float = -1.0
    # Pay a move of a block that is not on the board as a failed move. In the release such a cube is hidden where
    # an earlier episode left it and still moves; moved again and again it reaches an edge and fails (-1). Here
    # it cannot move at all, and without this a policy from scratch learns to move absent blocks, which costs
    # only the step penalty (docs/experiments/release-fidelity.md, w/o sup. init).
    absent_move_fails: bool = False

    @classmethod
    def preset(cls, name: str) -> RewardConfig:
        """The paper's variants: shaped (default), no_f1, no_f2, distance (w/ distance reward), problem alone."""
        presets = {
            "shaped": cls(),
            "no_f1": cls(f1=False),
            "no_f2": cls(f2=False),
            "distance": cls(distance=True),
            "problem": cls(f1=False, f2=False),
        }
        if name not in presets:
            raise ConfigError(
                f"unknown reward data.reward={name!r}; choose one of {', '.join(REWARD_PRESETS)}"
            )
        return presets[name]

    @property
    def initial_trajectory_potential(self) -> float:
        """o_prev at the start of every episode."""
        return -self.trajectory_penalty


def trajectory_potential(
    gold_positions: np.ndarray,
    actions: np.ndarray,
    demo_points: np.ndarray,
    demo_actions: np.ndarray,
    penalty: float = 0.02,
) -> np.ndarray:
    """phi2 for a batch: 1 where the action is the demonstration's at the demonstration point nearest the gold block.

    ``gold_positions (N, 2)``: where the block the demonstration moves stands before the action.
    ``demo_points (N, P, 2)`` and ``demo_actions (N, P)`` are padded with NaN and -1; the first nearest point
    wins ties, and a point farther than one block length, or without an action, never matches.
    """
    gaps = np.linalg.norm(demo_points - gold_positions[:, None, :], axis=-1)
    gaps = np.where(np.isnan(gaps), np.inf, gaps)
    nearest = gaps.argmin(axis=1)
    rows = np.arange(len(actions))
    match = (gaps[rows, nearest] < BLOCK_SIDE) & (demo_actions[rows, nearest] == actions)
    return np.where(match, 1.0, -penalty)


def step_rewards(
    config: RewardConfig,
    error_before: np.ndarray,
    error_after: np.ndarray,
    failed: np.ndarray,
    is_stop: np.ndarray,
    phi2: np.ndarray | None,
    previous_phi2: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Reward of each step and the updated F2 memory.

    Errors are D / L before and after the step. ``phi2``/``previous_phi2`` may be None when F2 is off.
    A failed move earns ``failure_reward`` alone and leaves the F2 memory untouched.
    """
    reward = np.zeros_like(error_after)
    if config.distance:
        reward -= error_after
    elif config.problem:
        stop_reward = np.where(error_after < 1.0, 1.0, -1.0)
        reward += np.where(is_stop, stop_reward, -config.step_penalty)
    if config.f1:
        reward += error_before - error_after
    new_memory = previous_phi2
    if config.f2:
        if phi2 is None or previous_phi2 is None:
            raise ValueError("F2 needs the trajectory potential and its memory")
        reward += phi2 - previous_phi2
        new_memory = np.where(failed, previous_phi2, phi2)
    reward = np.where(failed, config.failure_reward, reward)
    return reward, new_memory
