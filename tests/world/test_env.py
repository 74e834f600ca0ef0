import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from blocks.errors import ConfigError
from blocks.world.env import BlocksEnv
from blocks.world.geometry import HORIZON, STOP, InvalidActionError, action_id
from blocks.world.metrics import summarize
from blocks.world.planner import plan
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv


@pytest.fixture
def env(renderer, two_block_task):
    other = Task(
        np.array([[0.2, 0.3], [0.6, -0.6], [-0.4, 0.1]]),
        np.array([[0.2, 0.3], [0.6, -0.6], [0.4, 0.1]]),
        "logo",
    )
    return BlocksEnv(
        [two_block_task, other],
        renderer.render,
        instructions=["move 1 right", "move 3 right"],
        token_ids=[[2, 3, 4], [2, 5, 4]],
        vocab_size=6,
    )


def test_check_env_passes(env):
    check_env(env, skip_render_check=False)


def test_stop_terminates_and_horizon_truncates(env):
    obs, info = env.reset(seed=0, options={"index": 0})
    assert obs["image"].shape == (120, 120, 3) and obs["image"].dtype == np.uint8
    assert obs["tokens"][:4].tolist() == [2, 3, 4, 0] and obs["length"].tolist() == [3]
    assert obs["previous_action"] == 0  # none yet; afterwards the action id + 1
    assert info["instruction"] == "move 1 right" and info["error"] == pytest.approx(0.5 / 0.1524)
    _, _, terminated, truncated, _ = env.step(STOP)
    assert terminated and not truncated
    with pytest.raises(RuntimeError, match="ended"):
        env.step(STOP)
    env.reset(options={"index": 0})
    for t in range(HORIZON):
        _, _, terminated, truncated, info = env.step(action_id(5, 0))  # absent block: a no-op move
        assert not terminated and truncated == (t == HORIZON - 1)


def test_render_matches_observation_and_changes_when_a_block_moves(env):
    obs, _ = env.reset(options={"index": 0})
    assert np.array_equal(env.render(), obs["image"])
    moved, *_ = env.step(action_id(0, 1))
    assert (
        not np.array_equal(moved["image"], obs["image"]) and moved["previous_action"] == action_id(0, 1) + 1
    )


def test_invalid_actions_raise(env):
    env.reset(options={"index": 0})
    for bad in (81, -1, 2.5):
        with pytest.raises(InvalidActionError):
            env.step(bad)


def test_vector_env_matches_single_env(renderer, two_block_task):
    """Both environments run the same transitions and rewards: replaying random actions gives equal results."""
    tasks = [two_block_task, Task(np.array([[0.0, 0.0], [0.2, 0.0]]), np.array([[0.0, 0.5], [0.2, 0.0]]))]
    rng = np.random.default_rng(0)
    actions = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 40], size=(12, 2))
    vector = VectorBlocksEnv(render_frames=renderer.render)
    vector.reset(tasks)
    vector_rewards = np.array([vector.step(a)[1] for a in actions])
    for i, task in enumerate(tasks):
        single = BlocksEnv([task], renderer.render)
        single.reset(options={"index": 0})
        rewards = [single.step(int(a))[1] for a in actions[:, i]]
        assert np.allclose(rewards, vector_rewards[:, i])
        assert np.array_equal(single.render(), vector.frames[i].transpose(1, 2, 0))


def test_finished_boards_ignore_actions_and_report_results(two_block_task):
    env = VectorBlocksEnv()
    env.reset([two_block_task, two_block_task])
    demo = plan(two_block_task).actions
    _, reward, terminated, _, _ = env.step([STOP, demo[0]])
    assert terminated.tolist() == [True, False]
    for a in demo[1:]:
        _, reward, terminated, _, info = env.step([action_id(0, 1), a])
        assert reward[0] == 0.0 and not info["active"][0]
    assert env.all_done
    first, second = env.results()
    assert first.steps == 1 and first.error == pytest.approx(0.5 / 0.1524) and not first.reached_goal
    assert second.steps == 6 and second.error == pytest.approx(0.0, abs=1e-9) and second.reached_goal
    assert second.min_distance == pytest.approx(0.0, abs=1e-9) and not second.hit_horizon
    # The block the goal moves: never touched by the board that stopped, moved first by the demonstration.
    assert not first.right_block and second.right_block


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        VectorBlocksEnv().step([STOP])


