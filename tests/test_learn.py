"""The learners on small problems: update directions, overfitting, rollouts, streams under DDP, resuming."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from blocks.data.collect import collect_rollout
from blocks.data.demonstrations import DemonstrationDataModule
from blocks.data.rollout_tensors import Rollout, gather_stacks, split_update
from blocks.data.rollouts import RolloutDataModule, RolloutStream
from blocks.errors import ConfigError
from blocks.learn.bandit import BanditLearner
from blocks.model.policy import PolicyNetwork
from blocks.render.history import FrameHistory
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


@pytest.mark.parametrize("side", [6, 5])  # pictures of whole 4-byte words, and not
def test_gathered_stacks_equal_the_history_the_policy_saw(side):
    frames = torch.randint(0, 256, (7, 2, 3, side, side), dtype=torch.uint8)
    history = FrameHistory(2, 5, (3, side, side))
    seen = []
    for t in range(7):
        history.push(frames[t].numpy())
        stacks = gather_stacks(frames, torch.tensor([t, t]), torch.tensor([0, 1]))
        assert np.array_equal(stacks.numpy(), history.stack())
        seen.append(history.stack().copy())
    # Any (step, board) pairs in one call, in any order: each its own history, black before its first picture.
    steps, boards = torch.tensor([6, 0, 3, 1, 0]), torch.tensor([1, 0, 0, 1, 1])
    stacks = gather_stacks(frames, steps, boards)
    for row, (t, b) in enumerate(zip(steps.tolist(), boards.tolist(), strict=True)):
        assert np.array_equal(stacks[row].numpy(), seen[t][b])


def test_collect_rollout_records_what_happened(renderer, two_block_task):
    policy = PolicyNetwork(len(VOCAB))
    env = VectorBlocksEnv(reward=RewardConfig(), render_frames=renderer.render)
    tokens, lengths = torch.tensor([[2, 3], [2, 4]]), torch.tensor([2, 2])
    rollout = collect_rollout(
        policy, env, [two_block_task] * 2, tokens, lengths, torch.Generator().manual_seed(0)
    )
    steps = rollout.active.sum(0)
    assert rollout.frames.shape[0] == int(steps.max()) and rollout.frames.shape[1:] == (2, 3, 120, 120)
    assert rollout.previous_action[0].tolist() == [-1, -1]
    assert np.allclose(rollout.final_error.numpy(), env.error)
    assert (rollout.reward[~rollout.active] == 0).all()


def test_stream_shards_by_rank_with_equal_counts(monkeypatch, two_block_task):
    import blocks.data.base as base
    import blocks.data.rollouts as rollouts

    examples = list(range(10))
    stream = RolloutStream.__new__(RolloutStream)
    stream.examples, stream.rollouts_per_batch, stream.seed = examples, 3, 0
    shards = []
    for rank in (0, 1):
        for module in (base, rollouts):
            monkeypatch.setattr(module, "distributed_rank", lambda rank=rank: (rank, 2))
        shards.append(stream.shard(epoch=0))
    assert len(shards[0]) == len(shards[1]) == 6  # ceil(10 / (2 * 3)) = 2 batches of 3 per rank
    assert set(shards[0]) | set(shards[1]) == set(examples)
    for module in (base, rollouts):
        monkeypatch.setattr(module, "distributed_rank", lambda: (0, 1))
    assert not np.array_equal(stream.shard(0), stream.shard(1))  # a new order each epoch


def test_stream_state_resumes_where_it_stopped(corpus_root):
    def fresh():
        dm = RolloutDataModule(
            root=str(corpus_root), batch_size=2, max_train_examples=6, seed=0, chunks_per_update=2
        )
        torch.manual_seed(0)  # the same policy each time: a resumed stream must replay the same rollouts
        dm.attach_policy(PolicyNetwork(len(dm.vocabulary)))
        return dm

    def resolved(pieces):
        """The chunks of the stream's pieces, each rollout sampled when its first piece is asked for."""
        return [piece.pending.piece(piece.index, torch.device("cpu")) for piece in pieces]

    first = fresh()
    batches = resolved(first.train_dataloader())  # 3 rollouts of 2 episodes, 2 chunks each
    assert len(batches) == len(first.train_dataloader()) == 6
    assert [b.last for b in batches] == [False, True] * 3
    resumed = fresh()
    resumed.load_state_dict({"epoch": 0, "consumed": 4})
    last = resolved(resumed.train_dataloader())
    assert len(last) == 2 and torch.equal(last[0].rollout.frames, batches[4].rollout.frames)
    assert torch.equal(last[1].rollout.block, batches[5].rollout.block)
    assert resumed.state_dict() == {"epoch": 0, "consumed": 6}
    assert len(list(resumed.train_dataloader())) == 6 and resumed.state_dict()["epoch"] == 1
    # Mid-rollout (a checkpoint taken between an update's chunks): the rollout is collected again and the
    # batches already trained on are skipped, so the epoch still has exactly len() batches.
    middle = fresh()
    middle.load_state_dict({"epoch": 0, "consumed": 3})
    rest = resolved(middle.train_dataloader())
    assert [b.last for b in rest] == [True, False, True]
    assert torch.equal(rest[0].steps, batches[3].steps) and torch.equal(rest[0].boards, batches[3].boards)
    # Checkpoints written before the count was per batch saved whole rollouts as "position".
    old = fresh()
    old.load_state_dict({"epoch": 0, "position": 2})
    assert old.stream.consumed == 4


