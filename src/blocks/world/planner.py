"""Shortest-path demonstrations (section 5 of docs/environment.md).

Only the block that moves between start and goal is planned for. A* searches the grid of its start position
plus multiples of the step (81 x 81 cells), four neighbours in direction order, cost = moves * s, heuristic =
Euclidean distance to the goal position. Cells overlapping another block (at its start position) are blocked;
there is no board bound. Because the goal is almost never on the grid, the target is the cell within 40 moves
that lies closest to the goal position. Plans are deterministic and cached by (start, goal).

Many paths are equally short. ``route="astar"`` keeps the one this A* finds first, which runs straight first and
turns late (``UUUUUULLLUUUS``). ``route="release"`` returns the original release's own path
(``ULULLUUUUUUUS``), the one every label and F2 reward of the paper came from: the same search with the release's
binary heap, its single-precision step and costs, and its comparison of a new cost (not yet rounded) against a
stored one (rounded), which decide between equally short paths (docs/environment.md, section 5). A route with
the fewest turns measured no gain and left the package (docs/experiments/demonstration-routes.md).
"""

from __future__ import annotations

import heapq
import itertools
import multiprocessing
import signal
import sys
import threading
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import numpy as np

from blocks.errors import ConfigError
from blocks.world.geometry import (
    BOARD_HALF,
    COLLIDER_SIDE,
    COLLISION_REACH,
    DIRECTION_DELTAS,
    HORIZON,
    NUM_DIRECTIONS,
    RAY_REACH,
    RAY_SPREAD,
    STEP,
    STOP,
    STOP_DIRECTION,
)
from blocks.world.task import Task
from blocks.world.transitions import overlaps

MOVED_THRESHOLD = 0.01
GRID_RADIUS = 40  # cells each side of the start: 81 x 81
ROUTES = ("astar", "release")
# Which moves a plan may make: the release planner's square test, or the world's rays.
PLAN_RULES = ("square", "rays")
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


def plan(
    task: Task,
    max_moves: int = HORIZON,
    route: str = "astar",
    clearance: float = 0.0,
    end_clearance: float | None = None,
    rule: str = "square",
) -> Demonstration:
    """A* shortest path of the moved block to the reachable cell nearest its goal; ``route`` breaks ties.

    ``clearance`` (board units) keeps the path that much farther from the other blocks than a collision needs: an
    agent planning on a board it perceived, with its small misplacements, plans with some. ``end_clearance``
    (default: ``clearance``) applies to the last cell alone, which the path may enter but not leave: goals often
    touch another block, and a path that must keep its clearance to the end stops a cell short of them.

    ``rule``: which moves the search allows. ``square`` (the release's planner, so its demonstrations): no cell
    whose square overlaps another block's. ``rays`` (the world's own rule, for an agent): a move is refused where
    the simulator's rays stop it, with the clearance added to their reach and spread, or where it would leave
    the board; a block may then end beside another closer than the square test allows, as the world lets it.
    """
    check_route(route)
    if rule not in PLAN_RULES:
        raise ValueError(f"rule must be one of {PLAN_RULES}, got {rule!r}")
    if end_clearance is not None and not 0 <= end_clearance <= clearance:
        raise ValueError("end_clearance must lie between 0 and clearance")
    block = moved_block(task)
    origin = task.start[block]
    goal = task.goal[block]
    others = np.delete(task.start, block, axis=0)
    if route == "release":
        if clearance or end_clearance:
            raise ValueError("the release's route plans without clearance")
        return _demonstration(block, origin, _release_search(origin, goal, others, max_moves), max_moves)

    grid = _grid(origin)
    end_reach = clearance if end_clearance is None else end_clearance
    if rule == "rays":
        path_stops = _ray_stops(grid, others, clearance)
        end_stops = path_stops if end_reach == clearance else _ray_stops(grid, others, end_reach)
        off_board = (np.abs(grid) > BOARD_HALF).any(axis=-1)
    else:
        blocked, last_only = _blocked(grid, others, clearance, end_reach)
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
            if not (0 <= nxt[0] < grid.shape[0] and 0 <= nxt[1] < grid.shape[1]):
                continue
            if rule == "rays":
                if end_stops[cell][direction] or off_board[nxt]:
                    continue
                end_only = path_stops[cell][direction]
            elif blocked[nxt]:
                continue
            else:
                end_only = last_only[nxt]
            if g + 1 < moves.get(nxt, max_moves + 1):
                moves[nxt] = g + 1
                parent[nxt] = (cell, direction)
                if not end_only:
                    heapq.heappush(frontier, ((g + 1) * STEP + heuristic[nxt], next(tie), nxt))
                elif heuristic[nxt] < best_gap:  # an end cell: never expanded, so judged as it is reached
                    best, best_gap = nxt, heuristic[nxt]

    return _demonstration(block, origin, _path(parent, start, best), max_moves)


