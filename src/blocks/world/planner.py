"""Shortest-path demonstrations (section 5 of docs/environment.md).

Only the block that moves between start and goal is planned for. A* searches the grid of its start position
plus multiples of the step (81 x 81 cells), four neighbours in direction order, cost = moves * s, heuristic =
Euclidean distance to the goal position. Cells overlapping another block (at its start position) are blocked;
there is no board bound. Because the goal is almost never on the grid, the target is the cell within 40 moves
that lies closest to the goal position. Plans are deterministic and cached by (start, goal).

Many paths are equally short. ``route="astar"`` keeps the one this A* finds first, which zigzags irregularly
(``LLLLDDLLDLDLDLDL``). A route with the fewest turns measured no gain and left the package
(docs/experiments/demonstration-routes.md).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from blocks.errors import ConfigError
from blocks.world.geometry import (
    BOARD_HALF,
    COLLISION_REACH,
    DIRECTION_DELTAS,
    HORIZON,
    NUM_DIRECTIONS,
    STEP,
    STOP,
    STOP_DIRECTION,
)
from blocks.world.task import Task
from blocks.world.transitions import overlaps

MOVED_THRESHOLD = 0.01
GRID_RADIUS = 40  # cells each side of the start: 81 x 81
ROUTES = ("astar",)
_CELL_STEPS = np.array([[-1, 0], [1, 0], [0, 1], [0, -1]])  # the four directions, in grid cells


@dataclass(frozen=True, eq=False)
class Demonstration:
    """The moved block, its positions ``points (K+1, 2)`` and the actions ``(K moves, then STOP unless K = 40)``.

    ``points[k]`` is where the block stands before ``actions[k]``.
    """

    block: int
    points: np.ndarray
    actions: np.ndarray

    @property
    def num_moves(self) -> int:
        return len(self.points) - 1


def check_route(route: str, name: str = "demonstration route") -> str:
    """``route`` if it is one of ``ROUTES``; otherwise an error that names the setting."""
    if route not in ROUTES:
        raise ConfigError(f"unknown {name} {route!r}: expected one of {ROUTES}")
    return route


def moved_block(task: Task) -> int:
    """The first block whose start-to-goal distance exceeds 0.01 (0 when none moves)."""
    moved = np.flatnonzero(np.linalg.norm(task.goal - task.start, axis=1) > MOVED_THRESHOLD)
    return int(moved[0]) if len(moved) else 0


def plan(task: Task, max_moves: int = HORIZON, route: str = "astar", clearance: float = 0.0) -> Demonstration:
    """A* shortest path of the moved block to the reachable cell nearest its goal; ``route`` breaks ties.

    ``clearance`` (board units) keeps the path that much farther from the other blocks than a collision needs: an
    agent planning on a board it perceived, with its small misplacements, plans with some.
    """
    check_route(route)
    block = moved_block(task)
    origin = task.start[block]
    goal = task.goal[block]
    others = np.delete(task.start, block, axis=0)

    grid = _grid(origin)
    reach = COLLISION_REACH + clearance
    blocked = (
        overlaps(grid, others, reach).any(axis=-1) if len(others) else np.zeros(grid.shape[:2], dtype=bool)
    )
    heuristic = np.linalg.norm(grid - goal, axis=-1)

    start = (GRID_RADIUS, GRID_RADIUS)
    moves = {start: 0}
    parent: dict[tuple[int, int], tuple[tuple[int, int], int]] = {}
    tie = itertools.count()
    frontier = [(heuristic[start], next(tie), start)]
    best, best_gap = start, heuristic[start]
    closed = set()
    while frontier:
        f, _, cell = heapq.heappop(frontier)
        # Every cell still open has f >= this f; one closer to the goal than ``best`` would need more moves
        # than allowed, so nothing left can win.
        if f - best_gap > max_moves * STEP + 1e-9:
            break
        if cell in closed:
            continue
        closed.add(cell)
        if heuristic[cell] < best_gap:
            best, best_gap = cell, heuristic[cell]
        g = moves[cell]
        if g == max_moves:
            continue
        for direction in range(NUM_DIRECTIONS):
            nxt = (cell[0] + _CELL_STEPS[direction, 0], cell[1] + _CELL_STEPS[direction, 1])
            if not (0 <= nxt[0] < grid.shape[0] and 0 <= nxt[1] < grid.shape[1]) or blocked[nxt]:
                continue
            if g + 1 < moves.get(nxt, max_moves + 1):
                moves[nxt] = g + 1
                parent[nxt] = (cell, direction)
                heapq.heappush(frontier, ((g + 1) * STEP + heuristic[nxt], next(tie), nxt))

    directions = []
    cell = best
    while cell != start:
        cell, direction = parent[cell]
        directions.append(direction)
    directions.reverse()
    points = origin + np.cumsum(np.vstack([[0.0, 0.0], DIRECTION_DELTAS[directions]]), axis=0)
    actions = [block * NUM_DIRECTIONS + d for d in directions]
    if len(directions) < max_moves:
        actions.append(STOP)
    return Demonstration(block, points, np.array(actions, dtype=np.int64))


def _grid(origin: np.ndarray) -> np.ndarray:
    """Board positions ``(81, 81, 2)`` of the grid of steps around ``origin``: ``[i, j] -> (x, z)``."""
    offsets = np.arange(-GRID_RADIUS, GRID_RADIUS + 1)
    return origin + STEP * np.stack(np.meshgrid(offsets, offsets, indexing="ij"), axis=-1)


def _cell(point: np.ndarray, origin: np.ndarray) -> tuple[int, int]:
    """Grid index of a position reached from ``origin`` by whole steps."""
    i, j = np.rint((point - origin) / STEP).astype(int) + GRID_RADIUS
    return int(i), int(j)


def _distances_to(free: np.ndarray, target: tuple[int, int], limit: int) -> np.ndarray:
    """Moves from every free cell to ``target`` (-1: more than ``limit``), by a wavefront over the grid."""
    distance = np.full(free.shape, -1, np.int64)
    distance[target] = 0
    front = np.zeros(free.shape, bool)
    front[target] = True
    for k in range(1, limit + 1):
        grown = np.zeros_like(front)
        grown[1:] |= front[:-1]
        grown[:-1] |= front[1:]
        grown[:, 1:] |= front[:, :-1]
        grown[:, :-1] |= front[:, 1:]
        front = grown & free & (distance < 0)
        if not front.any():
            break
        distance[front] = k
    return distance


class DemonstrationCache:
    """Plans computed once per distinct (start, goal): training never replans."""

    def __init__(self, route: str = "astar") -> None:
        self.route = check_route(route)
        self._plans: dict[bytes, Demonstration] = {}

    def __call__(self, task: Task) -> Demonstration:
        key = task.key()
        if key not in self._plans:
            self._plans[key] = plan(task, route=self.route)
        return self._plans[key]

    def __len__(self) -> int:
        return len(self._plans)


_caches = {route: DemonstrationCache(route) for route in ROUTES}
default_cache = _caches["astar"]


def demonstration(task: Task, route: str = "astar") -> Demonstration:
    """The cached demonstration of ``task`` along ``route`` (see the module docstring)."""
    return _caches[check_route(route)](task)


# -- the oracle: best directions from any board state --------------------------------------------------------------
_ORACLE_LIMIT = 120  # moves: more than any state within the horizon of the start needs


class Oracle:
    """Which directions of the moved block lie on a shortest path to its demonstration's end cell, from any state.

    Demonstrations label only the states on their own path; a learner that strays (a failed move, a wrong turn)
    never sees a label for where it stands. The oracle labels every state: it keeps, per task, the moves to the
    end cell from every cell of the task's grid, with the board's edge and the other blocks (where they stand
    now) as walls. All equally good directions are returned, so no tie-break is imposed on the learner.

    ``stop_radius`` > 0 also counts STOP as good within that many moves of the end cell (one move is 0.66 block
    lengths of error): a learner that cannot see to the step where the goal is may then stop beside it rather
    than step to and fro until the horizon.
    """

    def __init__(self, route: str = "astar", stop_radius: int = 0) -> None:
        if stop_radius < 0:
            raise ValueError(f"stop_radius must be >= 0, got {stop_radius}")
        self.route = check_route(route)
        self.stop_radius = stop_radius
        self._fields: dict[bytes, tuple[bytes, np.ndarray]] = {}

    def _field(self, task: Task, block: int, end: tuple[int, int], others: np.ndarray) -> np.ndarray:
        walls = others.tobytes()
        key = task.key()
        cached = self._fields.get(key)
        if cached is None or cached[0] != walls:
            grid = _grid(task.start[block])
            free = (np.abs(grid) <= BOARD_HALF).all(axis=-1)
            if len(others):
                free &= ~overlaps(grid, others).any(axis=-1)
            free[end] = True  # the end cell is reachable by construction of the demonstration
            distance = _distances_to(free, end, _ORACLE_LIMIT).astype(np.int8)
            cached = (walls, distance)
            self._fields[key] = cached
        return cached[1]

    def __call__(self, tasks: Sequence[Task], positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(moved block ``(N,)``, good directions ``(N, 5)`` bool; index 4 is STOP) for padded ``positions``."""
        blocks = np.zeros(len(tasks), np.int64)
        good = np.zeros((len(tasks), NUM_DIRECTIONS + 1), bool)
        for i, task in enumerate(tasks):
            demo = _caches[self.route](task)
            block = blocks[i] = demo.block
            n = task.num_blocks
            here = positions[i, block]
            others = np.delete(positions[i, :n], block, axis=0)
            end = _cell(demo.points[-1], task.start[block])
            cell = _cell(here, task.start[block])
            if cell == end:
                good[i, STOP_DIRECTION] = True
                continue
            distance = self._field(task, block, end, others)
            size = distance.shape[0]
            neighbours = [(cell[0] + di, cell[1] + dj) for di, dj in _CELL_STEPS]
            inside = [0 <= a < size and 0 <= b < size for a, b in neighbours]
            d_here = distance[cell] if all(0 <= c < size for c in cell) else -1
            if d_here > 0:
                good[i, STOP_DIRECTION] = d_here <= self.stop_radius
                good[i, :NUM_DIRECTIONS] = [
                    ok and distance[nb] == d_here - 1 for ok, nb in zip(inside, neighbours, strict=True)
                ]
            if not good[i].any():  # walled in or off the grid: head straight for the end cell
                gap = np.subtract(end, cell)
                good[i, :NUM_DIRECTIONS] = [gap[0] < 0, gap[0] > 0, gap[1] > 0, gap[1] < 0]
        return blocks, good
