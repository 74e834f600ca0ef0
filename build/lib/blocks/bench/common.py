"""What the benchmarks share: a timed loop and boards made up without the corpus."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def rate(work: Callable[[], int], min_seconds: float = 2.0) -> float:
    """Units of work per second: ``work()`` returns how many units it did; repeated for ``min_seconds``."""
    work()  # warm-up
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < min_seconds:
        done += work()
    return done / elapsed


def random_tasks(n: int, seed: int = 0):
    """Boards of 20 blocks on a grid (no overlaps), each with one block moved: no corpus needed."""
    from blocks.world.task import Task

    rng = np.random.default_rng(seed)
    cells = np.stack(np.meshgrid(np.linspace(-0.9, 0.9, 8), np.linspace(-0.9, 0.9, 8)), -1).reshape(-1, 2)
    tasks = []
    for _ in range(n):
        start = cells[rng.choice(len(cells), 20, replace=False)] + rng.uniform(-0.02, 0.02, (20, 2))
        goal = start.copy()
        goal[rng.integers(20)] = rng.uniform(-0.9, 0.9, 2)
        tasks.append(Task(start, goal, "logo" if rng.random() < 0.5 else "digit"))
    return tasks


def no_textures() -> bool:
    from blocks.corpus.download import CorpusError, ensure_file

    try:
        ensure_file("textures/sri.png")
    except CorpusError:
        print("(logo textures unavailable: rendering plain faces)")
        return True
    return False
