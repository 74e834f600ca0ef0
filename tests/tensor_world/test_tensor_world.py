"""The torch world (``blocks.tensor_world``) against the numpy reference: same boards, rewards and pictures."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from blocks.corpus.loader import load_split
from blocks.tensor_world import TensorBlocksEnv, TensorRenderer
from blocks.world.geometry import BLOCK_SIDE, BOARD_HALF, NUM_DIRECTIONS, STOP
from blocks.world.rewards import REWARD_PRESETS, RewardConfig
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv


def crowded_tasks(n: int, seed: int) -> list[Task]:
    """Boards of 1 to 20 blocks, packed close (collisions) and out to the edges (failed moves, clipped faces)."""
    rng = np.random.default_rng(seed)
    tasks = []
    for _ in range(n):
        count = int(rng.integers(1, 21))
        blocks: list[np.ndarray] = []
        while len(blocks) < count:
            candidate = rng.uniform(-BOARD_HALF, BOARD_HALF, 2)
            if all((np.abs(candidate - b) > BLOCK_SIDE + 0.01).any() for b in blocks):
                blocks.append(candidate)
        start = np.array(blocks)
        goal = start.copy()
        goal[rng.integers(count)] += rng.uniform(-0.6, 0.6, 2)
        tasks.append(Task(start, goal, "logo" if rng.random() < 0.5 else "digit"))
    return tasks


def random_actions(rng: np.random.Generator, tasks: list[Task], stop: float) -> np.ndarray:
    """Mostly moves of present blocks (some of absent ones), STOP with probability ``stop``."""
    blocks = np.array([rng.integers(t.num_blocks + 1) % 20 for t in tasks])
    actions = blocks * NUM_DIRECTIONS + rng.integers(NUM_DIRECTIONS, size=len(tasks))
    return np.where(rng.random(len(tasks)) < stop, STOP, actions)


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])  # on a GPU machine, both


def run_both(tasks, reward, renderer, seed, stop=0.03, steps=None, device="cpu"):
    """Step both environments with the same actions; assert they agree at every step. Returns steps taken."""
    numpy_env = VectorBlocksEnv(reward, render_frames=renderer.render if renderer else None)
    torch_env = TensorBlocksEnv(
        reward, renderer=TensorRenderer(renderer, device) if renderer else None, device=device
    )
    obs_n, _ = numpy_env.reset(tasks)
    obs_t, _ = torch_env.reset(tasks)
    rng = np.random.default_rng(seed)
    taken = 0
    while not numpy_env.all_done and (steps is None or taken < steps):
        if renderer is not None:
            assert np.array_equal(obs_t["image"].cpu().numpy(), obs_n["image"])
        actions = random_actions(rng, tasks, stop)
        obs_n, reward_n, term_n, trunc_n, info_n = numpy_env.step(actions)
        obs_t, reward_t, term_t, trunc_t, info_t = torch_env.step(torch.from_numpy(actions).to(device))
        assert np.array_equal(torch_env.positions.cpu().numpy(), numpy_env.positions)
        assert np.array_equal(info_t["failed"].cpu().numpy(), info_n["failed"])
        np.testing.assert_allclose(reward_t.cpu().numpy(), reward_n, rtol=0, atol=1e-9)
        np.testing.assert_allclose(info_t["error"].cpu().numpy(), info_n["error"], rtol=0, atol=1e-9)
        assert np.array_equal(term_t.cpu().numpy(), term_n) and np.array_equal(trunc_t.cpu().numpy(), trunc_n)
        assert np.array_equal(obs_t["previous_action"].cpu().numpy(), obs_n["previous_action"])
        taken += 1
    assert torch_env.all_done == numpy_env.all_done
    for ours, reference in zip(torch_env.results(), numpy_env.results(), strict=True):
        assert (ours.steps, ours.hit_horizon, ours.failed_moves, ours.right_block) == (
            reference.steps, reference.hit_horizon, reference.failed_moves, reference.right_block
        )  # fmt: skip
        assert ours.error == pytest.approx(reference.error, abs=1e-9)
        assert ours.min_distance == pytest.approx(reference.min_distance, abs=1e-9)
    return taken, numpy_env


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("preset", REWARD_PRESETS)
def test_random_steps_match_numpy_for_every_reward(preset, device):
    """Thousands of random steps on crowded boards (failed moves, STOPs, the horizon) under each reward."""
    tasks = crowded_tasks(64, seed=1)
    taken, env = run_both(tasks, RewardConfig.preset(preset), None, seed=2, device=device)
    assert taken * len(tasks) >= 2000
    assert env.failed_moves.sum() > 100 and env.stopped.any() and (env.done & ~env.stopped).any()
    assert overlapping_boards(env) > 0  # the rays let blocks pass side by side: both worlds agree on it too


@pytest.mark.parametrize("device", DEVICES)
def test_absent_moves_paid_as_failures_match_numpy(device):
    """The option that pays moves of absent blocks as failures, in both worlds step by step."""
    tasks = crowded_tasks(64, seed=3)
    run_both(tasks, RewardConfig(absent_move_fails=True), None, seed=6, device=device)


def overlapping_boards(env: VectorBlocksEnv) -> int:
    """Boards on which two present blocks' squares overlap (blocks that passed each other side by side)."""
    gap = np.abs(env.positions[:, :, None] - env.positions[:, None, :]).max(-1)
    pairs = env.present[:, :, None] & env.present[:, None, :] & ~np.eye(20, dtype=bool)
    return int(((gap < BLOCK_SIDE) & pairs).any((1, 2)).sum())


