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


# Paths the original release's planner cached for four training examples (trainset.json episode / note in file
# order): the test oracle of its tie-breaks (L, R, U, D = directions 0-3, S = STOP).
RELEASE_PATHS = {
    (2, 0): "ULULLUUUUUUUS",
    (2, 3): "RRRRURRRRRS",
    (53, 12): "RRURRUUUS",
    (2, 10): "LULUULUULLLLLLLLLS",
}


def _letters(actions) -> str:
    return "".join("S" if a == STOP else "LRUD"[a % 4] for a in actions)


@pytest.mark.parametrize("episode_note", sorted(RELEASE_PATHS))
def test_release_route_returns_the_release_paths(corpus_root, episode_note):
    from blocks.corpus.loader import load_split

    examples = {x.uid.rsplit("/", 1)[0]: x for x in load_split("train", corpus_root)}
    task = examples["trainset.json/{}/{}".format(*episode_note)].task
    release = plan(task, route="release")
    assert _letters(release.actions) == RELEASE_PATHS[episode_note]
    ours = plan(task)  # the same cell and length, reached another way
    assert len(ours.actions) == len(release.actions) and np.allclose(ours.points[-1], release.points[-1])


def test_release_route_on_small_boards(two_block_task):
    """Straight runs stay straight; a detour is as short as A*'s; the horizon cuts it without STOP."""
    assert _letters(plan(two_block_task, route="release").actions) == "RRRRRS"
    task = Task(np.array([[0.0, 0.0], [0.3, 0.0]]), np.array([[0.6, 0.0], [0.3, 0.0]]))
    demo = plan(task, route="release")
    assert demo.num_moves == 10 and not overlaps(demo.points[1:], task.start[1:]).any()
    far = plan(Task(np.array([[-1.0, 0.0]]), np.array([[1.0, 2.5]])), route="release")
    assert far.num_moves == HORIZON and STOP not in far.actions
    with pytest.raises(ValueError, match="clearance"):
        plan(two_block_task, route="release", clearance=0.05)


def test_unknown_route_is_refused(two_block_task):
    with pytest.raises(ValueError, match="route"):
        plan(two_block_task, route="scenic")


def _oracle_labels(oracle, task, positions):
    from blocks.world.transitions import pad_boards

    padded, _ = pad_boards([np.asarray(positions)])
    block, good = oracle([task], padded)
    return int(block[0]), good[0]


def test_oracle_labels_every_state_with_all_shortest_directions(two_block_task):
    from blocks.world.planner import Oracle

    oracle = Oracle()
    # On the way: only right (dir 1) shortens the path; at the end cell only STOP.
    block, good = _oracle_labels(oracle, two_block_task, two_block_task.start)
    assert block == 0 and good.tolist() == [False, True, False, False, False]
    block, good = _oracle_labels(oracle, two_block_task, [[0.5, 0.0], [-0.8, 0.8]])
    assert good.tolist() == [False, False, False, False, True]
    # Strayed up and left (states no demonstration visits): right and down are both on shortest paths.
    _, good = _oracle_labels(oracle, two_block_task, [[-0.2, 0.3], [-0.8, 0.8]])
    assert good.tolist() == [False, True, False, True, False]
    # Overshot: back left.
    _, good = _oracle_labels(oracle, two_block_task, [[0.7, 0.0], [-0.8, 0.8]])
    assert good.tolist() == [True, False, False, False, False]
    # With stop_radius=1, STOP is good one move from the end cell as well, and only there.
    near = Oracle(stop_radius=1)
    assert _oracle_labels(near, two_block_task, [[0.6, 0.0], [-0.8, 0.8]])[1].tolist() == [1, 0, 0, 0, 1]
    assert _oracle_labels(near, two_block_task, [[0.4, 0.0], [-0.8, 0.8]])[1].tolist() == [0, 1, 0, 0, 1]
    assert _oracle_labels(near, two_block_task, [[0.3, 0.0], [-0.8, 0.8]])[1].tolist() == [0, 1, 0, 0, 0]
    with pytest.raises(ValueError, match="stop_radius"):
        Oracle(stop_radius=-1)


