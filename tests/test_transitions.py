import numpy as np
import pytest

from blocks.world.geometry import (
    BLOCK_SIDE,
    COLLISION_TOLERANCE,
    STEP,
    STOP,
    InvalidActionError,
    action_id,
    describe_action,
    split_actions,
    validate_actions,
)
from blocks.world.transitions import apply_actions, pad_boards


def step_one(board, action):
    positions, present = pad_boards([np.asarray(board, float)])
    new, failed = apply_actions(positions, present, np.array([action]))
    return new[0, : len(board)], bool(failed[0])


def test_action_ids_and_directions():
    assert action_id(0, 0) == 0 and action_id(19, 3) == 79 and action_id(5, 4) == STOP == 80
    block, direction = split_actions(np.array([0, 5, 79, 80]))
    assert block.tolist() == [0, 1, 19, -1] and direction.tolist() == [0, 1, 3, 4]
    # Named as the picture shows the block: digit boards number their blocks from 1, logo boards by brand.
    assert describe_action(9) == "block 3 right" and describe_action(80) == "STOP"
    assert describe_action(action_id(12, 3)) == "block 13 down"
    assert describe_action(action_id(17, 0), "logo") == "Toyota left"
    board = [[0.0, 0.0]]
    for direction, delta in enumerate([(-STEP, 0), (STEP, 0), (0, STEP), (0, -STEP)]):
        new, failed = step_one(board, action_id(0, direction))
        assert not failed and np.allclose(new[0], delta)


def test_collision_exactly_at_the_tolerance_edge():
    reach = BLOCK_SIDE + COLLISION_TOLERANCE
    # Moving block 0 right by one step lands it exactly `reach` away from block 1: closed interval, so it fails.
    board = [[0.0, 0.0], [STEP + reach, 0.0]]
    new, failed = step_one(board, action_id(0, 1))
    assert failed and np.array_equal(new, np.asarray(board))
    # A hair farther and the move succeeds.
    board = [[0.0, 0.0], [STEP + reach + 1e-9, 0.0]]
    new, failed = step_one(board, action_id(0, 1))
    assert not failed and np.isclose(new[0, 0], STEP)
    # Overlap needs both axes: passing beside a block at |dz| just above the reach is free.
    board = [[0.0, 0.0], [STEP, reach + 1e-9]]
    assert not step_one(board, action_id(0, 1))[1]


def test_board_bound_is_strict():
    new, failed = step_one([[1.15, 0.0]], action_id(0, 1))  # lands on 1.25: allowed
    assert not failed and np.isclose(new[0, 0], 1.25)
    new, failed = step_one([[1.2, 0.0]], action_id(0, 1))  # 1.3 > 1.25
    assert failed and new[0, 0] == 1.2
    assert step_one([[0.0, -1.2]], action_id(0, 3))[1]


def test_absent_block_and_stop_are_noops_that_never_fail():
    board = [[0.0, 0.0], [0.5, 0.5]]
    for action in (action_id(7, 2), STOP):
        new, failed = step_one(board, action)
        assert not failed and np.array_equal(new, np.asarray(board))


def test_batch_is_independent_per_board():
    positions, present = pad_boards([np.array([[0.0, 0.0]]), np.array([[1.2, 0.0], [0.0, 0.0]])])
    new, failed = apply_actions(positions, present, np.array([action_id(0, 1), action_id(0, 1)]))
    assert failed.tolist() == [False, True]
    assert np.isclose(new[0, 0, 0], STEP) and new[1, 0, 0] == 1.2


@pytest.mark.parametrize("bad", [81, -1, 3.0, True, "stop", [1.5]])
def test_invalid_actions_raise_clear_errors(bad):
    with pytest.raises(InvalidActionError):
        validate_actions(np.atleast_1d(np.asarray(bad)) if not isinstance(bad, str) else bad)


def test_wrong_batch_size_raises():
    with pytest.raises(InvalidActionError, match="expected 2 actions"):
        validate_actions(np.array([1, 2, 3]), 2)
