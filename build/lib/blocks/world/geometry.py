"""Board geometry and the 81 actions (section 1-2 of docs/environment.md)."""

from __future__ import annotations

import numpy as np

BLOCK_SIDE = 0.1524  # L: side of a block, the unit of every reported distance
STEP = 0.1  # s: one move, 0.04 of the 2.5-unit board
BOARD_HALF = 1.25  # the board spans [-1.25, 1.25] on x and z
COLLISION_TOLERANCE = 0.002
COLLISION_REACH = BLOCK_SIDE + COLLISION_TOLERANCE  # the planner's square test: closer on both axes overlaps
# The simulator's ray test (docs/environment.md section 3): a block's collider side m, the rays' length past the
# step, and how far to either side of the moving block's centre another block still stops it. The shipped
# simulator reads m off the block's mesh in the world, whose side the corpus records as L.
COLLIDER_SIDE = BLOCK_SIDE
RAY_TOLERANCE = 0.0001
RAY_REACH = STEP + COLLIDER_SIDE + RAY_TOLERANCE * STEP  # along the move: centre gap at most this stops it
RAY_SPREAD = COLLIDER_SIDE / 3 + COLLIDER_SIDE / 2  # across the move: centre gap at most this stops it
MAX_BLOCKS = 20
NUM_DIRECTIONS = 4  # moves; the direction head has a fifth output, STOP
STOP_DIRECTION = 4
NUM_ACTIONS = MAX_BLOCKS * NUM_DIRECTIONS + 1  # 81
STOP = NUM_ACTIONS - 1  # 80
HORIZON = 40

# dir 0: left (x - s), 1: right (x + s), 2: up (z + s), 3: down (z - s), as seen in the image.
DIRECTION_NAMES = ("left", "right", "up", "down", "stop")
DIRECTION_DELTAS = np.array([[-STEP, 0.0], [STEP, 0.0], [0.0, STEP], [0.0, -STEP]])

# The label block i carries: the digit i + 1 on digit boards, the i-th logo on logo boards (the texture files'
# names, and the brands as people write them).
LOGO_BRANDS = (
    "adidas", "bmw", "burgerking", "cocacola", "esso", "heineken", "hp", "mcdonalds", "mercedesbenz", "nvidia",
    "pepsi", "shell", "sri", "starbucks", "stella", "target", "texaco", "toyota", "twitter", "ups",
)  # fmt: skip
LOGO_NAMES = (
    "Adidas", "BMW", "Burger King", "Coca-Cola", "Esso", "Heineken", "HP", "McDonald's", "Mercedes-Benz", "Nvidia",
    "Pepsi", "Shell", "SRI", "Starbucks", "Stella Artois", "Target", "Texaco", "Toyota", "Twitter", "UPS",
)  # fmt: skip


class InvalidActionError(ValueError):
    """An action that is not an integer id in [0, 80]."""


def action_id(block: int, direction: int) -> int:
    """Action id of moving ``block`` in ``direction`` (0..3), or STOP for direction 4."""
    if direction == STOP_DIRECTION:
        return STOP
    if not (0 <= block < MAX_BLOCKS and 0 <= direction < NUM_DIRECTIONS):
        raise InvalidActionError(f"no action moves block {block} in direction {direction}")
    return block * NUM_DIRECTIONS + direction


def validate_actions(actions: object, batch_size: int | None = None) -> np.ndarray:
    """Integer array of action ids, or a clear error for anything else (floats, bools, out of range)."""
    array = np.asarray(actions)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise InvalidActionError(
            f"actions must be integers in [0, {STOP}], got dtype {array.dtype}: {actions!r}"
        )
    if batch_size is not None and array.shape != (batch_size,):
        raise InvalidActionError(
            f"expected {batch_size} actions (shape ({batch_size},)), got shape {array.shape}"
        )
    if array.size and (array.min() < 0 or array.max() > STOP):
        bad = array[(array < 0) | (array > STOP)]
        raise InvalidActionError(f"actions must lie in [0, {STOP}], got {bad.tolist()}")
    return array.astype(np.int64, copy=False)


def split_actions(actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(block, direction) of each action id; STOP gives block -1 and direction 4."""
    actions = np.asarray(actions)
    is_stop = actions == STOP
    block = np.where(is_stop, -1, actions // NUM_DIRECTIONS)
    direction = np.where(is_stop, STOP_DIRECTION, actions % NUM_DIRECTIONS)
    return block, direction


def block_label(block: int, decoration: str = "digit") -> str:
    """The block as the picture shows it: ``block 13`` (index 12 on a digit board) or ``Toyota`` (a logo)."""
    return LOGO_NAMES[block] if decoration == "logo" else f"block {block + 1}"


def describe_action(action: int, decoration: str = "digit") -> str:
    """Human-readable action as the picture shows the block, e.g. 'block 3 up', 'Toyota left' or 'STOP'."""
    if action == STOP:
        return "STOP"
    block, direction = divmod(int(action), NUM_DIRECTIONS)
    return f"{block_label(block, decoration)} {DIRECTION_NAMES[direction]}"