def test_oracle_walls_are_where_the_other_blocks_stand_now(two_block_task):
    from blocks.world.planner import Oracle

    oracle = Oracle()
    _, free = _oracle_labels(oracle, two_block_task, two_block_task.start)
    # The other block, pushed right next to block 0's path: going right is blocked, the detour goes up or down.
    _, walled = _oracle_labels(oracle, two_block_task, [[0.0, 0.0], [0.2, 0.0]])
    assert free[1] and not walled[1] and (walled[2] or walled[3])
    # The board's edge is a wall too (demonstrations ignore it): a block at the right edge with another right
    # above it detours to the left only, though the detour to the right (off the board) is as short.
    edge = Task(np.array([[1.2, 0.0], [1.2, 0.2]]), np.array([[1.2, 0.5], [1.2, 0.2]]))
    _, good = _oracle_labels(oracle, edge, edge.start)
    assert good.tolist() == [True, False, False, False, False]


def test_oracle_agrees_with_every_demonstration_step(corpus_root):
    """On 300 real training examples, every demonstration action is one of the oracle's good actions."""
    from blocks.corpus.loader import load_split
    from blocks.world.planner import Oracle, demonstration

    oracle = Oracle("astar")
    checked = 0
    for example in load_split("train", corpus_root, exclude_tune=True)[:300]:
        demo = demonstration(example.task, "astar")
        for k, action in enumerate(demo.actions):
            positions = example.task.start.copy()
            positions[demo.block] = demo.points[k]
            block, good = _oracle_labels(oracle, example.task, positions)
            assert block == demo.block and good[4 if action == STOP else action % 4]
            checked += 1
    assert checked > 3000


def test_planning_many_tasks_in_processes_fills_the_cache_with_the_same_plans():
    from blocks.world.planner import DemonstrationCache

    rng = np.random.default_rng(0)
    tasks = [Task(np.array([[0.0, 0.0], [0.3, 0.1]]), np.array([[x, z], [0.3, 0.1]]))
             for x, z in rng.uniform(-0.9, 0.9, (12, 2))]  # fmt: skip
    cache = DemonstrationCache("release")
    cache.plan_many(tasks + tasks[:3], processes=2)
    assert len(cache) == 12
    for task in tasks:
        assert np.array_equal(cache(task).actions, plan(task, route="release").actions)


def test_end_clearance_lets_the_path_end_beside_a_block_it_otherwise_keeps_away_from():
    """The goal touches block 1 from the left. With clearance the path stops a cell short of it; with the end's
    own clearance at zero the path keeps its distance on the way and still ends on the goal."""
    side = 0.1524
    start = np.array([[-1.06, 0.0], [0.0, 0.0]])  # the grid of block 0 has cells at x = -0.16 and -0.26
    goal = np.array([[-0.156, 0.0], [0.0, 0.0]])  # just beyond the square test's reach of block 1
    task = Task(start, goal)
    clearance = 0.2 * side
    assert np.allclose(plan(task).points[-1], [-0.16, 0.0])
    assert np.allclose(plan(task, clearance=clearance).points[-1], [-0.26, 0.0])  # a cell short
    ended = plan(task, clearance=clearance, end_clearance=0.0)
    assert np.allclose(ended.points[-1], [-0.16, 0.0]) and ended.num_moves == 9
    # Every cell but the last keeps the clearance.
    assert not overlaps(ended.points[:-1], start[1:], 0.1524 + 0.002 + clearance).any()
    with pytest.raises(ValueError, match="end_clearance"):
        plan(task, clearance=0.01, end_clearance=0.02)


def test_an_end_cell_is_never_passed_through():
    """A cell only allowed as an end may not lie on the way: a goal behind a narrow gap is reached round it."""
    side = 0.1524
    # Blocks 1 and 2 stand 0.16 either side of x = 0: a block fits between them only without clearance.
    start = np.array([[0.0, -0.6], [-0.16, 0.0], [0.16, 0.0]])
    goal = np.array([[0.0, 0.6], [-0.16, 0.0], [0.16, 0.0]])
    task = Task(start, goal)
    straight = plan(task)
    assert straight.num_moves == 12  # through the gap
    around = plan(task, clearance=0.05 * side, end_clearance=0.0)
    assert around.num_moves > 12 and np.allclose(around.points[-1], [0.0, 0.6])
    assert not overlaps(around.points, start[1:], 0.1524 + 0.002 + 0.05 * side).any()


