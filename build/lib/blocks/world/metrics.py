"""Distances between boards and the per-episode figures every agent is judged by (section 7)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from blocks.world.geometry import BLOCK_SIDE


def total_distance(positions: np.ndarray, goals: np.ndarray, present: np.ndarray) -> np.ndarray:
    """D(s): sum over present blocks of the Euclidean distance to the goal, in board units; shape ``(N,)``."""
    return np.where(present, np.linalg.norm(positions - goals, axis=-1), 0.0).sum(axis=-1)


def distance_error(positions: np.ndarray, goals: np.ndarray, present: np.ndarray) -> np.ndarray:
    """D(s) / L: the distance error in block lengths."""
    return total_distance(positions, goals, present) / BLOCK_SIDE


@dataclass
class EpisodeResult:
    """What one episode achieved."""

    error: float  # final D / L
    min_distance: float  # min D / L over visited states, the start included
    steps: int  # actions taken, STOP included
    hit_horizon: bool
    reached_goal: bool  # final D < L (the relaxed goal test)
    failed_moves: int = 0  # moves blocked by another block or the board's edge: a stuck agent repeats them
    right_block: bool = False  # the first block it moved is the one the goal moves (False if it moved none)


def summarize(results: list[EpisodeResult]) -> dict[str, float | int]:
    """Mean and median error and min distance, mean steps, horizon and goal rates, share of failed moves."""
    if not results:
        raise ValueError("no episodes to summarise")
    columns = {k: np.array([asdict(r)[k] for r in results], dtype=np.float64) for k in asdict(results[0])}
    return {
        "n": len(results),
        "mean_error": float(columns["error"].mean()),
        "median_error": float(np.median(columns["error"])),
        "mean_min_distance": float(columns["min_distance"].mean()),
        "median_min_distance": float(np.median(columns["min_distance"])),
        "mean_steps": float(columns["steps"].mean()),
        "horizon_rate": float(columns["hit_horizon"].mean()),
        "goal_rate": float(columns["reached_goal"].mean()),
        "failed_move_rate": float(columns["failed_moves"].sum() / max(columns["steps"].sum(), 1.0)),
        "right_block_rate": float(columns["right_block"].mean()),
    }
