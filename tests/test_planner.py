import numpy as np
import pytest

from blocks.world.geometry import HORIZON, STEP, STOP, action_id
from blocks.world.planner import DemonstrationCache, moved_block, plan
from blocks.world.task import Task
from blocks.world.transitions import overlaps


def test_straight_path_and_stop(two_block_task):
    demo = plan(two_block_task)
    assert demo.block == 0 and demo.num_moves == 5
    assert np.allclose(demo.points[-1], [0.5, 0.0])
    assert demo.actions[-1] == STOP


def test_detour_around_an_obstacle():
    # Block 1 sits right between block 0 and its goal: the shortest path must step around it.
    task = Task(np.array([[0.0, 0.0], [0.3, 0.0]]), np.array([[0.6, 0.0], [0.3, 0.0]]))
    demo = plan(task)
    others = task.start[1:]
    assert not overlaps(demo.points[1:], others).any()
    assert np.allclose(demo.points[-1], [0.6, 0.0])
    assert demo.num_moves > 6  # 6 straight moves are blocked
    assert demo.num_moves == 10  # up/down twice, across 6, back twice
    directions = (demo.actions[:-1] % 4).tolist()
    assert directions.count(1) == 6


def test_goal_off_the_grid_picks_the_nearest_reachable_cell():
    task = Task(np.array([[0.0, 0.0]]), np.array([[0.234, -0.04]]))
    demo = plan(task)
    assert np.allclose(demo.points[-1], [0.2, 0.0])


def test_depth_limit_truncates_without_stop():
    task = Task(np.array([[-1.0, 0.0]]), np.array([[1.0, 2.5]]))  # 45 moves away
    demo = plan(task)
    assert demo.num_moves == HORIZON and len(demo.actions) == HORIZON and STOP not in demo.actions


def test_moved_block_is_the_first_that_moves():
    task = Task(np.array([[0, 0], [0.5, 0.5], [-0.5, 0.5]]), np.array([[0, 0.005], [0.5, 0.5], [0, 0.5]]))
    assert moved_block(task) == 2
    assert plan(task).actions[0] == action_id(2, 1)


def test_cache_plans_once(two_block_task):
    cache = DemonstrationCache()
    first = cache(two_block_task)
    same = Task(two_block_task.start.copy(), two_block_task.goal.copy())
    assert cache(same) is first and len(cache) == 1
    assert np.allclose(np.diff(first.points, axis=0).__abs__().sum(axis=1), STEP)


def test_fewest_turns_route_keeps_length_and_end_but_turns_least():
    """Around an obstacle and on the real corpus: same moves and end cell as A*, no more turns, one of them per
    axis on a free board."""
    free_board = Task(np.array([[0.0, 0.0]]), np.array([[0.5, -0.3]]))
    demo = plan(free_board, route="fewest_turns")
    assert (demo.actions[:-1] % 4).tolist() == [1] * 5 + [3] * 3  # right along the longer axis, then down
    detour = Task(np.array([[0.0, 0.0], [0.3, 0.0]]), np.array([[0.6, 0.0], [0.3, 0.0]]))
    for task in (free_board, detour):
        a, b = plan(task), plan(task, route="fewest_turns")
        assert len(a.actions) == len(b.actions) and np.allclose(a.points[-1], b.points[-1])
        assert not overlaps(b.points[1:], task.start[1:]).any()
        turns = lambda d: int((np.diff(d.actions[:-1] % 4) != 0).sum())  # noqa: E731
        assert turns(b) <= turns(a)


def test_unknown_route_is_refused(two_block_task):
    with pytest.raises(ValueError, match="route"):
        plan(two_block_task, route="scenic")
