"""Scheduled policy optimisation (Xiong et al., IJCAI 2018) on this package's simulator, example by example.

For each training example, in order:

    if the schedule is on and the last rolled-out episode ended farther from its goal than the mean of the
    ``schedule_window`` episodes before it:
        one behaviour-cloning step on this example's demonstration (cross-entropy of its blocks and directions)
    else:
        roll out one episode with the sampling policy (the block drawn once and kept), then ``ppo_epochs`` passes
        over its frames of
            loss = clipped_policy_loss(direction log-probs, advantage = r - V(s))
                   + value_loss_weight * (V(s) - r)^2 - entropy_coef * H(direction)
                   + block_loss_weight * NLL(gold block)
        with ``r`` the immediate shaped reward (the value head regresses it: still a contextual bandit).

That is ``data.batch_size=1``, their recipe. With a batch of B examples (for a GPU: hundreds of boards rolled out
at once, ``data.simulator=torch`` keeping them on the device) the same rule runs batch by batch: every episode
that ended worse than the running mean sends one example of the next batch to imitation, those are cloned in one
step, the rest are rolled out together and share the ``ppo_epochs`` passes (each over chunks of at most
``chunk_frames`` frames whose gradients accumulate), and the window takes their errors in order.

The network is :class:`~blocks.model.spo.SPONetwork` (``network=spo``). Each switch can be turned off to measure
what it brings: ``schedule``, ``value_baseline``, ``ppo_epochs=1`` (one plain policy-gradient step), and the
network's ``text_block_head``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import torch
from lightning_fabric.utilities.apply_func import move_data_to_device

from blocks.data.collect import collect_device_rollout, collect_rollout
from blocks.data.rollout_tensors import Rollout, gather_stacks
from blocks.errors import ConfigError
from blocks.learn.losses import clipped_policy_loss, demonstration_loss, spo_loss
from blocks.learn.ranks import check_same_weights, local_gradients, sum_gradients, sum_over_ranks
from blocks.learn.rollout_learner import RolloutLearner
from blocks.model.policy import pad_token_ids
from blocks.tensor_world import TensorBlocksEnv
from blocks.world.planner import moved_block


class SPOLearner(RolloutLearner):
    kind = "spo"
    supervised_start = False  # its schedule imitates: model=spo chooses pretrain=none; checks refuse a start

    def __init__(
        self,
        vocabulary: list[str],
        network: dict[str, Any] | None = None,
        lr: float = 1e-4,
        gradient_clip: float | None = 5.0,
        init_checkpoint: str | None = None,
        ppo_epochs: int = 4,
        clip: float = 0.05,
        entropy_coef: float = 0.1,
        value_baseline: bool = True,
        value_loss_weight: float = 1.0,
        block_loss_weight: float = 1.0,
        schedule: bool = True,
        schedule_window: int = 100,
        chunk_frames: int = 512,
    ):
        if min(ppo_epochs, schedule_window, chunk_frames) < 1:
            raise ConfigError(
                "model.ppo_epochs, model.schedule_window and model.chunk_frames must be at least 1"
            )
        if not 0.0 < clip < 1.0:
            raise ConfigError(f"model.clip must lie in (0, 1), got {clip}")
        if min(entropy_coef, value_loss_weight, block_loss_weight) < 0:
            raise ConfigError(
                "model.entropy_coef, model.value_loss_weight and model.block_loss_weight must be >= 0"
            )
        if (network or {}).get("architecture") != "spo":
            raise ConfigError("model=spo needs network=spo (a value head and the block read from the words)")
        super().__init__(
            vocabulary, network, lr, 0.0, gradient_clip, init_checkpoint, reset_direction_head=False
        )
        self.recent: deque[float] = deque(maxlen=schedule_window)  # final errors of the last episodes
        self.imitations_due = 0  # examples the schedule sends to imitation next
        self.generator = torch.Generator()
        self.generator_seeded = False

    def on_fit_start(self) -> None:
        datamodule = self.trainer.datamodule
        if not hasattr(datamodule, "demonstration_batch"):
            raise ConfigError("model=spo rolls out the examples it is given itself: use data=episodes")
        if not self.generator_seeded:  # a resumed run restores the generator's state instead
            self.generator.manual_seed(int(datamodule.seed) * 1000 + self.global_rank)
            self.generator_seeded = True

    def training_step(self, indices: list[int], batch_idx: int) -> None:
        datamodule = self.trainer.datamodule
        imitate, roll_out = [], []
        for index in map(int, indices):  # the schedule's imitations due go to the batch's first examples
            if self.hparams.schedule and self.imitations_due > 0:
                self.imitations_due -= 1
                if datamodule.has_demonstration(index):  # without one (Figure 4): rolled out
                    imitate.append(index)
                    continue
            roll_out.append(index)
        demonstration = datamodule.demonstration_batch(imitate) if imitate else None
        rollout, gold = None, None
        if roll_out:
            examples = [datamodule.train_examples[i] for i in roll_out]
            tokens, lengths = pad_token_ids([datamodule.train_token_ids[i] for i in roll_out])
            rollout = self.roll_out(datamodule.env(self.device), [e.task for e in examples], tokens, lengths)
            gold = torch.tensor([moved_block(e.task) for e in examples])
        # Under DDP every rank takes the same optimizer steps (one of imitation if any rank imitates, then the PPO
        # passes if any rank rolled out), each on the mean gradient of all ranks' frames.
        local = [
            0 if demonstration is None else len(demonstration["block"]),
            0 if rollout is None else rollout.num_frames,
        ]
        total = sum_over_ranks(local, self.trainer.strategy, self.device)
        with local_gradients(self.trainer.strategy):
            if total[0]:
                self.imitation_step(demonstration, local[0] / total[0])
            if total[1]:
                self.ppo_update(rollout, gold, local[1] / total[1])
        if rollout is None:
            return
        errors = rollout.final_error.tolist()
        for error in errors:  # in order, as if the episodes had come one after another
            if self.hparams.schedule and self.recent and error > float(np.mean(self.recent)):
                self.imitations_due += 1
            self.recent.append(error)
        self.log_dict(
            {"train/rollout_error": float(np.mean(errors)), "train/running_error": float(np.mean(self.recent)),
             "train/reward": rollout.reward[rollout.active].mean(),
             "train/rollout_steps": rollout.active.sum(0).float().mean(), "train/frames": float(self.frames_seen)},
            batch_size=len(errors),
        )  # fmt: skip
        self.log("error", float(np.mean(self.recent)), prog_bar=True, logger=False, batch_size=1)

    def roll_out(self, env, tasks, tokens: torch.Tensor, lengths: torch.Tensor) -> Rollout:
        """One episode per task with the sampling policy, in the numpy world or the torch world on the device;
        either draws from ``generator`` (checkpointed), so that a resumed run samples the same actions."""
        if isinstance(env, TensorBlocksEnv):
            seed = int(torch.randint(2**62, (1,), generator=self.generator))
            generator = torch.Generator(env.device).manual_seed(seed)
            return collect_device_rollout(
                self.policy, env, tasks, tokens, lengths, generator, self.policy.frames
            )
        return collect_rollout(self.policy, env, tasks, tokens, lengths, self.generator, self.policy.frames)

    def step_optimizer(self) -> None:
        """Adam on the gradients accumulated so far, summed over ranks (each rank scaled its losses by its share of
        the frames), clipped; then clear them."""
        optimizer = self.optimizers()
        sum_gradients(self.parameters(), self.trainer.strategy, self.trainer.world_size)
        if self.hparams.gradient_clip:
            self.clip_gradients(optimizer, self.hparams.gradient_clip, "norm")
        optimizer.step()
        optimizer.zero_grad()

    def imitation_step(self, batch: dict[str, torch.Tensor] | None, share: float = 1.0) -> None:
        """One step of the demonstrations' cross-entropy (block and direction) in their own contexts; ``share``:
        this rank's part of all ranks' demonstration frames (None: this rank has none, the others step)."""
        if batch is not None:
            batch = {k: v.to(self.device) for k, v in batch.items()}
            text = self.policy.encode_instruction(batch["tokens"], batch["lengths"])
            distribution = self.policy.action_distribution(
                self.policy.joint_features(batch["images"], text, batch["previous_action"])
            )
            block_loss, direction_loss = demonstration_loss(
                distribution.block_log_probs,
                distribution.direction_log_probs,
                batch["block"],
                batch["direction"],
            )
            loss = block_loss + direction_loss
            self.manual_backward(loss * share)
            self.frames_seen += len(batch["block"])
            self.log_dict({"train/imitation_loss": loss.detach(), "train/imitation": 1.0}, batch_size=1)
        self.step_optimizer()

    def ppo_update(
        self, rollout: Rollout | None, gold_block: torch.Tensor | None, share: float = 1.0
    ) -> None:
        """``ppo_epochs`` passes over the rollout's frames, one Adam step each (see the module docstring);
        ``gold_block`` (B,) is the block each episode's goal moves, ``share`` this rank's part of all ranks'
        frames (None: this rank rolled nothing out, the others step)."""
        if rollout is None:
            for _ in range(self.hparams.ppo_epochs):
                self.step_optimizer()
            return
        rollout = move_data_to_device(rollout, self.device)
        steps, boards = rollout.active.nonzero(as_tuple=True)
        chunks = [
            (steps[rows], boards[rows])
            for rows in torch.arange(len(steps), device=self.device).split(self.hparams.chunk_frames)
        ]
        # The stacks are gathered once and serve every pass.
        images = [gather_stacks(rollout.frames, s, b, self.policy.frames) for s, b in chunks]
        gold = gold_block.to(self.device)
        old_log_prob: list[torch.Tensor] = []
        for epoch in range(self.hparams.ppo_epochs):
            # Frame-weighted sums of the loss, value loss, entropy, block loss and clip fraction.
            totals = torch.zeros(5, device=self.device)
            for c, (s, b) in enumerate(chunks):
                features, _, _ = self.rollout_features(rollout, s, b, images[c])
                distribution = self.policy.action_distribution(features)
                log_prob = distribution.direction.log_prob(rollout.direction[s, b])
                if epoch == 0:  # the policy that rolled the episodes out
                    old_log_prob.append(log_prob.detach())
                reward = rollout.reward[s, b]
                value = self.policy.value(features)
                advantage = reward - value.detach() if self.hparams.value_baseline else reward
                policy_loss = clipped_policy_loss(log_prob, old_log_prob[c], advantage, self.hparams.clip)
                entropy = distribution.direction.entropy().mean()
                loss, value_loss, block_loss = spo_loss(
                    policy_loss, value, reward, entropy, distribution.block_log_probs, gold[b],
                    self.hparams.value_loss_weight, self.hparams.entropy_coef, self.hparams.block_loss_weight,
                )  # fmt: skip
                self.manual_backward(loss * (share * len(s) / len(steps)))  # chunk means add to the mean
                with torch.no_grad():
                    clipped = ((log_prob - old_log_prob[c]).exp() - 1.0).abs() > self.hparams.clip
                    parts = torch.stack([loss, value_loss, entropy, block_loss, clipped.float().mean()])
                    totals += parts * len(s)
            self.step_optimizer()
        self.frames_seen += len(steps)
        means = (totals / len(steps)).tolist()  # the last pass's figures
        names = ("train/loss", "train/value_loss", "train/entropy", "train/block_loss", "train/clip_fraction")
        self.log_dict({**dict(zip(names, means, strict=True)), "train/imitation": 0.0}, batch_size=1)

    def on_train_epoch_end(self) -> None:
        """Under DDP, check that the ranks still hold the same weights (they step on the same summed gradients)."""
        check_same_weights(self.parameters(), self.trainer.strategy, self.trainer.world_size)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint["spo_schedule"] = {
            "recent": list(self.recent),
            "imitations_due": self.imitations_due,
            "generator": self.generator.get_state(),
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        state = checkpoint.get("spo_schedule")
        if state:  # resumed exactly: the same window, the same next decision, the same samples
            self.recent.extend(state["recent"])
            # (checkpoints of one example per batch wrote a flag)
            self.imitations_due = int(state.get("imitations_due", state.get("imitate_next", 0)))
            self.generator.set_state(state["generator"])
            self.generator_seeded = True