def _blocked(
    grid: np.ndarray, others: np.ndarray, clearance: float, end_clearance: float
) -> tuple[np.ndarray, np.ndarray]:
    """(cells no path may enter, cells a path may only end in) of ``grid`` around the ``others`` blocks; with
    ``end_clearance <= clearance`` the first lie inside the cells the path's clearance keeps it from."""
    none = np.zeros(grid.shape[:2], dtype=bool)
    if not len(others):
        return none, none
    path = overlaps(grid, others, COLLISION_REACH + clearance).any(axis=-1)
    if end_clearance == clearance:  # every plan without an end clearance of its own: one overlap test
        return path, none
    end = overlaps(grid, others, COLLISION_REACH + end_clearance).any(axis=-1)
    return end, path & ~end


def _ray_stops(grid: np.ndarray, others: np.ndarray, clearance: float) -> np.ndarray:
    """``(81, 81, 4)``: whether the world's rays, ``clearance`` longer and wider, stop each move from each cell."""
    stops = np.zeros((*grid.shape[:2], NUM_DIRECTIONS), dtype=bool)
    if not len(others):
        return stops
    gap = others[None, None] - grid[:, :, None]  # (81, 81, K, 2)
    for direction, (ux, uz) in enumerate(DIRECTION_DELTAS / STEP):
        along = gap[..., 0] * ux + gap[..., 1] * uz
        across = np.abs(gap[..., 0] * uz - gap[..., 1] * ux)
        hit = (
            (along > COLLIDER_SIDE / 2)
            & (along <= RAY_REACH + clearance)
            & (across <= RAY_SPREAD + clearance)
        )
        stops[..., direction] = hit.any(axis=-1)
    return stops


def _path(parent: dict[tuple[int, int], tuple[tuple[int, int], int]], start: tuple[int, int],
          end: tuple[int, int]) -> list[int]:  # fmt: skip
    """The directions from ``start`` to ``end`` along the parent links."""
    directions = []
    cell = end
    while cell != start:
        cell, direction = parent[cell]
        directions.append(direction)
    return directions[::-1]


def _demonstration(block: int, origin: np.ndarray, directions: list[int], max_moves: int) -> Demonstration:
    """The moves (then STOP, unless ``max_moves`` are used) and the points the environment visits along them."""
    directions = directions[:max_moves]
    points = origin + np.cumsum(np.vstack([[0.0, 0.0], DIRECTION_DELTAS[directions]]), axis=0)
    actions = [block * NUM_DIRECTIONS + d for d in directions]
    if len(directions) < max_moves:
        actions.append(STOP)
    return Demonstration(block, points, np.array(actions, dtype=np.int64))


# -- the release's own search (route="release") ----------------------------------------------------------------------
_RELEASE_STEP = float(np.float32(0.1))  # the step in single precision, widened: 0.10000000149011612
_RELEASE_REACH = 0.1524 + float(np.float32(0.002))  # L plus the tolerance in single precision


