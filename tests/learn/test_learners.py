"""blocks.learn: each learner's update moves the network the way its objective says."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from blocks.data.collect import collect_rollout
from blocks.data.demonstrations import DemonstrationDataModule
from blocks.data.rollout_tensors import Rollout, gather_stacks, split_update
from blocks.data.rollouts import RolloutDataModule
from blocks.errors import ConfigError
from blocks.learn.bandit import BanditLearner
from blocks.model.policy import PolicyNetwork
from blocks.world.planner import demonstration
from blocks.world.rewards import RewardConfig
from blocks.world.vector_env import VectorBlocksEnv

VOCAB = ["<pad>", "<unk>", "move", "block", "left"]


def one_step_rollout(reward: float, block: int = 3, direction: int = 1) -> Rollout:
    generator = torch.Generator().manual_seed(0)
    return Rollout(
        frames=torch.randint(0, 256, (1, 1, 3, 120, 120), dtype=torch.uint8, generator=generator),
        previous_action=torch.tensor([[-1]]),
        block=torch.tensor([[block]]),
        direction=torch.tensor([[direction]]),
        reward=torch.tensor([[reward]]),
        active=torch.tensor([[True]]),
        tokens=torch.tensor([[2, 3, 4]]),
        lengths=torch.tensor([3]),
        final_error=torch.tensor([1.0]),
    )


def log_prob_of_action(learner: BanditLearner, rollout: Rollout) -> float:
    with torch.no_grad():
        text = learner.policy.encode_instruction(rollout.tokens, rollout.lengths)
        images = gather_stacks(rollout.frames, torch.tensor([0]), torch.tensor([0]))
        out = learner.policy(images, text, rollout.previous_action[0])
        return float(out.log_prob_parts(rollout.block[0], rollout.direction[0]))


def fit_on(learner, batches, **trainer_args):
    import pytorch_lightning as pl
    from torch.utils.data import DataLoader

    trainer = pl.Trainer(
        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        limit_val_batches=0, **trainer_args,
    )  # fmt: skip
    trainer.fit(learner, train_dataloaders=DataLoader(batches, batch_size=None, collate_fn=lambda x: x))
    return trainer


def two_board_oracle_rollout(policy: PolicyNetwork, renderer, task) -> Rollout:
    """Two boards of ``task`` ("move block", "move left") rolled out by ``policy``, labelled by the oracle."""
    from blocks.world.planner import Oracle

    env = VectorBlocksEnv(render_frames=renderer.render)
    tokens, lengths = torch.tensor([[2, 3], [2, 4]]), torch.tensor([2, 2])
    return collect_rollout(
        policy, env, [task] * 2, tokens, lengths, torch.Generator().manual_seed(0), oracle=Oracle()
    )


def objective_on(learner, rollout: Rollout) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The learner's objective on every (step, board) pair of the rollout, without gradients."""
    (chunk,) = split_update(rollout, slice(0, rollout.num_boards), 1)
    with torch.no_grad():
        images = gather_stacks(rollout.frames, chunk.steps, chunk.boards)
        text = learner.policy.encode_instruction(rollout.tokens, rollout.lengths)[chunk.boards]
        out = learner.policy(images, text, rollout.previous_action[chunk.steps, chunk.boards])
        return learner.objective(rollout, chunk.steps, chunk.boards, out)


@pytest.mark.parametrize("reward, sign", [(1.0, 1), (-1.0, -1)])
def test_bandit_update_follows_the_sign_of_the_reward(reward, sign):
    torch.manual_seed(0)
    learner = BanditLearner(VOCAB, lr=1e-3, entropy_coef=0.0)
    rollout = one_step_rollout(reward)
    before = log_prob_of_action(learner, rollout)
    (chunk,) = split_update(rollout, slice(0, 1), chunks=1)
    trainer = fit_on(learner, [chunk], max_epochs=1)
    assert trainer.global_step == 1  # one Adam step
    assert sign * (log_prob_of_action(learner, rollout) - before) > 1e-4


