"""Scheduled policy optimisation (model=spo): its network, its loss and its schedule, on real examples."""

from __future__ import annotations

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from blocks.data.collect import collect_rollout
from blocks.data.episodes import EpisodeDataModule
from blocks.errors import ConfigError
from blocks.learn.losses import clipped_policy_loss
from blocks.learn.spo import SPOLearner
from blocks.model.checkpoint import build_network
from blocks.model.policy import pad_token_ids
from blocks.model.spo import SPONetwork
from blocks.world.vector_env import VectorBlocksEnv

SPO = {"architecture": "spo"}


def test_the_clipped_surrogate_stops_pulling_past_the_clip():
    old = torch.zeros(3)
    advantage = torch.tensor([1.0, 1.0, -1.0])
    inside = clipped_policy_loss(torch.log(torch.tensor([1.02, 1.02, 0.98])), old, advantage, clip=0.05)
    assert inside.item() == pytest.approx(-(1.02 + 1.02 - 0.98) / 3, rel=1e-5)
    # beyond 1 + clip a positive advantage earns no more, and its gradient vanishes
    far = torch.log(torch.tensor([1.5])).requires_grad_()
    loss = clipped_policy_loss(far, torch.zeros(1), torch.ones(1), clip=0.05)
    loss.backward()
    assert loss.item() == pytest.approx(-1.05) and far.grad.abs().item() == 0.0


def test_the_block_is_read_from_the_words_alone_and_the_value_from_the_state():
    torch.manual_seed(0)
    net = build_network(30, SPO)
    assert isinstance(net, SPONetwork) and not net.has_goal_head
    text = net.encode_instruction(torch.tensor([[2, 3, 4]] * 2), torch.tensor([3, 3]))
    images = torch.randint(0, 256, (2, 15, 120, 120), dtype=torch.uint8)
    features = net.joint_features(images, text, torch.tensor([-1, 6]))
    out = net.action_distribution(features)
    assert torch.allclose(
        out.block_log_probs[0], out.block_log_probs[1]
    )  # other picture, other previous action
    # The release's initialisation starts the picture path tiny: the difference is small but there.
    assert not torch.equal(out.direction_log_probs[0], out.direction_log_probs[1])
    assert net.value(features).shape == (2,)
    ablated = build_network(30, {**SPO, "text_block_head": False})
    features = ablated.joint_features(images, text, torch.tensor([-1, 6]))
    blocks = ablated.action_distribution(features).block_log_probs
    assert not torch.equal(blocks[0], blocks[1])


def test_a_rollout_keeps_the_first_block_it_draws(renderer, two_block_task):
    torch.manual_seed(0)
    net = build_network(10, SPO)
    torch.nn.init.zeros_(net.block_head.weight)  # a uniform block distribution: redrawing would change it
    tokens, lengths = pad_token_ids([[2, 3]] * 4)
    env = VectorBlocksEnv(render_frames=renderer.render)
    rollout = collect_rollout(
        net, env, [two_block_task] * 4, tokens, lengths, torch.Generator().manual_seed(0)
    )
    for board in range(4):
        acted = rollout.block[rollout.active[:, board], board]
        assert len(set(acted.tolist())) == 1
    assert len(set(rollout.block[0].tolist())) > 1  # the boards drew different blocks
    assert rollout.goal is None  # no goal head, no goal targets


def test_it_needs_its_network_and_sane_settings():
    with pytest.raises(ConfigError, match="network=spo"):
        SPOLearner(["<pad>", "<unk>"], {"architecture": "paper"})
    with pytest.raises(ConfigError, match="model.clip"):
        SPOLearner(["<pad>", "<unk>"], SPO, clip=1.5)