class _ReleaseHeap:
    """The release's open list: an array min-heap on f alone (equal keys are equal) that can delete an entry."""

    def __init__(self) -> None:
        self.keys: list[
            float
        ] = []  # single-precision values held as Python floats (exact, and fast to compare)
        self.cells: list[tuple[int, int]] = []
        self.slot: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def _swap(self, i: int, j: int) -> None:
        self.keys[i], self.keys[j] = self.keys[j], self.keys[i]
        self.cells[i], self.cells[j] = self.cells[j], self.cells[i]
        self.slot[self.cells[i]], self.slot[self.cells[j]] = i, j

    def _up(self, i: int) -> None:
        while i > 0 and self.keys[(i - 1) // 2] > self.keys[i]:  # strictly greater parent
            self._swap(i, (i - 1) // 2)
            i = (i - 1) // 2

    def _settled(self, i: int) -> bool:
        """The key at ``i`` is <= each existing child's."""
        keys, first = self.keys, 2 * i + 1
        n, key = len(keys), keys[i]
        return (first >= n or key <= keys[first]) and (first + 1 >= n or key <= keys[first + 1])

    def _down(self, i: int) -> None:
        n = len(self.keys)
        while not self._settled(i):
            first, second = 2 * i + 1, 2 * i + 2
            if self.keys[i] > self.keys[first] and (second >= n or self.keys[first] <= self.keys[second]):
                child = first
            else:
                child = second
            self._swap(i, child)
            i = child

    def push(self, key: float, cell: tuple[int, int]) -> None:
        self.keys.append(key)
        self.cells.append(cell)
        self.slot[cell] = len(self.keys) - 1
        self._up(len(self.keys) - 1)

    def _take(self, i: int) -> tuple[int, int]:
        """Remove entry ``i``: the last entry takes its slot, then sifts up if settled there, else down."""
        cell = self.cells[i]
        del self.slot[cell]
        key, last = self.keys.pop(), self.cells.pop()
        if i < len(self.keys):
            self.keys[i], self.cells[i] = key, last
            self.slot[last] = i
            if self._settled(i):
                self._up(i)
            else:
                self._down(i)
        return cell

    def pop(self) -> tuple[int, int]:
        return self._take(0)

    def remove(self, cell: tuple[int, int]) -> None:
        self._take(self.slot[cell])


def _release_search(origin: np.ndarray, goal: np.ndarray, others: np.ndarray, max_moves: int) -> list[int]:
    """The release planner's directions from ``origin`` to the cell nearest ``goal`` (docs/environment.md, 5)."""
    offsets = np.arange(-GRID_RADIUS, GRID_RADIUS + 1)
    grid = origin + _RELEASE_STEP * np.stack(np.meshgrid(offsets, offsets, indexing="ij"), axis=-1)
    blocked = (
        overlaps(grid, others, _RELEASE_REACH).any(axis=-1) if len(others) else np.zeros(grid.shape[:2], bool)
    )
    gap = np.linalg.norm(grid - goal, axis=-1)
    start = (GRID_RADIUS, GRID_RADIUS)
    cost = {start: np.float32(0.0)}  # g, stored in single precision
    depth = {start: 0}
    parent: dict[tuple[int, int], tuple[tuple[int, int], int]] = {}
    frontier = _ReleaseHeap()
    frontier.push(float(np.float32(gap[start])), start)
    closed: set[tuple[int, int]] = set()
    best, best_gap = start, np.inf
    while len(frontier):
        cell = frontier.pop()
        if gap[cell] < best_gap:
            best, best_gap = cell, gap[cell]
        if best_gap < 0.001:
            break
        if depth[cell] >= max_moves:
            continue
        closed.add(cell)
        here = grid[cell]
        for direction in range(NUM_DIRECTIONS):
            nxt = (cell[0] + int(_CELL_STEPS[direction, 0]), cell[1] + int(_CELL_STEPS[direction, 1]))
            if nxt in closed or blocked[nxt]:
                continue
            tentative = float(cost[cell]) + float(np.linalg.norm(grid[nxt] - here))  # double, not yet rounded
            if nxt in cost and tentative >= float(cost[nxt]):
                continue
            if nxt in frontier.slot:
                frontier.remove(nxt)
            cost[nxt] = np.float32(tentative)
            depth[nxt] = depth[cell] + 1
            parent[nxt] = (cell, direction)
            frontier.push(float(np.float32(float(cost[nxt]) + float(gap[nxt]))), nxt)
    return _path(parent, start, best)


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

    def plan_many(self, tasks: Sequence[Task], processes: int = 1) -> None:
        """Plan every task not cached yet, in ``processes`` worker processes: a training run plans its 1,244
        distinct tasks once at the start (about 10 ms each with A*, 90 ms with the release's search)."""
        missing = list({t.key(): t for t in tasks if t.key() not in self._plans}.items())
        if processes > 1 and len(missing) > processes:
            pool = multiprocessing.get_context("fork").Pool(processes, initializer=_default_signals)
            try:
                with _signals_end_planning():
                    plans = pool.map(partial(plan, route=self.route), [t for _, t in missing], chunksize=8)
            except BaseException:
                pool.terminate()
                raise
            pool.close()  # the workers end on their own, not by a SIGTERM that an inherited handler may swallow
            pool.join()
        else:
            plans = [plan(t, route=self.route) for _, t in missing]
        self._plans.update(zip([k for k, _ in missing], plans, strict=True))


def _default_signals() -> None:
    """In a planning worker: the default SIGTERM and SIGINT, not the handlers forked from a training process
    (Lightning's and job launchers' catch SIGTERM and would keep the worker alive)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class PlanningStopped(SystemExit):
    """SIGTERM or Ctrl-C while the demonstrations were planned: the process exits with 128 + the signal."""


@contextmanager
def _signals_end_planning():
    """While worker processes plan: SIGTERM or SIGINT ends the planning at once with :class:`PlanningStopped`.

    A signal sent to the process group also kills the workers, and a pool whose workers died never finishes its
    map; a training run's own handlers (which only note the signal, to stop after an update) would leave it
    waiting for ever. After the first signal the default handlers are back, so a second one always ends the
    process. Only the main thread can set handlers: elsewhere nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in signals}
    stopped = []

    def stop(signum: int, frame: object) -> None:
        stopped.append(signum)
        for s in signals:
            signal.signal(s, signal.SIG_DFL)
        name = signal.Signals(signum).name
        print(f"{name} while planning the demonstrations: stopped before training (nothing to save); run the "
              f"same command again to start over", file=sys.stderr, flush=True)  # fmt: skip
        raise PlanningStopped(128 + signum)

    for s in signals:
        signal.signal(s, stop)
    try:
        yield
    finally:
        if not stopped:
            for s, handler in previous.items():
                signal.signal(s, handler)


_caches = {route: DemonstrationCache(route) for route in ROUTES}
default_cache = _caches["astar"]


def demonstration(task: Task, route: str = "astar") -> Demonstration:
    """The cached demonstration of ``task`` along ``route`` (see the module docstring)."""
    return _caches[check_route(route)](task)


def plan_demonstrations(tasks: Sequence[Task], route: str = "astar", processes: int = 1) -> None:
    """Fill the cache :func:`demonstration` reads for all ``tasks`` at once, in parallel processes."""
    _caches[check_route(route)].plan_many(tasks, processes)


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