@pytest.mark.parametrize("device", DEVICES)
def test_pictures_match_numpy_while_blocks_move(renderer, device):
    """Every picture of 48 boards over a whole episode, faces clipped at the picture's edges and faces that
    overlap (blocks that passed side by side) included."""
    tasks = crowded_tasks(48, seed=3)
    _, env = run_both(tasks, RewardConfig(), renderer, seed=4, stop=0.0, device=device)
    assert overlapping_boards(env) > 0


def test_renderer_draws_the_later_block_where_faces_meet(renderer):
    """Overlapping faces (blocks that passed side by side) resolve as in the numpy loop: the later block wins."""
    positions = np.zeros((2, 20, 2))
    positions[:, 1] = [0.05, 0.03]
    present = np.zeros((2, 20), bool)
    present[:, :2] = True
    logo = np.array([True, False])
    expected = renderer.render(positions, present, logo)
    drawn = TensorRenderer(renderer).render(torch.from_numpy(positions), torch.from_numpy(present),
                                            torch.from_numpy(logo))  # fmt: skip
    assert np.array_equal(drawn.numpy(), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_corpus_episodes_match_numpy(corpus_root, renderer, device):
    """Real dev boards with the demonstrations F2 follows: rewards, boards and pictures agree step by step."""
    examples = load_split("dev", corpus_root)[::40]
    run_both([x.task for x in examples], RewardConfig(), renderer, seed=5, device=device)


def test_step_rejects_what_is_not_a_long_tensor(two_block_task):
    env = TensorBlocksEnv()
    env.reset([two_block_task])
    with pytest.raises(ValueError, match="long tensor"):
        env.step(torch.tensor([1.0]))


def test_device_rollout_is_the_numpy_rollout(renderer):
    """The same policy and seed give the same episodes on both simulators: frames, actions, rewards."""
    from blocks.data.collect import collect_device_rollout, collect_rollout
    from blocks.model.policy import PolicyNetwork, pad_token_ids

    torch.manual_seed(0)
    policy = PolicyNetwork(vocab_size=30).eval()
    with torch.no_grad():
        policy.direction_head.bias[4] = -2.0  # episodes of some length
    tasks = crowded_tasks(6, seed=7)
    tokens, lengths = pad_token_ids([[1, 2, 3], [4, 5], [6], [7, 8, 9, 10], [11], [12, 13]])
    reference = collect_rollout(
        policy, VectorBlocksEnv(render_frames=renderer.render), tasks, tokens, lengths,
        torch.Generator().manual_seed(3),
    )  # fmt: skip
    ours = collect_device_rollout(
        policy, TensorBlocksEnv(renderer=TensorRenderer(renderer)), tasks, tokens, lengths,
        torch.Generator().manual_seed(3),
    )  # fmt: skip
    assert reference.num_frames > 30
    for name in ("frames", "previous_action", "block", "direction", "active"):
        assert torch.equal(getattr(ours, name), getattr(reference, name)), name
    assert torch.allclose(ours.reward, reference.reward, atol=1e-6)
    assert torch.allclose(ours.final_error, reference.final_error, atol=1e-6)


def test_bandit_trains_on_the_torch_simulator(corpus_root):
    """``data.simulator=torch`` through Lightning: rollouts on the policy's device, updates change the weights."""
    import pytorch_lightning as pl

    from blocks.data.rollouts import RolloutDataModule
    from blocks.errors import ConfigError
    from blocks.learn.bandit import BanditLearner
    from blocks.learn.oracle import OracleLearner

    data = RolloutDataModule(
        root=str(corpus_root), batch_size=4, max_train_examples=8, seed=0, simulator="torch"
    )
    learner = BanditLearner(data.vocabulary.to_list())
    before = [p.detach().clone() for p in learner.policy.parameters()]
    trainer = pl.Trainer(max_epochs=1, limit_val_batches=0, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
    trainer.fit(learner, data)
    assert learner.frames_seen > 8
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.policy.parameters(), strict=True))
    with pytest.raises(ConfigError, match="numpy planner"):
        data.attach_policy(OracleLearner(data.vocabulary.to_list()).policy, oracle=True)
    with pytest.raises(ConfigError, match="data.simulator='jax'"):
        RolloutDataModule(root=str(corpus_root), simulator="jax")


def test_torch_world_updates_in_one_backward_pass_by_default(corpus_root):
    """On the GPU an update split into pieces only adds kernel launches (about 15x slower on one H200)."""
    from blocks.data.rollouts import RolloutDataModule

    def chunks(**kwargs) -> int:
        return RolloutDataModule(root=str(corpus_root), episodes_per_update=16, **kwargs).chunks_per_update

    assert chunks(simulator="torch") == 1
    assert chunks(simulator="numpy") == 16
    assert chunks(simulator="torch", chunks_per_update=4) == 4