def test_supervised_batches_hold_the_demonstration_contexts(corpus_root):
    dm = DemonstrationDataModule(root=str(corpus_root), batch_size=4, max_train_examples=2, seed=0)
    steps = dm.steps
    batch = steps.collate([steps[0], steps[1]])
    assert batch["images"].shape == (2, 15, 120, 120)
    assert (
        batch["images"][0, :12].max() == 0 and batch["images"][0, 12:].max() > 0
    )  # first step: one real frame
    assert batch["previous_action"][0] == -1 and batch["previous_action"][1] == int(steps.plans[0].actions[0])
    assert batch["block"][0] == steps.plans[0].block


def test_replay_batches_draw_as_the_release_did_and_resume_exactly():
    from collections import Counter

    from blocks.data.base import ReplayBatches

    lengths = [7, 3, 12, 5, 9, 4, 11, 6]
    steps = np.split(np.arange(sum(lengths)), np.cumsum(lengths)[:-1])
    sampler = ReplayBatches(steps, seed=4, batch_size=8, memory=20)
    seen: list[int] = []  # every step in the order its example came, across epochs
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert len(batches) == len(lengths)  # one batch (one Adam step) per example
        for i, batch in zip(sampler.order(epoch), batches, strict=True):
            seen += steps[i].tolist()
            pool = seen[-20:]  # the memory: the last 20 steps, this example's included
            # Each half draws distinct places of the memory (a step there twice may come twice).
            assert all(not Counter(half) - Counter(pool) for half in (batch[:4], batch[4:]))
            assert len(batch) == min(4, len(pool)) + min(8 - min(4, len(pool)), len(pool))
        if epoch == 1:
            whole_epoch_1 = batches
    # Resuming in the middle of epoch 1 yields that epoch's remaining batches exactly.
    resumed = ReplayBatches(steps, seed=4, batch_size=8, memory=20, resume_at=(1, 3))
    resumed.set_epoch(1)
    assert list(resumed) == whole_epoch_1[3:]
    fixed = ReplayBatches(steps, seed=4, batch_size=8, memory=20, fixed_order=True)
    assert fixed.order(0) == fixed.order(2) != sampler.order(2)
    with pytest.raises(ConfigError, match="data.sampling"):
        DemonstrationDataModule(sampling="release")


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


@pytest.mark.parametrize("kind", ["supervised", "goal_predictor"])
def test_a_run_stopped_after_an_epoch_and_resumed_ends_with_the_same_weights(kind, corpus_root, tmp_path):
    """Each epoch's order is a function of (seed, epoch): a resumed run does not replay epoch 0's order."""
    import pytorch_lightning as pl

    from blocks.data.goals import GoalDataModule
    from blocks.learn.goal import GoalLearner
    from blocks.learn.supervised import SupervisedLearner

    def fit(max_epochs: int, ckpt_path: str | None = None) -> dict[str, torch.Tensor]:
        pl.seed_everything(0)
        if kind == "supervised":
            dm = DemonstrationDataModule(root=str(corpus_root), batch_size=8, max_train_examples=6, seed=3)
            learner = SupervisedLearner(dm.vocabulary.to_list())
        else:
            dm = GoalDataModule(root=str(corpus_root), batch_size=4, max_train_examples=24, seed=3)
            learner = GoalLearner(dm.vocabulary.to_list())
        every_epoch = pl.callbacks.ModelCheckpoint(
            tmp_path, "{epoch}", save_top_k=-1, save_on_train_epoch_end=True
        )
        trainer = pl.Trainer(max_epochs=max_epochs, logger=False, enable_progress_bar=False, limit_val_batches=0,
                             enable_model_summary=False, callbacks=[every_epoch])  # fmt: skip
        trainer.fit(learner, train_dataloaders=dm.train_dataloader(), ckpt_path=ckpt_path, weights_only=True)
        return {k: v.clone() for k, v in learner.state_dict().items()}

    whole = fit(3)
    resumed = fit(3, ckpt_path=str(tmp_path / "epoch=0.ckpt"))
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)


