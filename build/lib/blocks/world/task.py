"""What one episode is about: a start board, a goal board and how the blocks are decorated."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from blocks.world.geometry import MAX_BLOCKS


@dataclass(frozen=True, eq=False)
class Task:
    """Start and goal block centres ``(n, 2)`` in board coordinates (x, z); ``decoration`` is logo or digit."""

    start: np.ndarray
    goal: np.ndarray
    decoration: str = "digit"

    def __post_init__(self) -> None:
        start = np.asarray(self.start, dtype=np.float64)
        goal = np.asarray(self.goal, dtype=np.float64)
        if start.ndim != 2 or start.shape[1] != 2 or not 1 <= start.shape[0] <= MAX_BLOCKS:
            raise ValueError(f"start must have shape (n, 2) with 1 <= n <= {MAX_BLOCKS}, got {start.shape}")
        if goal.shape != start.shape:
            raise ValueError(f"goal shape {goal.shape} differs from start shape {start.shape}")
        if self.decoration not in ("logo", "digit"):
            raise ValueError(f"decoration must be 'logo' or 'digit', got {self.decoration!r}")
        start.setflags(write=False)
        goal.setflags(write=False)
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "goal", goal)

    @property
    def num_blocks(self) -> int:
        return self.start.shape[0]

    def key(self) -> bytes:
        """Identity of the (start, goal) pair, used to cache demonstrations."""
        return self.start.tobytes() + self.goal.tobytes()