def test_chunked_update_equals_one_big_update(renderer, two_block_task):
    """Accumulating an update over chunks gives the gradient of the whole rollout in one piece."""
    import pytorch_lightning as pl

    torch.manual_seed(0)
    policy = PolicyNetwork(len(VOCAB))
    env = VectorBlocksEnv(render_frames=renderer.render)
    tokens, lengths = torch.tensor([[2, 3], [2, 4], [3, 3]]), torch.tensor([2, 2, 1])
    rollout = collect_rollout(
        policy, env, [two_block_task] * 3, tokens, lengths, torch.Generator().manual_seed(0)
    )
    gradients = []

    class KeepGradient(pl.Callback):
        def on_before_optimizer_step(self, trainer, module, optimizer):
            gradients.append(module.policy.hidden.weight.grad.clone())

    for chunks in (1, 3):
        learner = BanditLearner(VOCAB, gradient_clip=None)
        learner.policy.load_state_dict(policy.state_dict())
        fit_on(learner, split_update(rollout, slice(0, 3), chunks), max_epochs=1, callbacks=[KeepGradient()])
    assert len(gradients) == 2 and gradients[0].abs().max() > 0
    assert torch.allclose(gradients[0], gradients[1], rtol=1e-4, atol=1e-7)


def test_returns_to_go_sum_rewards_to_the_end():
    rollout = one_step_rollout(0.0)
    rollout.reward = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 0.0]])
    rollout.active = torch.tensor([[True, True], [True, True], [True, False]])
    assert rollout.returns_to_go().tolist() == [[9.0, 6.0], [8.0, 4.0], [5.0, 0.0]]


def test_supervised_overfits_eight_examples_until_it_replays_them(corpus_root):
    """Trained until it predicts every demonstrated action, the greedy policy retraces the demonstrations step for
    step. Training stops on that condition itself, checked on all steps each epoch: the last batch's loss says
    nothing of the steps it left out, and where it falls below a threshold depends on the thread count."""
    import pytorch_lightning as pl

    from blocks.agents.baselines import DemonstrationAgent
    from blocks.evaluate import evaluate
    from blocks.learn.supervised import SupervisedLearner

    pl.seed_everything(0)
    dm = DemonstrationDataModule(root=str(corpus_root), batch_size=32, max_train_examples=8, seed=3)
    learner = SupervisedLearner(dm.vocabulary.to_list(), lr=2e-3)
    every_step = dm.steps.collate([dm.steps[i] for i in range(len(dm.steps))])

    class EveryActionPredicted(pl.Callback):
        def on_train_epoch_end(self, trainer, module):
            with torch.no_grad():
                text = module.policy.encode_instruction(every_step["tokens"], every_step["lengths"])
                distribution = module.policy(every_step["images"], text, every_step["previous_action"])
            self.predicted = bool(
                (distribution.block_log_probs.argmax(1) == every_step["block"]).all()
                and (distribution.direction_log_probs.argmax(1) == every_step["direction"]).all()
            )
            trainer.should_stop = self.predicted

    trainer = pl.Trainer(
        max_epochs=200, logger=False, enable_checkpointing=False, enable_progress_bar=False, limit_val_batches=0,
        gradient_clip_val=5.0, enable_model_summary=False, callbacks=[predicted := EveryActionPredicted()],
        log_every_n_steps=1,
    )  # fmt: skip
    trainer.fit(learner, train_dataloaders=dm.train_dataloader())
    assert predicted.predicted, "200 epochs did not fit eight examples"
    examples = dm.steps.examples
    replayed = evaluate(learner.agent(), examples, render_frames=dm.renderer.render, progress=False)
    demonstrated = evaluate(DemonstrationAgent(), examples, progress=False)
    assert replayed["mean_error"] == pytest.approx(demonstrated["mean_error"], abs=1e-6)
    assert replayed["mean_steps"] == demonstrated["mean_steps"]


