"""The deterministic transition of a batch of boards (section 3 of docs/environment.md).

Boards are padded to ``MAX_BLOCKS``: ``positions`` is ``(N, 20, 2)`` and ``present`` ``(N, 20)`` marks the real
blocks. Every environment (single, vectorised) goes through :func:`apply_actions`.
"""

from __future__ import annotations

import numpy as np

from blocks.world.geometry import (
    BOARD_HALF,
    COLLIDER_SIDE,
    COLLISION_REACH,
    DIRECTION_DELTAS,
    MAX_BLOCKS,
    NUM_DIRECTIONS,
    RAY_REACH,
    RAY_SPREAD,
    STEP,
    STOP,
)

# Unit vector of each direction: (x, z) components, exact (0 or +-1), so products with them are exact.
DIRECTION_UNITS = DIRECTION_DELTAS / STEP


def overlaps(candidates: np.ndarray, others: np.ndarray, reach: float = COLLISION_REACH) -> np.ndarray:
    """Whether squares centred at ``candidates (..., 2)`` overlap squares at ``others (..., K, 2)``.

    The closed-interval rule of the release's planner: |dx| <= L + 0.002 and |dz| <= L + 0.002 (``reach``; a
    planner that keeps clearance from blocks it only perceived passes a larger one). Returns ``(..., K)`` booleans.
    """
    gap = np.abs(others - candidates[..., None, :])
    return (gap <= reach).all(axis=-1)


def ray_blocked(gap_x, gap_z, unit_x, unit_z):  # noqa: ANN001, ANN201 (numpy arrays or torch tensors alike)
    """Whether the simulator's three rays stop a move: another block's centre lies ``(gap_x, gap_z)`` from the
    moving block's, the move points along ``(unit_x, unit_z)``.

    The rays start at the block's centre and ``m / 3`` to either side of it and reach ``s + m / 2`` (plus a hair)
    ahead; the other block's collider is a square of side ``m``. A ray that starts inside a collider does not
    see it (physics ray casts never do), so a block the mover already overlaps does not stop it. Together: the
    other centre lies more than ``m / 2`` and at most ``s + m`` ahead, and at most ``m / 3 + m / 2`` to the side.
    Written with arithmetic and comparisons alone so that the numpy and the torch world share it bit for bit.
    """
    along = gap_x * unit_x + gap_z * unit_z
    across = gap_x * unit_z - gap_z * unit_x
    return (along > COLLIDER_SIDE / 2) & (along <= RAY_REACH) & (abs(across) <= RAY_SPREAD)


def apply_actions(
    positions: np.ndarray, present: np.ndarray, actions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Apply one action per board; returns (new positions, failed) without touching the inputs.

    A move fails, and leaves its board unchanged, when the block would leave the board (strictly beyond
    +-1.25) or another present block stands in its way (:func:`ray_blocked`). STOP and moves of absent blocks change nothing and never fail.
    ``actions`` must already be valid ids (see ``geometry.validate_actions``).
    """
    n = positions.shape[0]
    rows = np.arange(n)
    is_move = actions != STOP
    block = np.where(is_move, actions // NUM_DIRECTIONS, 0)
    direction = np.where(is_move, actions % NUM_DIRECTIONS, 0)
    moving = is_move & present[rows, block]

    origin = positions[rows, block]
    target = origin + DIRECTION_DELTAS[direction]
    off_board = (np.abs(target) > BOARD_HALF).any(axis=1)
    others = present.copy()
    others[rows, block] = False
    gap = positions - origin[:, None, :]
    unit = DIRECTION_UNITS[direction]
    collision = (ray_blocked(gap[..., 0], gap[..., 1], unit[:, :1], unit[:, 1:]) & others).any(axis=1)
    failed = moving & (off_board | collision)
    succeeded = moving & ~failed

    new_positions = positions.copy()
    new_positions[rows[succeeded], block[succeeded]] = target[succeeded]
    return new_positions, failed


def moves_absent_block(present: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Which of the (valid) actions move a block that is not on its board."""
    is_move = actions != STOP
    block = np.where(is_move, actions // NUM_DIRECTIONS, 0)
    return is_move & ~present[np.arange(len(actions)), block]


def pad_boards(boards: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Stack boards of 1..20 blocks into padded ``(N, 20, 2)`` positions and a ``(N, 20)`` presence mask."""
    positions = np.zeros((len(boards), MAX_BLOCKS, 2))
    present = np.zeros((len(boards), MAX_BLOCKS), dtype=bool)
    for i, board in enumerate(boards):
        positions[i, : len(board)] = board
        present[i, : len(board)] = True
    return positions, present
