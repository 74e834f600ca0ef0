"""The goal-seeking agent's rule, given a goal head that tells the truth: it walks to the goal and stops; and
ensembles of policy networks, which average what their networks say."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from blocks.agents.goal import GoalSeekingAgent
from blocks.agents.policy import PolicyAgent, checkpoint_paths
from blocks.errors import CheckpointError, ConfigError
from blocks.model.policy import PolicyNetwork, goal_targets
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv

VOCAB = ["<pad>", "<unk>", "move", "block"]


def truthful_agent(env: VectorBlocksEnv) -> GoalSeekingAgent:
    """A network whose block head always says block 0 and whose goal head reads the true offset off ``env``."""
    policy = PolicyNetwork(len(VOCAB), goal_head=True)
    torch.nn.init.zeros_(policy.block_head.weight)
    with torch.no_grad():
        policy.block_head.bias.copy_(torch.arange(20, 0, -1).float())
    policy.predict_goal = lambda features, *inputs: torch.from_numpy(
        goal_targets(env.goals[:, 0], env.positions[:, 0])
    )
    return GoalSeekingAgent(policy, VOCAB)


def run(agent: GoalSeekingAgent, env: VectorBlocksEnv, tasks: list[Task]) -> list[int]:
    observation, _ = env.reset(tasks)
    agent.begin(tasks, instructions=["move block"] * len(tasks))
    taken = []
    while not env.all_done:
        actions = agent.act(observation)
        taken.append(int(actions[0]))
        observation, *_ = env.step(actions)
    return taken


def test_it_walks_the_block_to_the_goal_and_stops(renderer):
    env = VectorBlocksEnv(render_frames=renderer.render)
    task = Task(np.array([[0.0, 0.0], [-0.8, 0.8]]), np.array([[0.5, 0.3], [-0.8, 0.8]]))
    taken = run(truthful_agent(env), env, [task])
    assert sorted(taken[:-1]) == [1] * 5 + [2] * 3 and taken[-1] == 80  # 5 right, 3 up, then STOP
    assert env.error[0] == pytest.approx(0.0, abs=1e-9)


def test_after_a_failed_move_it_tries_the_other_axis(renderer):
    """Block 1 stands just right of block 0: moving right fails until block 0 has gone up past it."""
    env = VectorBlocksEnv(render_frames=renderer.render)
    task = Task(np.array([[0.0, 0.0], [0.16, 0.0]]), np.array([[0.5, 0.3], [0.16, 0.0]]))
    taken = run(truthful_agent(env), env, [task])
    assert taken[0] == 1 and taken[1] == 2  # right fails (the picture does not change), so up
    assert env.failed_moves[0] >= 1 and taken[-1] == 80
    assert env.error[0] == pytest.approx(0.0, abs=1e-9) and len(taken) < 20


def test_it_needs_a_goal_head_and_a_positive_stop_distance():
    with pytest.raises(ValueError, match="network.goal_head=true"):
        GoalSeekingAgent(PolicyNetwork(len(VOCAB)), VOCAB)
    with pytest.raises(ValueError, match="agent.stop_within"):
        GoalSeekingAgent(PolicyNetwork(len(VOCAB), goal_head=True), VOCAB, stop_within=0.0)


def test_an_ensemble_averages_its_networks_log_probabilities_and_goals(renderer):
    """Each network reads the text through its own vocabulary; the ensemble's distribution is the renormalised
    mean of their log-probabilities, its goal the mean of their goals."""
    vocabularies = [VOCAB, ["<pad>", "<unk>", "block", "move"]]
    networks = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        networks.append(PolicyNetwork(len(VOCAB), goal_head=True).eval())
    env = VectorBlocksEnv(render_frames=renderer.render)
    tasks = [Task(np.array([[0.0, 0.0], [-0.8, 0.8]]), np.array([[0.5, 0.3], [-0.8, 0.8]]))] * 2
    instructions = ["move block", "block block move"]
    observation, _ = env.reset(tasks)

    def read(agent: PolicyAgent):
        agent.begin(tasks, instructions=instructions)
        with torch.no_grad():
            return agent.read(observation, goal=True)

    singles = [read(PolicyAgent(n, v)) for n, v in zip(networks, vocabularies, strict=True)]
    ensemble = PolicyAgent(networks, vocabularies)
    distribution, goal = read(ensemble)
    for part in ("block_log_probs", "direction_log_probs"):
        mean = (getattr(singles[0][0], part) + getattr(singles[1][0], part)) / 2
        assert torch.allclose(getattr(distribution, part), torch.log_softmax(mean, dim=1), atol=1e-6)
        assert not torch.allclose(getattr(singles[0][0], part), getattr(singles[1][0], part))
    assert torch.allclose(goal, (singles[0][1] + singles[1][1]) / 2, atol=1e-6)
    assert not torch.equal(ensemble.texts[0], ensemble.texts[1])
    ensemble.begin(tasks, instructions=instructions)
    expected = distribution.action_log_probs().argmax(1).numpy()
    assert np.array_equal(ensemble.act(observation), expected)


def test_an_ensemble_needs_a_vocabulary_per_network_and_existing_checkpoints(tmp_path):
    networks = [PolicyNetwork(len(VOCAB)), PolicyNetwork(len(VOCAB))]
    with pytest.raises(ValueError, match="one vocabulary per network"):
        PolicyAgent(networks, [VOCAB])
    with pytest.raises(ValueError, match="goal head"):
        GoalSeekingAgent([PolicyNetwork(len(VOCAB), goal_head=True), networks[0]], [VOCAB, VOCAB])
    with pytest.raises(ConfigError, match="ckpt_path"):
        checkpoint_paths([])
    present = tmp_path / "a.ckpt"
    present.write_bytes(b"")
    assert checkpoint_paths(str(present)) == [str(present)]
    with pytest.raises(CheckpointError, match="b.ckpt: no such checkpoint file"):
        PolicyAgent.from_checkpoint([str(tmp_path / "b.ckpt")])
    with pytest.raises(CheckpointError, match="a.ckpt: not a readable checkpoint"):
        PolicyAgent.from_checkpoint([str(present)])


def test_oracle_planner_walks_the_named_block_around_the_others_to_its_target(renderer):
    """Told the true block and target, the planner (on the simulator's board) detours round block 1 and stops."""
    from blocks.agents.planner import OraclePlannerAgent
    from blocks.world.planner import plan

    env = VectorBlocksEnv(render_frames=renderer.render)
    task = Task(np.array([[0.0, 0.0], [0.3, 0.0]]), np.array([[0.6, 0.0], [0.3, 0.0]]))
    policy = truthful_agent(env).policy
    agent = OraclePlannerAgent(policy, VOCAB)
    taken = run(agent, env, [task])
    assert taken == plan(task).actions.tolist() and env.error[0] == pytest.approx(0.0, abs=1e-9)
    assert env.failed_moves[0] == 0
    absent = OraclePlannerAgent(policy, VOCAB).path(task, 7, np.array([0.5, 0.5]))
    assert absent.tolist() == [80]  # a block not on the board: stop at once
    with pytest.raises(ConfigError, match="goal head"):
        OraclePlannerAgent(PolicyNetwork(len(VOCAB)), VOCAB)


def test_target_learner_learns_block_and_target_from_the_first_picture(corpus_root):
    """model=target: one pair per example (its start), the loss falls on a few examples, and it needs a goal head."""
    import pytorch_lightning as pl

    from blocks.data.demonstrations import DemonstrationDataModule
    from blocks.learn.target import TargetLearner

    data = DemonstrationDataModule(root=str(corpus_root), batch_size=4, max_train_examples=4, seed=0,
                                   first_step_only=True)  # fmt: skip
    assert len(data.steps) == 4 and set(data.steps.index[:, 1]) == {0}
    learner = TargetLearner(data.vocabulary.to_list(), {"goal_head": True})
    learner.log = learner.log_dict = lambda *args, **kwargs: None  # training_step outside a Trainer
    batch = data.steps.collate([(i, 0) for i in range(4)])
    before = float(learner.training_step(batch, 0))
    trainer = pl.Trainer(max_epochs=30, limit_val_batches=0, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
    trainer.fit(learner, train_dataloaders=data.train_dataloader())
    assert float(learner.training_step(batch, 0)) < 0.5 * before
    with pytest.raises(ConfigError, match="goal_head"):
        TargetLearner(data.vocabulary.to_list())