def test_partial_demonstrations_reach_the_labels_and_the_f2_reward(corpus_root):
    """``data.demonstration_fraction`` (Figure 4): supervised steps come only from the demonstrated examples, and
    a rollout on an example kept without one earns no F2 term, whatever it does."""
    kwargs = dict(root=str(corpus_root), max_train_examples=8, seed=0, demonstration_fraction=0.5)
    supervised = DemonstrationDataModule(**kwargs)
    kept = {x.uid for x in supervised.demonstrated_examples}
    assert len(kept) == 4 and {x.uid for x in supervised.steps.examples} == kept
    stream = RolloutDataModule(**kwargs).stream
    with_demo = next(x.task for x in stream.examples if x.uid in kept)
    without = next(x.task for x in stream.examples if x.uid not in kept)
    assert stream.env.demonstrations(with_demo) is not None and stream.env.demonstrations(without) is None
    env = stream.env
    env.reset([with_demo, without])
    first = demonstration(with_demo).actions[0]
    _, reward, *_ = env.step([first, demonstration(without).actions[0]])
    env2 = VectorBlocksEnv(reward=RewardConfig(f2=False))
    env2.reset([with_demo, without])
    _, no_f2, *_ = env2.step([first, demonstration(without).actions[0]])
    assert reward[0] > no_f2[0] and reward[1] == pytest.approx(no_f2[1])
    with pytest.raises(ConfigError, match="demonstration_route"):
        DemonstrationDataModule(root=str(corpus_root), demonstration_route="scenic")
    with pytest.raises(ConfigError, match="demonstration_fraction"):
        DemonstrationDataModule(root=str(corpus_root), demonstration_fraction=1.5)
    nothing = DemonstrationDataModule(root=str(corpus_root), demonstration_fraction=0.0, max_train_examples=8)
    assert nothing.demonstrations(nothing.train_examples[0].task) is None  # the paper's 0 %: goals only
    with pytest.raises(ConfigError, match="no demonstrations to learn from"):
        nothing.steps  # noqa: B018


def test_oracle_learner_raises_the_likelihood_of_the_oracle_actions(renderer, two_block_task):
    """Rollouts labelled by the oracle; a few updates make its good actions likelier on the states visited."""
    from blocks.learn.oracle import OracleLearner

    torch.manual_seed(0)
    learner = OracleLearner(VOCAB, lr=1e-3)
    rollout = two_board_oracle_rollout(learner.policy, renderer, two_block_task)
    assert rollout.oracle_block.tolist() == [0, 0]
    active = rollout.active
    assert (
        rollout.oracle_directions.shape == (*active.shape, 5)
        and rollout.oracle_directions[active].any(1).all()
    )

    def oracle_loss() -> float:
        return float(objective_on(learner, rollout)[0])

    before = oracle_loss()
    fit_on(learner, split_update(rollout, slice(0, 2), 1) * 5, max_epochs=1)
    assert oracle_loss() < before - 0.1


def test_oracle_learner_refuses_rollouts_without_labels(two_block_task):
    from blocks.learn.oracle import OracleLearner

    learner = OracleLearner(VOCAB)
    rollout = one_step_rollout(0.0)
    (chunk,) = split_update(rollout, slice(0, 1), 1)
    with pytest.raises(RuntimeError, match="oracle labels"):
        fit_on(learner, [chunk], max_epochs=1)
    with pytest.raises(ValueError, match="model.oracle_rollin must lie in"):
        OracleLearner(VOCAB, oracle_rollin=1.5)


def test_oracle_rollin_one_follows_the_oracle_to_the_goal(renderer, two_block_task):
    """With oracle_rollin=1 every action is one of the oracle's good ones: the block walks to its goal and stops."""
    from blocks.world.planner import Oracle

    env = VectorBlocksEnv(render_frames=renderer.render)
    tokens, lengths = torch.tensor([[2, 3], [2, 4]]), torch.tensor([2, 2])
    rollout = collect_rollout(
        PolicyNetwork(len(VOCAB)), env, [two_block_task] * 2, tokens, lengths, torch.Generator().manual_seed(0),
        oracle=Oracle(), oracle_rollin=1.0,
    )  # fmt: skip
    active = rollout.active
    taken = rollout.oracle_directions.gather(2, rollout.direction[..., None]).squeeze(2)
    assert taken[active].all() and (rollout.block[active] == 0).all()
    assert rollout.final_error.tolist() == pytest.approx([0.0, 0.0], abs=1e-6)
    assert active.sum(0).tolist() == [6, 6]  # five moves right, then STOP


