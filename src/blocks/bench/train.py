"""Training frames per second beside the network's own floor (``python -m blocks.bench train``)."""

from __future__ import annotations

import time

import numpy as np

from blocks.bench.common import rate
from blocks.engine import keep_freed_memory


def network_floor(
    batch: int, device: str, seconds: float = 2.0, instructions: list[list[int]] | None = None
) -> dict[str, float]:
    """The paper's network alone on ``batch`` random 15 x 120 x 120 stacks on ``device``: forward frames/s (no
    gradient, as in a rollout) and forward + backward + Adam frames/s (an update). What a training step could
    reach if the data, the world and the trainer cost nothing: the yardstick the training figures are read
    against, measured in the same run on the same device and threads.

    ``instructions``: token ids to draw each batch's instructions from, padded to the batch's longest as the
    learners do (the LSTM's cost follows the longest instruction: the corpus's batches of 32 pad to about 40
    words); without them, 10-word instructions.
    """
    import torch

    from blocks.model.policy import PolicyNetwork, pad_token_ids

    torch.manual_seed(0)
    vocab_size = 1 + max((max(x, default=0) for x in instructions), default=1099) if instructions else 1100
    network = PolicyNetwork(vocab_size=vocab_size).to(device)
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-4)
    images = torch.randint(0, 256, (batch, 15, 120, 120), dtype=torch.uint8, device=device)
    if instructions:  # 16 batches drawn once, taken in turn: the padded length varies from batch to batch
        rng = np.random.default_rng(0)
        texts = [
            pad_token_ids([instructions[i] for i in rng.choice(len(instructions), batch)]) for _ in range(16)
        ]
    else:
        texts = [(torch.randint(2, 1100, (batch, 10)), torch.full((batch,), 10))]
    texts = [(tokens.to(device), lengths.to(device)) for tokens, lengths in texts]
    turn = [0]

    def text() -> tuple[torch.Tensor, torch.Tensor]:
        turn[0] += 1
        return texts[turn[0] % len(texts)]

    previous = torch.randint(-1, 81, (batch,), device=device)
    block = torch.randint(0, 20, (batch,), device=device)
    direction = torch.randint(0, 5, (batch,), device=device)

    def synchronise() -> None:
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize(device)

    def forward() -> int:
        with torch.no_grad():
            network(images, network.encode_instruction(*text()), previous)
        synchronise()
        return batch

    def update() -> int:
        distribution = network(images, network.encode_instruction(*text()), previous)
        loss = -distribution.log_prob_parts(block, direction).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        synchronise()
        return batch

    forward_rate, update_rate = rate(forward, seconds), rate(update, seconds)
    return {
        "floor_forward_frames_per_s": forward_rate,
        "floor_update_frames_per_s": update_rate,
        # A bandit frame is one forward in its rollout and one forward + backward + Adam in its update.
        "floor_bandit_frames_per_s": 1 / (1 / forward_rate + 1 / update_rate),
    }


