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

The network is :class:`~blocks.model.spo.SPONetwork` (``network=spo``). Each switch can be turned off to measure
what it brings: ``schedule``, ``value_baseline``, ``ppo_epochs=1`` (one plain policy-gradient step), and the
network's ``text_block_head``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from blocks.errors import ConfigError
from blocks.learn.on_policy import RolloutLearner
from blocks.learn.rollout import Rollout, collect_rollout, gather_stacks
from blocks.model.policy import pad_token_ids
from blocks.world.planner import moved_block


def clipped_policy_loss(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantage: torch.Tensor, clip: float
) -> torch.Tensor:
    """PPO's clipped surrogate, negated to be minimised."""
    ratio = (log_prob - old_log_prob).exp()
    return -torch.min(ratio * advantage, ratio.clamp(1.0 - clip, 1.0 + clip) * advantage).mean()


class SPOLearner(RolloutLearner):
    kind = "spo"

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
    ):
        if ppo_epochs < 1 or schedule_window < 1:
            raise ConfigError("model.ppo_epochs and model.schedule_window must be at least 1")
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
        self.recent: deque[float] = deque(
            maxlen=schedule_window
        )  # final errors of the last rolled-out episodes
        self.imitate_next = False
        self.generator = torch.Generator()
        self.generator_seeded = False

    def on_fit_start(self) -> None:
        datamodule = self.trainer.datamodule
        if not hasattr(datamodule, "demonstration_batch"):
            raise ConfigError("model=spo rolls out one example at a time: use data=episodes")
        if not self.generator_seeded:  # a resumed run restores the generator's state instead
            self.generator.manual_seed(int(datamodule.seed) * 1000 + self.global_rank)
            self.generator_seeded = True

    def training_step(self, index: int, batch_idx: int) -> None:
        datamodule = self.trainer.datamodule
        if self.hparams.schedule and self.imitate_next:
            self.imitate_next = False
            demonstration = datamodule.demonstration_batch(int(index))
            if demonstration is not None:  # without one (Figure 4) the example is rolled out
                self.imitation_step(demonstration)
                return
        example = datamodule.train_examples[int(index)]
        tokens, lengths = pad_token_ids([datamodule.train_token_ids[int(index)]])
        rollout = collect_rollout(
            self.policy, datamodule.env, [example.task], tokens, lengths, self.generator, self.policy.frames
        )
        self.ppo_update(rollout, moved_block(example.task))
        error = float(rollout.final_error[0])
        if self.recent:
            self.imitate_next = error > float(np.mean(self.recent))
        self.recent.append(error)
        self.log_dict(
            {"train/rollout_error": error, "train/running_error": float(np.mean(self.recent)),
             "train/reward": rollout.reward[rollout.active].mean(), "train/rollout_steps": float(rollout.active.sum()),
             "train/frames": float(self.frames_seen)},
            batch_size=1,
        )  # fmt: skip
        self.log("error", float(np.mean(self.recent)), prog_bar=True, logger=False, batch_size=1)

    def step_optimizer(self, loss: torch.Tensor) -> None:
        optimizer = self.optimizers()
        optimizer.zero_grad()
        self.manual_backward(loss)
        if self.hparams.gradient_clip:
            self.clip_gradients(optimizer, self.hparams.gradient_clip, "norm")
        optimizer.step()

    def imitation_step(self, batch: dict[str, torch.Tensor]) -> None:
        """One step of the demonstration's cross-entropy (block and direction) in its own contexts."""
        batch = {k: v.to(self.device) for k, v in batch.items()}
        text = self.policy.encode_instruction(batch["tokens"], batch["lengths"])
        distribution = self.policy.action_distribution(
            self.policy.joint_features(batch["images"], text, batch["previous_action"])
        )
        loss = F.nll_loss(distribution.block_log_probs, batch["block"]) + F.nll_loss(
            distribution.direction_log_probs, batch["direction"]
        )
        self.step_optimizer(loss)
        self.frames_seen += len(batch["block"])
        self.log_dict({"train/imitation_loss": loss.detach(), "train/imitation": 1.0}, batch_size=1)

    def ppo_update(self, rollout: Rollout, gold_block: int) -> None:
        """``ppo_epochs`` full-batch passes over one episode's frames (see the module docstring)."""
        steps, boards = rollout.active.nonzero(as_tuple=True)
        images = gather_stacks(rollout.frames, steps, boards, self.policy.frames).to(self.device)
        previous = rollout.previous_action[steps, boards].to(self.device)
        direction = rollout.direction[steps, boards].to(self.device)
        reward = rollout.reward[steps, boards].to(self.device)
        tokens, lengths = rollout.tokens.to(self.device), rollout.lengths.to(self.device)
        gold = torch.full((len(steps),), gold_block, device=self.device)
        old_log_prob = None
        for _ in range(self.hparams.ppo_epochs):
            text = self.policy.encode_instruction(tokens, lengths).expand(len(steps), -1)
            features = self.policy.joint_features(images, text, previous)
            distribution = self.policy.action_distribution(features)
            log_prob = distribution.direction.log_prob(direction)
            if old_log_prob is None:
                old_log_prob = log_prob.detach()  # the policy that rolled the episode out
            value = self.policy.value(features)
            advantage = reward - value.detach() if self.hparams.value_baseline else reward
            policy_loss = clipped_policy_loss(log_prob, old_log_prob, advantage, self.hparams.clip)
            value_loss = F.mse_loss(value, reward)
            entropy = distribution.direction.entropy().mean()
            block_loss = F.nll_loss(distribution.block_log_probs, gold)
            loss = (
                policy_loss
                + self.hparams.value_loss_weight * value_loss
                - self.hparams.entropy_coef * entropy
                + self.hparams.block_loss_weight * block_loss
            )
            self.step_optimizer(loss)
        self.frames_seen += len(steps)
        with torch.no_grad():
            ratio = (log_prob.detach() - old_log_prob).exp()
            clipped = ((ratio - 1.0).abs() > self.hparams.clip).float().mean()
        self.log_dict(
            {"train/loss": loss.detach(), "train/value_loss": value_loss.detach(), "train/entropy": entropy.detach(),
             "train/block_loss": block_loss.detach(), "train/clip_fraction": clipped, "train/imitation": 0.0},
            batch_size=1,
        )  # fmt: skip

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint["spo_schedule"] = {
            "recent": list(self.recent),
            "imitate_next": self.imitate_next,
            "generator": self.generator.get_state(),
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        state = checkpoint.get("spo_schedule")
        if state:  # resumed exactly: the same window, the same next decision, the same samples
            self.recent.extend(state["recent"])
            self.imitate_next = bool(state["imitate_next"])
            self.generator.set_state(state["generator"])
            self.generator_seeded = True