def test_goal_targets_follow_the_block_to_its_goal(renderer, two_block_task, corpus_root):
    """Rollouts and demonstrations label each step with the goal and the offset still to go, in block lengths."""
    from blocks.world.geometry import BLOCK_SIDE, DIRECTION_DELTAS, STOP
    from blocks.world.planner import Oracle

    env = VectorBlocksEnv(render_frames=renderer.render)
    tokens, lengths = torch.tensor([[2, 3]]), torch.tensor([2])
    rollout = collect_rollout(
        PolicyNetwork(len(VOCAB), goal_head=True), env, [two_block_task], tokens, lengths,
        torch.Generator().manual_seed(0), oracle=Oracle(), oracle_rollin=1.0,
    )  # fmt: skip
    goal = rollout.goal[:, 0].numpy()  # five moves right, then STOP at the goal
    without = collect_rollout(  # a network without a goal head gets no targets: nothing to learn them with
        PolicyNetwork(len(VOCAB)), env, [two_block_task], tokens, lengths, torch.Generator().manual_seed(0)
    )
    assert without.goal is None
    assert np.allclose(goal[:, :2], [0.5 / BLOCK_SIDE, 0.0])
    assert np.allclose(goal[:, 2], [(0.5 - 0.1 * t) / BLOCK_SIDE for t in range(6)], atol=1e-5)
    assert np.allclose(goal[:, 3], 0.0)

    dm = DemonstrationDataModule(root=str(corpus_root), max_train_examples=3, seed=1)
    steps = dm.steps
    batch = steps.collate([steps[i] for i in range(len(steps))])
    offsets, actions = batch["goal"][:, 2:].numpy(), np.concatenate([p.actions for p in steps.plans])
    moves = np.flatnonzero(actions[:-1] != STOP)  # the next row is the same demonstration's next step
    walked = (offsets[moves] - offsets[moves + 1]) * BLOCK_SIDE
    assert np.allclose(walked, DIRECTION_DELTAS[actions[moves] % 4], atol=1e-6)
    assert (np.abs(offsets[actions == STOP]) < 0.5).all()  # STOP where the block is (about) at its goal


@pytest.mark.parametrize("network", [{"goal_head": True}, {"goal_map": True}], ids=["linear", "map"])
def test_the_goal_loss_trains_the_goal_head_in_supervised_and_rollout_learners(
    network, renderer, two_block_task, corpus_root
):
    from blocks.learn.oracle import OracleLearner
    from blocks.learn.supervised import SupervisedLearner
    from blocks.world.planner import Oracle

    torch.manual_seed(0)
    dm = DemonstrationDataModule(root=str(corpus_root), batch_size=8, max_train_examples=2, seed=0)
    batch = dm.steps.collate([dm.steps[i] for i in range(8)])
    learner = SupervisedLearner(dm.vocabulary.to_list(), network=network)

    def supervised_goal_error() -> float:
        with torch.no_grad():
            text = learner.policy.encode_instruction(batch["tokens"], batch["lengths"])
            features = learner.policy.joint_features(batch["images"], text, batch["previous_action"])
            goal = learner.policy.predict_goal(features, batch["images"], text)
            return float((goal - batch["goal"]).abs().mean())

    before = supervised_goal_error()
    fit_on(learner, [batch] * 20, max_epochs=1)
    assert supervised_goal_error() < 0.7 * before

    learner = OracleLearner(VOCAB, network=network, lr=5e-4)
    env = VectorBlocksEnv(render_frames=renderer.render)
    rollout = collect_rollout(
        learner.policy, env, [two_block_task] * 2, torch.tensor([[2, 3], [2, 4]]), torch.tensor([2, 2]),
        torch.Generator().manual_seed(0), oracle=Oracle(),
    )  # fmt: skip
    (chunk,) = split_update(rollout, slice(0, 2), 1)

    def rollout_goal_error() -> float:
        with torch.no_grad():
            images = gather_stacks(rollout.frames, chunk.steps, chunk.boards)
            text = learner.policy.encode_instruction(rollout.tokens, rollout.lengths)[chunk.boards]
            features = learner.policy.joint_features(
                images, text, rollout.previous_action[chunk.steps, chunk.boards]
            )
            target = rollout.goal[chunk.steps, chunk.boards]
            return float((learner.policy.predict_goal(features, images, text) - target).abs().mean())

    before = rollout_goal_error()
    fit_on(learner, [chunk] * 40, max_epochs=1)
    assert rollout_goal_error() < 0.7 * before

    frozen = OracleLearner(VOCAB, network={"goal_head": True}, goal_loss_weight=0.0)
    head = frozen.policy.goal_head.weight.detach().clone()
    fit_on(frozen, [chunk] * 2, max_epochs=1)
    assert torch.equal(frozen.policy.goal_head.weight, head)  # weight 0: the head is carried, not trained
    with pytest.raises(ValueError, match="model.goal_loss_weight"):
        SupervisedLearner(VOCAB, goal_loss_weight=-1.0)