@pytest.mark.parametrize("schedule", [True, False])
def test_the_schedule_imitates_after_an_episode_worse_than_the_running_mean(
    schedule, corpus_root, monkeypatch
):
    """Each example is either rolled out (4 PPO steps) or, right after a worse-than-average episode, imitated (one
    step); without the schedule every example is rolled out."""
    data = EpisodeDataModule(root=str(corpus_root), max_train_examples=12, max_val_examples=4, seed=0)
    learner = SPOLearner(data.vocabulary.to_list(), SPO, schedule=schedule, schedule_window=100)
    events: list[str] = []
    rollout_errors: list[float] = []
    original_ppo, original_imitation = learner.ppo_update, learner.imitation_step

    def ppo(rollout, gold_block, share):
        assert rollout.num_boards == 1 and share == 1.0
        events.append("rollout")
        rollout_errors.append(float(rollout.final_error[0]))
        original_ppo(rollout, gold_block, share)

    def imitation(batch, share):
        assert set(batch["tokens"].tolist()[0]) != {0}
        events.append("imitation")
        original_imitation(batch, share)

    monkeypatch.setattr(learner, "ppo_update", ppo)
    monkeypatch.setattr(learner, "imitation_step", imitation)
    trainer = pl.Trainer(max_epochs=1, limit_val_batches=0, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
    trainer.fit(learner, data)
    assert len(events) == 12
    expected, seen = [], []
    for event in events:  # replay the rule on the rolled-out errors
        if expected and expected[-1] == "imitate":
            expected[-1] = "done"
            assert event == "imitation"
            continue
        assert event == "rollout"
        error = rollout_errors[len(seen)]
        if seen and schedule and error > np.mean(seen):
            expected.append("imitate")
        else:
            expected.append("done")
        seen.append(error)
    rollouts = events.count("rollout")
    assert trainer.global_step == 4 * rollouts + events.count("imitation")
    assert (events.count("imitation") > 0) == schedule


def test_the_schedule_and_the_sampling_resume_exactly():
    learner = SPOLearner(["<pad>", "<unk>", "a"], SPO)
    learner.generator.manual_seed(5)
    learner.recent.extend([3.0, 5.0])
    learner.imitations_due = 2
    saved: dict = {}
    learner.on_save_checkpoint(saved)
    expected = torch.rand(3, generator=learner.generator)
    resumed = SPOLearner(["<pad>", "<unk>", "a"], SPO)
    resumed.on_load_checkpoint(saved)
    assert list(resumed.recent) == [3.0, 5.0] and resumed.imitations_due == 2 and resumed.generator_seeded
    assert torch.equal(torch.rand(3, generator=resumed.generator), expected)
    # a checkpoint of the one-example version (a flag) resumes with one imitation due
    saved["spo_schedule"] = {
        "recent": [1.0],
        "imitate_next": True,
        "generator": saved["spo_schedule"]["generator"],
    }
    old = SPOLearner(["<pad>", "<unk>", "a"], SPO)
    old.on_load_checkpoint(saved)
    assert old.imitations_due == 1


@pytest.mark.parametrize("batch_size", [1, 3])
def test_the_example_stream_resumes_inside_an_epoch(batch_size):
    from blocks.data.episodes import ExampleStream

    stream = ExampleStream(10, seed=3, batch_size=batch_size)
    first = list(stream)
    assert len(first) == len(stream) == -(-10 // batch_size)
    assert all(len(b) == batch_size for b in first)  # the last batch wraps around: equal batches
    flat = [i for b in first for i in b]
    assert sorted(set(flat)) == list(range(10)) and len(flat) == len(first) * batch_size
    again = ExampleStream(10, seed=3, batch_size=batch_size)
    again.epoch, again.consumed = 0, 2  # as restored from a checkpoint taken after 2 batches of epoch 0
    assert list(again) == first[2:]
    second = list(stream)
    assert stream.epoch == 1 and second != first and sorted({i for b in second for i in b}) == list(range(10))


def _spo_fit(learner, data, **trainer):
    trainer = pl.Trainer(max_epochs=1, limit_val_batches=0, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, **trainer)  # fmt: skip
    trainer.fit(learner, data)
    return trainer


def test_a_batch_follows_the_same_schedule_episode_by_episode(corpus_root, monkeypatch):
    """With 4 examples a batch, each episode worse than the running mean sends one example of the next batch to
    imitation (cloned together in one step), the others are rolled out together and share the PPO passes."""
    data = EpisodeDataModule(
        root=str(corpus_root), max_train_examples=24, max_val_examples=4, seed=0, batch_size=4
    )
    learner = SPOLearner(data.vocabulary.to_list(), SPO, schedule_window=100, ppo_epochs=2)
    batches: list[dict[str, list]] = []  # per training step: imitated example counts, rolled-out errors
    original_step, original_ppo, original_batch = (
        learner.training_step,
        learner.ppo_update,
        data.demonstration_batch,
    )

    def training_step(indices, batch_idx):
        assert len(indices) == 4
        batches.append({"imitation": [], "rollout": []})
        return original_step(indices, batch_idx)

    def ppo(rollout, gold_block, share):
        assert gold_block.shape == (rollout.num_boards,)
        batches[-1]["rollout"].extend(rollout.final_error.tolist())
        original_ppo(rollout, gold_block, share)

    def demonstration_batch(indices):
        batches[-1]["imitation"].append(len(indices))
        return original_batch(indices)

    monkeypatch.setattr(learner, "training_step", training_step)
    monkeypatch.setattr(learner, "ppo_update", ppo)
    monkeypatch.setattr(data, "demonstration_batch", demonstration_batch)
    trainer = _spo_fit(learner, data)
    seen: list[float] = []
    due, steps = 0, 0
    for batch in batches:  # replay the rule
        imitated = min(due, 4)
        assert (
            batch["imitation"] == ([imitated] if imitated else []) and len(batch["rollout"]) == 4 - imitated
        )
        due -= imitated
        for error in batch["rollout"]:
            due += bool(seen) and error > np.mean(seen)
            seen.append(error)
        steps += bool(imitated) + 2 * bool(batch["rollout"])
    assert len(batches) == 6 and len(seen) < 24  # some examples were imitated
    assert trainer.global_step == steps


def test_an_update_in_chunks_is_the_update_in_one_piece(corpus_root):
    """Chunks of 7 frames accumulate the same gradients as the whole rollout at once: the same weights after."""
    data = EpisodeDataModule(
        root=str(corpus_root), max_train_examples=3, max_val_examples=2, seed=0, batch_size=3
    )
    torch.manual_seed(0)
    learners = [SPOLearner(data.vocabulary.to_list(), SPO, chunk_frames=n, schedule=False) for n in (7, 512)]
    learners[1].load_state_dict(learners[0].state_dict())
    tokens, lengths = pad_token_ids(data.train_token_ids[:3])
    tasks = [e.task for e in data.train_examples[:3]]
    rollout = collect_rollout(learners[0].policy, data.env("cpu"), tasks, tokens, lengths,
                              torch.Generator().manual_seed(0))  # fmt: skip
    assert rollout.num_frames > 7
    before = learners[0].policy.value_head.weight.detach().clone()
    for learner in learners:
        trainer = _spo_fit(learner, data, max_steps=0)  # attaches the optimizer
        assert trainer.global_step == 0
        learner.log_dict = lambda *args, **kwargs: None  # outside a training loop
        learner.ppo_update(rollout, torch.tensor([0, 1, 2]))
    for a, b in zip(learners[0].parameters(), learners[1].parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert not torch.equal(learners[0].policy.value_head.weight, before)  # the update did move the weights


def test_it_rolls_out_in_the_torch_world(corpus_root):
    """``data.simulator=torch``: the batch is rolled out by the torch world (on the CPU here), resumably seeded."""
    data = EpisodeDataModule(root=str(corpus_root), max_train_examples=6, max_val_examples=2, seed=0, batch_size=3,
                             simulator="torch")  # fmt: skip
    learner = SPOLearner(data.vocabulary.to_list(), SPO, schedule=False, ppo_epochs=1)
    from blocks.tensor_world import TensorBlocksEnv

    assert isinstance(data.env(torch.device("cpu")), TensorBlocksEnv)
    trainer = _spo_fit(learner, data)
    assert trainer.global_step == 2 and learner.frames_seen >= 6
    with pytest.raises(ConfigError, match="data.simulator"):
        EpisodeDataModule(root=str(corpus_root), simulator="jax")


class _GlooStrategy:
    """The one method of Lightning's strategy the rank reductions use, over a real gloo process group."""

    model = None

    @staticmethod
    def reduce(tensor: torch.Tensor, reduce_op: str) -> torch.Tensor:
        import torch.distributed as dist

        op = {"sum": dist.ReduceOp.SUM, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}[reduce_op]
        dist.all_reduce(tensor, op=op)
        return tensor


def _ranks_worker(rank: int, port: int, out: str) -> None:
    import torch.distributed as dist

    from blocks.learn.ranks import check_same_weights, sum_gradients, sum_over_ranks

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.manual_seed(0)  # the same weights on both ranks
    layer, spare = torch.nn.Linear(3, 2), torch.nn.Linear(2, 1)
    (layer(torch.full((1, 3), float(rank + 1))).sum()).backward()  # rank-dependent gradients; spare has none
    if rank == 1:
        spare(torch.ones(1, 2)).sum().backward()  # only rank 1 gives the spare layer a gradient
    parameters = [*layer.parameters(), *spare.parameters()]
    sum_gradients(parameters, _GlooStrategy, world_size=2)
    counts = sum_over_ranks([rank, 10], _GlooStrategy, torch.device("cpu"))
    check_same_weights(parameters, _GlooStrategy, world_size=2)
    diverged = ""
    with torch.no_grad():
        layer.weight += rank
    try:
        check_same_weights(parameters, _GlooStrategy, world_size=2)
    except RuntimeError as error:
        diverged = str(error)
    torch.save(
        {"grads": [p.grad for p in parameters], "counts": counts, "diverged": diverged}, f"{out}/{rank}.pt"
    )
    dist.destroy_process_group()


def test_two_ranks_step_on_the_sum_of_their_gradients(tmp_path):
    """SPO's reductions over a real two-process group: every rank ends with the sum of both ranks' gradients (a
    layer without a gradient on one rank counted as zeros), the counts summed, and drifted weights caught."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_ranks_worker, args=(port, str(tmp_path)), nprocs=2)
    results = [torch.load(tmp_path / f"{rank}.pt") for rank in (0, 1)]
    # d(sum W x + b)/dW = x per output row: x is 1s on rank 0 and 2s on rank 1, so the sum is 3s
    assert torch.equal(results[0]["grads"][0], torch.full((2, 3), 3.0))
    assert torch.equal(results[0]["grads"][1], torch.full((2,), 2.0))
    assert torch.equal(results[0]["grads"][2], torch.ones(1, 2)) and torch.equal(
        results[0]["grads"][3], torch.ones(1)
    )
    for a, b in zip(results[0]["grads"], results[1]["grads"], strict=True):
        assert torch.equal(a, b)
    assert results[0]["counts"] == results[1]["counts"] == [1, 20]
    assert all("diverged" in r["diverged"] for r in results)