def _replay(task: Task, actions: np.ndarray) -> tuple[np.ndarray, int]:
    """Where the world leaves the moved block after ``actions``, and how many of its moves the world refused."""
    from blocks.world.transitions import apply_actions

    positions = task.start[None].copy()
    present = np.ones((1, task.num_blocks), bool)
    refused = 0
    for action in actions:
        positions, failed = apply_actions(positions, present, np.array([action]))
        refused += int(failed[0])
    return positions[0, moved_block(task)], refused


def test_planning_with_the_rays_passes_where_the_square_test_refuses():
    """Blocks 1 and 2 stand 0.135 either side of the path: the square test (reach 0.154) closes the gap, the
    world's rays (0.127 to the side) do not, so the plan goes straight through and the world agrees."""
    start = np.array([[0.0, -0.6], [-0.135, 0.0], [0.135, 0.0]])
    task = Task(start, np.array([[0.0, 0.6], [-0.135, 0.0], [0.135, 0.0]]))
    square, rays = plan(task), plan(task, rule="rays")
    assert square.num_moves > 12 and rays.num_moves == 12
    assert np.allclose(_replay(task, rays.actions)[0], [0.0, 0.6]) and _replay(task, rays.actions)[1] == 0
    with pytest.raises(ValueError, match="rule"):
        plan(task, rule="circles")


def test_a_plan_with_the_rays_is_never_refused_by_the_world_and_stays_on_the_board():
    """On random boards every move of a rays plan is one the world accepts, and the block ends where the plan
    says; a goal beyond the board's edge is approached, not crossed to."""
    rng = np.random.default_rng(3)
    for _ in range(25):
        start = rng.uniform(-1.0, 1.0, (8, 2))
        goal = start.copy()
        goal[0] = rng.uniform(-1.0, 1.0, 2)
        task = Task(start, goal)
        for clearance in (0.0, 0.01):
            demo = plan(task, clearance=clearance, end_clearance=0.0, rule="rays")
            end, refused = _replay(task, demo.actions)
            assert refused == 0 and np.allclose(end, demo.points[-1])
    edge = Task(np.array([[1.2, 0.0], [-1.0, -1.0]]), np.array([[1.6, 0.0], [-1.0, -1.0]]))
    assert np.allclose(plan(edge).points[-1], [1.6, 0.0])  # the release's planner has no board bound
    assert np.allclose(plan(edge, rule="rays").points[-1], [1.2, 0.0])  # the world refuses x = 1.3


PLANNING_SCRIPT = """
import signal, sys
from blocks.bench.common import random_tasks
from blocks.world.planner import DemonstrationCache
noted = []
signal.signal(signal.SIGTERM, lambda s, f: noted.append(s))  # as a trainer's handler does: note it, go on
print("planning", flush=True)
DemonstrationCache("release").plan_many(random_tasks(3000), processes=2)
print("finished", flush=True)
"""


@pytest.mark.parametrize("signum, status", [(15, 143), (2, 130)])
def test_a_signal_to_the_process_group_while_planning_ends_it_at_once(signum, status):
    """What timeout, SLURM, Ctrl-C and Ctrl-\\ do: the whole group gets the signal, the planning workers die, and
    the pool would wait for their lost tasks for ever. It ends promptly with 128 + the signal instead."""
    import os
    import subprocess
    import sys
    import time

    process = subprocess.Popen([sys.executable, "-c", PLANNING_SCRIPT], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        assert process.stdout.readline().strip() == "planning"
        time.sleep(1.5)  # the workers are planning
        os.killpg(process.pid, signum)
        status_now = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
    err = process.stderr.read()
    assert status_now == status and "while planning the demonstrations: stopped before training" in err
    assert "finished" not in process.stdout.read()