def test_distillation_pulls_the_network_towards_its_teachers(renderer, two_block_task, tmp_path):
    """The KL term falls with a few updates; the teachers stay out of the checkpoint, which loads without them."""
    from blocks.learn import DistillationLearner, OracleLearner, load_learner

    torch.manual_seed(1)
    teacher = OracleLearner(VOCAB, lr=1e-2)
    rollout = two_board_oracle_rollout(teacher.policy, renderer, two_block_task)
    (chunk,) = split_update(rollout, slice(0, 2), 1)
    fit_on(teacher, [chunk] * 5, max_epochs=1).save_checkpoint(tmp_path / "teacher.ckpt")  # a peaked teacher
    student = DistillationLearner(VOCAB, teachers=[str(tmp_path / "teacher.ckpt")] * 2, lr=1e-3)
    student.load_teachers()

    def divergence(learner) -> float:
        return float(objective_on(learner, rollout)[1]["train/teacher_kl"])

    assert divergence(student) > 0.01
    # A network distilled from two copies of itself is at zero divergence: the mean of equal log-probs is theirs.
    twin = DistillationLearner(VOCAB, teachers=[str(tmp_path / "teacher.ckpt")] * 2)
    twin.policy.load_state_dict(teacher.policy.state_dict())
    twin.eval().load_teachers()
    assert divergence(twin) == pytest.approx(0.0, abs=1e-6)

    before = divergence(student)
    trainer = fit_on(student, [chunk] * 5, max_epochs=1)
    assert divergence(student) < before / 2
    trainer.save_checkpoint(tmp_path / "student.ckpt")
    (tmp_path / "teacher.ckpt").unlink()
    state = torch.load(tmp_path / "student.ckpt", weights_only=False)["state_dict"]
    assert all(k.startswith("policy.") for k in state) and len(state) == len(student.policy.state_dict())
    loaded = load_learner(str(tmp_path / "student.ckpt"))
    assert isinstance(loaded, DistillationLearner) and loaded.hparams.distill_weight == 1.0


def test_distillation_refuses_no_teachers_and_teachers_that_see_other_pictures(tmp_path):
    from blocks.learn import DistillationLearner, OracleLearner

    with pytest.raises(ValueError, match="needs a list of teacher checkpoints"):
        DistillationLearner(VOCAB, teachers=[])
    with pytest.raises(ValueError, match="distill_weight must be >= 0"):
        DistillationLearner(VOCAB, teachers=["a.ckpt"], distill_weight=-1.0)
    fit_on(OracleLearner(VOCAB, network={"frames": 3}), [], max_epochs=0).save_checkpoint(tmp_path / "t.ckpt")
    with pytest.raises(ValueError, match="network.frames=3"):
        DistillationLearner(VOCAB, teachers=[str(tmp_path / "t.ckpt")]).load_teachers()
    with pytest.raises(FileNotFoundError, match="no such checkpoint"):
        DistillationLearner(VOCAB, teachers=[str(tmp_path / "missing.ckpt")]).load_teachers()


