import numpy as np
import pytest

from blocks.world.geometry import BLOCK_SIDE, STEP, STOP, action_id
from blocks.world.planner import plan
from blocks.world.rewards import RewardConfig
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv


def run(task, actions, reward):
    env = VectorBlocksEnv(reward=reward)
    env.reset([task])
    out = []
    for a in actions:
        _, r, *_ = env.step([a])
        out.append(float(r[0]))
    return np.array(out)


def test_problem_reward_alone(two_block_task):
    problem = RewardConfig.preset("problem")
    assert run(two_block_task, [action_id(0, 1)], problem)[0] == pytest.approx(-0.02)
    assert run(two_block_task, [STOP], problem)[0] == -1.0  # 0.5 away: outside the relaxed goal
    near = Task(two_block_task.start, np.array([[0.05, 0.0], [-0.8, 0.8]]))
    assert run(near, [STOP], problem)[0] == 1.0  # D = 0.05 < L


def test_f1_pays_the_distance_gained():
    task = Task(np.array([[0.0, 0.0]]), np.array([[0.5, 0.0]]))
    f1_only = RewardConfig(problem=False, f2=False)
    toward, away = run(task, [action_id(0, 1)], f1_only)[0], run(task, [action_id(0, 0)], f1_only)[0]
    assert toward == pytest.approx(STEP / BLOCK_SIDE) == pytest.approx(0.656, abs=1e-3)
    assert away == pytest.approx(-STEP / BLOCK_SIDE)


def test_f2_pays_on_joining_and_leaving_the_demonstration(two_block_task):
    demo = plan(two_block_task)
    assert demo.actions.tolist() == [action_id(0, 1)] * 5 + [STOP]
    f2_only = RewardConfig(problem=False, f1=False)
    follow = run(two_block_task, demo.actions.tolist(), f2_only)
    assert follow == pytest.approx([1.02, 0, 0, 0, 0, 0])
    leave = run(two_block_task, [action_id(0, 1), action_id(0, 2), action_id(0, 2)], f2_only)
    assert leave == pytest.approx([1.02, -1.02, 0.0])
    other_block = run(two_block_task, [action_id(1, 1)], f2_only)
    assert other_block == pytest.approx([0.0])  # -0.02 - (-0.02)


def test_failed_move_pays_minus_one_and_keeps_the_f2_memory():
    task = Task(np.array([[0.0, 0.0], [0.2, 0.0]]), np.array([[0.0, 0.5], [0.2, 0.0]]))
    demo = plan(task)
    assert demo.actions[0] == action_id(0, 2)
    bump = action_id(0, 1)  # into the neighbour: fails
    rewards = run(task, [bump, bump, action_id(0, 2)], RewardConfig())
    assert rewards[:2].tolist() == [-1.0, -1.0]
    # The join bonus is still +1.02: failed moves did not touch the F2 memory.
    assert rewards[2] == pytest.approx(-0.02 + STEP / BLOCK_SIDE + 1.02)


def test_a_stop_right_after_a_failed_move_pays_as_a_failure_even_at_the_goal():
    """The release's simulator pays STOP with the last move's message: after a failed move it is -1, in the goal
    or not; a STOP after a move that went through is paid as usual."""
    task = Task(
        np.array([[0.0, 0.0], [0.2, 0.0]]), np.array([[0.05, 0.0], [0.2, 0.0]])
    )  # already in the goal
    bump, away = action_id(0, 1), action_id(0, 0)  # into the neighbour (fails); a step away that goes through
    problem = RewardConfig.preset("problem")
    assert run(task, [bump, STOP], problem).tolist() == [-1.0, -1.0]
    assert run(task, [STOP], problem).tolist() == [1.0]
    assert (
        run(task, [bump, away, action_id(0, 1), STOP], problem)[-1] == 1.0
    )  # the failure was two moves back


def test_shaped_reward_is_the_sum_of_its_terms(two_block_task):
    shaped = run(two_block_task, [action_id(0, 1)], RewardConfig())[0]
    assert shaped == pytest.approx(-0.02 + STEP / BLOCK_SIDE + 1.02)
    distance = run(two_block_task, [action_id(0, 1)], RewardConfig.preset("distance"))[0]
    error_after = 0.4 / BLOCK_SIDE
    assert distance == pytest.approx(-error_after + STEP / BLOCK_SIDE + 1.02)


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="shaped, no_f1, no_f2, distance, problem"):
        RewardConfig.preset("sparse")


def test_moves_of_absent_blocks_can_be_paid_as_failures(two_block_task):
    """With ``absent_move_fails`` a move of a block that is not on the board pays -1 (and a STOP right after it
    too, as after any failure) but is not counted as a failed move; without it, it pays the step penalty."""
    absent = action_id(5, 0)  # the board has blocks 0 and 1
    problem = RewardConfig.preset("problem")
    paying = RewardConfig(f1=False, f2=False, absent_move_fails=True)
    assert run(two_block_task, [absent, STOP], problem).tolist() == pytest.approx([-0.02, -1.0])
    near = Task(two_block_task.start, np.array([[0.05, 0.0], [-0.8, 0.8]]))  # STOP at once would pay +1
    assert run(near, [absent, STOP], paying).tolist() == [-1.0, -1.0]
    assert run(near, [action_id(0, 1), STOP], paying)[0] == pytest.approx(-0.02)  # a present block: as before
    env = VectorBlocksEnv(reward=paying)
    env.reset([near])
    env.step([absent])
    assert env.failed_moves.tolist() == [0] and np.array_equal(env.positions[0, :2], near.start)