def test_failed_moves_are_counted_in_the_results(two_block_task):
    """Pushing block 1 up into the board's edge: the first moves succeed, the rest fail and are counted."""
    env = VectorBlocksEnv()
    env.reset([two_block_task])
    failed = [bool(env.step([action_id(1, 2)])[4]["failed"][0]) for _ in range(10)]
    env.step([STOP])
    assert failed[0] is False and failed[-1] is True and failed == sorted(failed)
    (result,) = env.results()
    assert result.failed_moves == sum(failed) and result.steps == 11
    assert not result.right_block  # block 1 moved, the goal moves block 0
    assert summarize([result])["failed_move_rate"] == pytest.approx(sum(failed) / 11)


def test_gymnasium_make_gives_a_split_with_the_words_as_token_ids(corpus_root, monkeypatch):
    """``import blocks`` registers ``blocks/Blocks-v0``; the corpus is found through BLOCKS_DATA as everywhere."""
    import gymnasium

    import blocks  # noqa: F401
    from blocks.corpus.loader import load_split
    from blocks.corpus.text import Vocabulary

    monkeypatch.setenv("BLOCKS_DATA", str(corpus_root))
    env = gymnasium.make("blocks/Blocks-v0", split="dev", limit=5)
    obs, info = env.reset(seed=0, options={"index": 3})
    example = load_split("dev", corpus_root)[3]
    vocabulary = Vocabulary.build(x.tokens for x in load_split("train", corpus_root, exclude_tune=True))
    ids = vocabulary.encode(example.tokens)
    assert info["instruction"] == example.instruction and obs["length"].tolist() == [len(ids)]
    assert obs["tokens"][: len(ids)].tolist() == ids and not obs["tokens"][len(ids) :].any()
    assert env.observation_space.contains(obs)
    check_env(env.unwrapped)
    # Other words for the same board: the tokens follow, and the next reset goes back to the task's own.
    obs, info = env.reset(options={"index": 3, "instruction": "Move the BMW block left"})
    words = vocabulary.encode(["move", "the", "bmw", "block", "left"])
    assert info["instruction"] == "Move the BMW block left" and obs["length"].tolist() == [5]
    assert obs["tokens"][:5].tolist() == words and not obs["tokens"][5:].any()
    obs, info = env.reset(options={"index": 3})
    assert info["instruction"] == example.instruction and obs["tokens"][: len(ids)].tolist() == ids
    with pytest.raises(ConfigError, match=r"^picture='Release': unknown picture; one of flat, release"):
        gymnasium.make("blocks/Blocks-v0", split="dev", picture="Release")


def test_reset_options_are_honoured_or_refused(env):
    with pytest.raises(ValueError, match="no vocabulary to encode words"):
        env.reset(options={"instruction": "move block 1 right"})  # built from token ids alone
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) \['instructions'\]"):
        env.reset(options={"instructions": "move"})
    words = BlocksEnv(env.tasks, env._world.render_frames, token_ids=[[2], [3]], vocab_size=9,
                      encode=lambda text: [len(w) for w in text.split()])  # fmt: skip
    obs, info = words.reset(options={"index": 1, "instruction": "move one"})
    assert obs["tokens"][:3].tolist() == [4, 3, 0] and obs["length"].tolist() == [2]
    assert info["instruction"] == "move one" and words.observation_space.contains(obs)


def test_stable_baselines3_checks_the_env_and_its_ppo_learns_on_it(renderer, two_block_task):
    """Another RL library's view: its own checker passes and a few hundred PPO steps with a Dict policy run."""
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = BlocksEnv([two_block_task], renderer.render, image_size=120, token_ids=[[2, 3]], vocab_size=4)
    sb3_check_env(env, warn=True)
    model = PPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    obs, _ = env.reset(options={"index": 0})
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(int(action))


def test_a_bad_task_index_names_the_option_and_the_range(env):
    with pytest.raises(ValueError, match=r"takes a task number in \[0, 2\), got 'abc'"):
        env.reset(options={"index": "abc"})
    with pytest.raises(IndexError, match="out of range"):
        env.reset(options={"index": 5})