@pytest.mark.parametrize("interval, stop_after", [(0.25, 2), (0.5, 0), (0.25, 7)])
def test_a_run_stopped_mid_epoch_validates_every_check_through_later_resumes(interval, stop_after, corpus_root,
                                                                            tmp_path):  # fmt: skip
    """Stopped with SIGTERM (right after a validation, between two, at an epoch's end), resumed to its end, then
    resumed again for one more epoch: the run validates at the same steps, and ends with the same weights, as one
    that was never stopped. (The stop's checkpoint once counted the batch fetched but not trained, and the last
    validation of every later resume was dropped.)"""
    import os
    import signal

    import pytorch_lightning as pl

    from blocks.runs.callbacks import GracefulStop

    validated: list[tuple[int, int]] = []

    class SendSignal(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if trainer.current_epoch == 0 and batch_idx == stop_after:
                os.kill(os.getpid(), signal.SIGTERM)

    class Validations(pl.Callback):
        def on_validation_end(self, trainer, module):
            validated.append((trainer.current_epoch, trainer.global_step))

    def fit(folder, max_epochs, extra=(), ckpt_path=None) -> dict[str, torch.Tensor]:
        pl.seed_everything(0)
        dm = RolloutDataModule(root=str(corpus_root), batch_size=2, chunks_per_update=2, max_train_examples=8,
                               max_val_examples=2, seed=3)  # fmt: skip
        learner = BanditLearner(dm.vocabulary.to_list(), lr=1e-3)
        checkpoints = pl.callbacks.ModelCheckpoint(folder, "{epoch}-{step}", save_top_k=-1, save_last=True)
        trainer = pl.Trainer(max_epochs=max_epochs, logger=False, enable_progress_bar=False, num_sanity_val_steps=0,
                             val_check_interval=interval, enable_model_summary=False,
                             callbacks=[checkpoints, GracefulStop(), Validations(), *extra])  # fmt: skip
        trainer.fit(learner, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)
        return {k: v.clone() for k, v in learner.state_dict().items()}

    fit(tmp_path / "whole", 2)
    whole = fit(tmp_path / "whole", 3, ckpt_path=str(tmp_path / "whole" / "last.ckpt"))
    reference, validated[:] = list(validated), []
    assert len(reference) == 3 * round(1 / interval)  # 8 batches an epoch, a check every 2 or 4
    with pytest.raises(SystemExit):
        fit(tmp_path / "stopped", 2, [SendSignal()])
    last = str(tmp_path / "stopped" / "last.ckpt")
    fit(tmp_path / "stopped", 2, ckpt_path=last)
    resumed = fit(tmp_path / "stopped", 3, ckpt_path=last)
    assert validated == reference
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)


@pytest.mark.parametrize(
    "kind, signum",
    [("supervised", "SIGINT"), ("supervised_replay", "SIGTERM"), ("bandit", "SIGTERM"), ("bandit", "SIGINT")],
)
def test_an_interrupt_saves_last_ckpt_and_the_resumed_run_ends_as_one_never_stopped(kind, signum, corpus_root,
                                                                                     tmp_path):  # fmt: skip
    """Ctrl-C, or a cluster's SIGTERM, in the middle of an epoch (and of a rollout's update): the update finishes,
    last.ckpt is written, the process exits 128 + the signal; resumed, the run ends with the same weights."""
    import os
    import signal

    import pytorch_lightning as pl

    from blocks.learn.supervised import SupervisedLearner
    from blocks.runs.callbacks import GracefulStop

    class SendSignal(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if trainer.current_epoch == 0 and batch_idx == 2:
                os.kill(os.getpid(), getattr(signal, signum))

    def fit(folder, extra=(), ckpt_path=None) -> dict[str, torch.Tensor]:
        pl.seed_everything(0)
        if kind.startswith("supervised"):
            dm = DemonstrationDataModule(root=str(corpus_root), batch_size=8, max_train_examples=6, seed=3,
                                         sampling="replay" if kind == "supervised_replay" else "shuffle")  # fmt: skip
            learner = SupervisedLearner(dm.vocabulary.to_list())
        else:
            dm = RolloutDataModule(root=str(corpus_root), batch_size=2, chunks_per_update=2, max_train_examples=8,
                                   seed=3)  # fmt: skip
            learner = BanditLearner(dm.vocabulary.to_list(), lr=1e-3)
        checkpoints = pl.callbacks.ModelCheckpoint(folder, save_last=True)
        trainer = pl.Trainer(max_epochs=2, logger=False, enable_progress_bar=False, limit_val_batches=0,
                             enable_model_summary=False, callbacks=[checkpoints, GracefulStop(), *extra])  # fmt: skip
        trainer.fit(learner, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)
        return {k: v.clone() for k, v in learner.state_dict().items()}

    whole = fit(tmp_path / "whole")
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(SystemExit) as stopped:
        fit(tmp_path / "stopped", [SendSignal()])
    assert stopped.value.code == 128 + getattr(signal, signum)
    assert signal.getsignal(signal.SIGINT) is before  # the handlers are given back
    last = torch.load(tmp_path / "stopped" / "last.ckpt", weights_only=True)
    assert last["epoch"] == 0 and last["global_step"] == (
        3 if kind.startswith("supervised") else 2
    )  # whole updates only
    resumed = fit(tmp_path / "stopped", ckpt_path=str(tmp_path / "stopped" / "last.ckpt"))
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)
    # The resumed run's own last checkpoint replaced the interrupted one: no stale last.ckpt beside a last-v1.ckpt.
    assert not list((tmp_path / "stopped").glob("last-v*.ckpt"))
    final = torch.load(tmp_path / "stopped" / "last.ckpt", weights_only=True)
    assert (
        final["global_step"] == torch.load(tmp_path / "whole" / "last.ckpt", weights_only=True)["global_step"]
    )