def bench_train(
    batch: int = 32,
    seconds: float = 2.0,
    warmup: int = 3,
    episodes_per_update: int | None = None,
    skip_supervised: bool = False,
    simulator: str = "numpy",
    accelerator: str = "auto",
    chunks_per_update: int | None = None,
    spo: bool = False,
    stage_seconds: float = 0.5,
    precision: str = "32-true",
    compile: bool = False,
) -> dict[str, float | str]:
    """Frames per second of whole training steps, through Lightning's Trainer, for both learners.

    Supervised: rendering the 5-frame contexts of demonstration pairs, forward, backward, Adam. Bandit: rolling
    out ``batch`` episodes with the sampling policy (rendering, history, batched forward; on the model's device
    with ``simulator="torch"``), then the update on every frame of the rollout. With ``spo``, also SPO
    (``model=spo``) at ``batch`` examples per batch: rollout, then its 4 PPO passes (frames counted once; the
    schedule off, so that every example is rolled out). Uses the real corpus's training examples.
    """
    import pytorch_lightning as pl
    import torch

    from blocks.bench.stages import cnn_floor
    from blocks.data.demonstrations import DemonstrationDataModule
    from blocks.data.rollouts import RolloutDataModule
    from blocks.learn.bandit import BanditLearner
    from blocks.learn.supervised import SupervisedLearner

    keep_freed_memory()  # as train.py and eval.py do

    class Clock(pl.Callback):
        """Counts frames and time after ``warmup`` steps; stops the run after ``seconds``."""

        def __init__(self, count_frames):
            self.count_frames, self.frames, self.start, self.steps = count_frames, 0, None, 0

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self.steps += 1
            if self.steps == warmup:
                self.start = time.perf_counter()
            elif self.start is not None:
                self.frames += self.count_frames(batch)
                if time.perf_counter() - self.start >= seconds and getattr(batch, "last", True):
                    self.elapsed = time.perf_counter() - self.start
                    trainer.should_stop = True

    def run(module, datamodule, count_frames) -> float:
        clock = Clock(count_frames)
        trainer = pl.Trainer(
            accelerator=accelerator, devices=1, max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
            enable_model_summary=False, limit_val_batches=0, callbacks=[clock],
            gradient_clip_val=5.0 if module.automatic_optimization else None, precision=precision,
        )  # fmt: skip
        trainer.fit(module, datamodule)
        devices.append(trainer.strategy.root_device)
        return clock.frames / clock.elapsed

    torch.manual_seed(0)
    devices: list[torch.device] = []
    network = {"compile": True} if compile else {}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {batch}, 120x120, precision "
          f"{precision}{', compiled' if compile else ''}")  # fmt: skip
    figures: dict[str, float | str] = {}
    if not skip_supervised:
        supervised_data = DemonstrationDataModule(batch_size=batch, seed=0)
        supervised_rate = run(
            SupervisedLearner(supervised_data.vocabulary.to_list(), network),
            supervised_data,
            lambda b: len(b["block"]),
        )
        print(f"supervised: {supervised_rate:,.0f} frames/s (batches of {batch} demonstration steps)")
        figures["supervised_frames_per_s"] = supervised_rate
        figures |= supervised_breakdown(supervised_data, batch / supervised_rate, stage_seconds)

    bandit_data = RolloutDataModule(
        batch_size=batch,
        episodes_per_update=episodes_per_update,
        seed=0,
        simulator=simulator,
        chunks_per_update=chunks_per_update,
    )
    bandit = BanditLearner(bandit_data.vocabulary.to_list(), network)
    rollout_clock = RolloutClock(bandit)
    with (
        torch.no_grad()
    ):  # a policy that stops about as rarely as a trained one (28.7 steps on dev in the paper)
        bandit.policy.direction_head.bias[4] = -3.0
    lengths = []

    def bandit_frames(piece) -> int:
        chunk = piece.chunk
        if chunk.last:
            lengths.append(float(chunk.rollout.active.sum(0).float().mean()))
        return len(chunk.steps)

    if devices and devices[0].type == "cuda":
        torch.cuda.reset_peak_memory_stats(devices[0])
    bandit_rate = run(bandit, bandit_data, bandit_frames)
    device = devices[-1]
    print(
        f"bandit: {bandit_rate:,.0f} frames/s on {device} with the {simulator} simulator (rollout + update of "
        f"{batch} episodes, {np.mean(lengths):.1f} steps per episode, {batch // bandit_data.episodes_per_update} updates of "
        f"{bandit_data.chunks_per_update} chunks each)"
    )
    figures |= {"bandit_frames_per_s": bandit_rate}
    figures |= rollout_clock.breakdown(bandit_rate, stage_seconds)
    # The yardstick reads the corpus's own instructions, padded per batch as the learners pad them.
    floor = network_floor(batch, str(device), seconds, bandit_data.token_ids(bandit_data.train_examples))
    figures |= floor | {"device": str(device)}
    print(f"the network alone on {device}: forward {floor['floor_forward_frames_per_s']:,.0f} frames/s, forward + "
          f"backward + Adam {floor['floor_update_frames_per_s']:,.0f}, so a bandit frame (both) at most "
          f"{floor['floor_bandit_frames_per_s']:,.0f}")  # fmt: skip
    cnn = cnn_floor(batch, seconds=stage_seconds)
    figures |= cnn
    print(f"the paper's CNN alone (float32, channels last, batch {batch}): forward {cnn['cnn_floor_forward_frames_per_s']:,.0f} "
          f"frames/s, forward + backward + Adam {cnn['cnn_floor_frames_per_s']:,.0f}, so a bandit frame at most "
          f"{cnn['cnn_floor_bandit_frames_per_s']:,.0f}")  # fmt: skip
    if "supervised_frames_per_s" in figures:
        figures["supervised_share_of_cnn_floor"] = (
            figures["supervised_frames_per_s"] / cnn["cnn_floor_frames_per_s"]
        )
        print(f"supervised at {figures['supervised_share_of_cnn_floor']:.0%} of the CNN alone")
    figures["bandit_share_of_cnn_floor"] = bandit_rate / cnn["cnn_floor_bandit_frames_per_s"]
    print(
        f"bandit at {figures['bandit_share_of_cnn_floor']:.0%} of the CNN alone (one forward and one update a frame)"
    )
    if "supervised_frames_per_s" in figures:
        figures["supervised_share_of_floor"] = (
            figures["supervised_frames_per_s"] / floor["floor_update_frames_per_s"]
        )
        print(
            f"supervised at {figures['supervised_share_of_floor']:.0%} of its floor (forward + backward + Adam)"
        )
    figures["bandit_share_of_floor"] = bandit_rate / floor["floor_bandit_frames_per_s"]
    print(
        f"bandit at {figures['bandit_share_of_floor']:.0%} of its floor (one forward and one update a frame)"
    )
    if device.type == "cuda":
        figures["bandit_peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        print(f"peak GPU memory during the bandit: {figures['bandit_peak_gpu_memory_gib']:.2f} GiB")
    if spo:
        from blocks.data.episodes import EpisodeDataModule
        from blocks.learn.spo import SPOLearner

        spo_data = EpisodeDataModule(batch_size=batch, simulator=simulator, seed=0)
        learner = SPOLearner(
            spo_data.vocabulary.to_list(), {"architecture": "spo", **network}, schedule=False
        )
        counted = [0]

        def spo_frames(_) -> int:
            new, counted[0] = learner.frames_seen - counted[0], learner.frames_seen
            return new

        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        spo_rate = run(learner, spo_data, spo_frames)
        print(f"spo: {spo_rate:,.0f} frames/s on {devices[-1]} with the {simulator} simulator ({batch} examples "
              f"a batch, rollout + 4 PPO passes)")  # fmt: skip
        figures["spo_frames_per_s"] = spo_rate
        if device.type == "cuda":
            figures["spo_peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return figures


def supervised_breakdown(datamodule, step_seconds: float, seconds: float) -> dict[str, float]:
    """The supervised step's stages on real batches: drawing and stacking the pictures (a batch's collation),
    then the network's stages (:func:`blocks.bench.stages.network_stages`) on one of those batches."""
    from blocks.bench.stages import network_stages, print_breakdown, seconds_per_call
    from blocks.model.policy import PolicyNetwork

    batches = iter(datamodule.train_dataloader())
    times = {"pictures": seconds_per_call(lambda: next(batches), seconds)}
    data = next(batches)
    network = PolicyNetwork(len(datamodule.vocabulary.to_list()))
    times |= network_stages(network, data["images"], data["tokens"], data["lengths"], data["previous_action"],
                            data["block"], data["direction"], seconds)  # fmt: skip
    return print_breakdown("supervised", times, step_seconds, len(data["block"]))


class RolloutClock:
    """Times a rollout learner's rollouts inside the real fit (the first piece of each update samples them, the
    others are already in hand) and keeps the update's largest chunk, whose update stages :meth:`breakdown` then
    times on their own and scales to a whole update."""

    def __init__(self, learner):
        self.learner, self.resolve_seconds, self.updates, self.pieces, self.chunk = learner, 0.0, 0, 0, None
        resolve = learner.resolve

        def timed(piece):
            start = time.perf_counter()
            chunk = resolve(piece)
            self.resolve_seconds += time.perf_counter() - start
            self.pieces += 1
            self.updates += int(chunk.last)
            if self.chunk is None or len(chunk.steps) >= len(self.chunk.steps):
                self.chunk = chunk
            return chunk

        learner.resolve = timed

    def breakdown(self, frames_per_s: float, seconds: float) -> dict[str, float]:
        import torch

        from blocks.bench.stages import network_stages, print_breakdown, seconds_per_call
        from blocks.data.rollout_tensors import gather_stacks

        chunk, updates = self.chunk, max(self.updates, 1)
        rollout, steps, boards = chunk.rollout, chunk.steps, chunk.boards
        frames_per_update = float(rollout.active.sum())
        per_frame = frames_per_update / len(steps)  # the stages that cost by the frame, scaled to the update
        chunks = self.pieces / updates  # each chunk encodes its own boards' instructions
        policy = self.learner.policy
        images = gather_stacks(rollout.frames, steps, boards, policy.frames)
        unique = torch.unique(boards)
        stages = network_stages(
            policy, images, rollout.tokens[unique], rollout.lengths[unique], rollout.previous_action[steps, boards],
            rollout.block[steps, boards], rollout.direction[steps, boards], seconds, self.learner.hparams.gradient_clip,
        )  # fmt: skip
        times = {"rollout": self.resolve_seconds / updates}
        times["stacking"] = per_frame * seconds_per_call(
            lambda: gather_stacks(rollout.frames, steps, boards, policy.frames), seconds
        )
        scale = {"text": chunks, "optimizer": 1}
        times |= {k: v * scale.get(k, per_frame) for k, v in stages.items()}
        return print_breakdown("bandit", times, frames_per_update / frames_per_s, int(frames_per_update))