def test_every_update_learns_from_episodes_its_own_weights_sampled(corpus_root, monkeypatch):
    """Each update must see the very weights that sampled its episodes; the check is shown to bite on the old
    recipe (rollouts of 4 episodes, one update per episode), which the bandit now refuses."""
    import pytorch_lightning as pl

    from blocks.data import rollouts as data
    from blocks.errors import ConfigError

    collect = data.RolloutStream.collect

    def sampled_and_updated(**options) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        sampled, updated = [], []

        def watched_collect(stream, *args):
            sampled.append(stream.policy.hidden.weight.detach().clone())
            return collect(stream, *args)

        class WatchUpdates(pl.Callback):
            def on_before_optimizer_step(self, trainer, module, optimizer):
                updated.append(module.policy.hidden.weight.detach().clone())

        monkeypatch.setattr(data.RolloutStream, "collect", watched_collect)
        dm = RolloutDataModule(root=str(corpus_root), max_train_examples=8, seed=0, **options)
        learner = BanditLearner(dm.vocabulary.to_list(), lr=1e-3)
        pl.Trainer(
            max_epochs=1,
            limit_val_batches=0,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[WatchUpdates()],
        ).fit(learner, dm)
        return sampled, updated  # fmt: skip

    sampled, updated = sampled_and_updated(batch_size=2)
    assert len(updated) == len(sampled) == 4 and not torch.equal(updated[0], updated[-1])
    assert all(torch.equal(a, b) for a, b in zip(updated, sampled, strict=True))

    monkeypatch.setattr(BanditLearner, "on_policy", False)
    sampled, updated = sampled_and_updated(batch_size=4, episodes_per_update=1)
    assert len(sampled) == 2 and len(updated) == 8
    assert not all(torch.equal(updated[i], sampled[i // 4]) for i in range(8))  # updates 2-4 of each: stale
    monkeypatch.setattr(BanditLearner, "on_policy", True)
    stale = RolloutDataModule(
        root=str(corpus_root), batch_size=4, episodes_per_update=2, max_train_examples=8
    )
    with pytest.raises(ConfigError, match="episodes its own weights sampled"):
        pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                   limit_val_batches=0).fit(BanditLearner(stale.vocabulary.to_list()), stale)  # fmt: skip


def test_a_goal_network_starts_from_another_of_its_shape_and_vocabulary(tmp_path):
    """``model.init_checkpoint`` for the goal network (stage 2 after generated instructions): the weights are the
    checkpoint's; another vocabulary or another shape is one line naming the key."""
    from blocks.learn.goal import GoalLearner

    words = ["<pad>", "<unk>", "move", "block", "left", "of"]
    torch.manual_seed(0)
    first = GoalLearner(words, word_dim=8, dim=16, heads=2, layers=1)
    path = tmp_path / "first.ckpt"
    torch.save({"hyper_parameters": dict(first.hparams), "state_dict": first.state_dict()}, path)
    torch.manual_seed(1)
    second = GoalLearner(words, word_dim=8, dim=16, heads=2, layers=1, init_checkpoint=str(path))
    fresh = GoalLearner(words, word_dim=8, dim=16, heads=2, layers=1)
    ours, theirs = second.predictor.state_dict(), first.predictor.state_dict()
    assert all(torch.equal(ours[k], theirs[k]) for k in theirs)
    assert not all(torch.equal(fresh.predictor.state_dict()[k], theirs[k]) for k in theirs)
    with pytest.raises(ConfigError, match="model.init_checkpoint=.*another vocabulary"):
        GoalLearner([*words, "right"], word_dim=8, dim=16, heads=2, layers=1, init_checkpoint=str(path))
    with pytest.raises(ConfigError, match="model.init_checkpoint=.*another shape"):
        GoalLearner(words, word_dim=8, dim=32, heads=2, layers=1, init_checkpoint=str(path))