def test_the_progress_bar_of_a_run_resumed_mid_epoch_shows_its_epoch_and_total(corpus_root, tmp_path):
    """Lightning skips ``on_train_epoch_start`` after a resume in mid-epoch: its own bar read ``4/?``."""
    import os
    import signal

    import pytorch_lightning as pl

    from blocks.runs.callbacks import GracefulStop, ProgressBar

    seen: list[tuple[object, str, int]] = []

    class SendSignal(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if batch_idx == 2:
                os.kill(os.getpid(), signal.SIGTERM)

    class Look(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            bar = trainer.progress_bar_callback.train_progress_bar
            seen.append((bar.total, bar.desc, bar.n))

    def fit(extra, ckpt_path=None) -> None:
        pl.seed_everything(0)
        dm = RolloutDataModule(root=str(corpus_root), batch_size=2, chunks_per_update=2, max_train_examples=8,
                               max_val_examples=2, seed=3)  # fmt: skip
        learner = BanditLearner(dm.vocabulary.to_list(), lr=1e-3)
        checkpoints = pl.callbacks.ModelCheckpoint(tmp_path, save_last=True)
        trainer = pl.Trainer(max_epochs=1, logger=False, num_sanity_val_steps=0, enable_model_summary=False,
                             limit_val_batches=0, callbacks=[checkpoints, GracefulStop(), ProgressBar(refresh_rate=1),
                                                             *extra])  # fmt: skip
        trainer.fit(learner, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)

    with pytest.raises(SystemExit):
        fit([SendSignal()])
    fit([Look()], ckpt_path=str(tmp_path / "last.ckpt"))
    assert seen and all(total == 8 and desc.startswith("Epoch 0") for total, desc, _ in seen)
    first = seen[0][2]  # it goes on counting from where the run stopped (after the update in progress)
    assert first >= 4 and [n for *_, n in seen] == list(range(first, 9))


def test_the_epoch_order_shards_by_rank_as_lightning_did_and_resumes_each_shard_exactly():
    """Two ranks see the shards Lightning's DistributedSamplerWrapper gave them (every second item of the one
    order, padded with its start); a rank resumed after 3 batches of 2 yields the rest of its own shard, and says
    the epoch's length, which the trainer counts (Lightning used to index past the shortened order: IndexError)."""
    from torch.utils.data import DistributedSampler

    from blocks.data.base import EpochOrder

    whole = EpochOrder(11, seed=3, rank=0, world=1)
    whole.set_epoch(2)
    order = list(whole)
    assert sorted(order) == list(range(11))
    shards = []
    for rank in (0, 1):
        sampler = EpochOrder(11, seed=3, rank=rank, world=2)
        sampler.set_epoch(2)
        shards.append(list(sampler))
        assert len(sampler) == 6 and isinstance(sampler, DistributedSampler)  # Lightning leaves it unwrapped
        resumed = EpochOrder(11, seed=3, resume_at=(2, 3 * 2), rank=rank, world=2)
        other = EpochOrder(11, seed=3, rank=rank, world=2)
        resumed.set_epoch(1), other.set_epoch(1)
        assert list(resumed) == list(other)  # another epoch: untouched
        resumed.set_epoch(2)
        assert list(resumed) == shards[rank][6:] and len(resumed) == 6
        resumed.set_epoch(2)
        assert list(resumed) == shards[rank]  # once only: the next time round the epoch is whole
    padded = order + order[:1]
    assert shards == [padded[0::2], padded[1::2]]
