"""What every learner shares: the policy backbone, its checkpointed hyperparameters, and validation.

Validation rolls out the greedy policy on the tuning split and logs the distance error (``val/mean_error``,
the checkpoint monitor) with torchmetrics, which also gathers it across DDP ranks. A network with a goal head is
also rolled out by :class:`GoalSeekingAgent` (``val/goal_agent_mean_error``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytorch_lightning as pl
import torch
from torchmetrics import CatMetric

from blocks.agents.goal import GoalSeekingAgent
from blocks.agents.policy import PolicyAgent
from blocks.engine import compile_module
from blocks.errors import ConfigError, positive_number
from blocks.evaluate import run_episodes
from blocks.model.checkpoint import build_network, network_options
from blocks.model.policy import PolicyNetwork


class PolicyLearner(pl.LightningModule):
    """A LightningModule around :class:`PolicyNetwork`; subclasses define the training step."""

    kind = "base"

    def __init__(
        self,
        vocabulary: list[str],
        network: dict[str, Any] | None = None,
        lr: float = 1e-3,
        goal_loss_weight: float = 1.0,
    ):
        super().__init__()
        lr = positive_number(lr, "model.lr")
        if goal_loss_weight < 0:
            raise ConfigError(f"model.goal_loss_weight must be >= 0, got {goal_loss_weight}")
        # Used only with network.goal_head=true: the auxiliary goal regression's share of the loss.
        self.goal_loss_weight = goal_loss_weight
        # How the network runs, not what it is: kept out of the network's record, so any checkpoint loads eager.
        network = dict(network or {})
        self.compile_network = bool(network.pop("compile", False))
        # Everything needed to rebuild the network is saved, so load_from_checkpoint(path) needs no arguments.
        self.save_hyperparameters()
        self.hparams["network"] = network_options(network)
        self.hparams["kind"] = self.kind
        self.policy: PolicyNetwork = build_network(len(vocabulary), self.hparams.network)
        self.val_errors = CatMetric()
        self.val_min_distances = CatMetric()
        self.val_steps = CatMetric()
        self.val_horizon = CatMetric()
        self.val_right_block = CatMetric()
        self.val_goal_agent_errors = CatMetric()  # with a goal head: the errors of GoalSeekingAgent, too

    def setup(self, stage: str) -> None:
        """``network.compile=true``: the picture path (standardised stacks -> CNN) compiled in place, so the
        checkpoint's keys stay the eager network's."""
        if self.compile_network:  # once: fit, validate and test each call setup
            self.compile_network = False
            compile_module(self.policy.image_encoder, self.device.type)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def agent(self, greedy: bool = True) -> PolicyAgent:
        network = self.hparams.network
        return PolicyAgent(
            self.policy,
            self.hparams.vocabulary,
            frames=network.get("frames", 5),
            image_size=network.get("image_size", 120),
            greedy=greedy,
            render=self.hparams.get("render", "flat"),
        )

    def goal_agent(self) -> GoalSeekingAgent:
        """The agent that steps towards the goal head's prediction (needs ``network.goal_head=true``)."""
        acting = self.agent()
        return GoalSeekingAgent(
            self.policy, acting.vocab, acting.frames, acting.image_size, render=acting.render
        )

    def goal_loss(
        self, target: torch.Tensor, features: torch.Tensor, images: torch.Tensor, instruction: torch.Tensor
    ) -> torch.Tensor | None:
        """The weighted auxiliary goal regression (goal head or goal map); None without either or a weight."""
        if not self.policy.has_goal_head or self.goal_loss_weight == 0:
            return None
        loss = self.policy.goal_loss(target, features, images, instruction)
        self.log("train/goal_loss", loss, batch_size=len(target))
        return self.goal_loss_weight * loss

    def validation_step(self, indices: list[int], batch_idx: int) -> None:
        datamodule = self.trainer.datamodule
        examples = [datamodule.val_examples[i] for i in indices]
        play = partial(
            run_episodes, examples=examples, batch_size=len(examples), render_frames=datamodule.renderer.render,
            progress=False,
        )  # fmt: skip
        results = play(self.agent(greedy=True))
        as_tensor = lambda key: torch.tensor([getattr(r, key) for r in results], dtype=torch.float32)  # noqa: E731
        self.val_errors.update(as_tensor("error"))
        self.val_min_distances.update(as_tensor("min_distance"))
        self.val_steps.update(as_tensor("steps"))
        self.val_horizon.update(as_tensor("hit_horizon"))
        self.val_right_block.update(as_tensor("right_block"))
        if self.policy.has_goal_head:
            results = play(self.goal_agent())
            self.val_goal_agent_errors.update(as_tensor("error"))

    def on_validation_epoch_end(self) -> None:
        errors = self.val_errors.compute()
        figures = {
            "val/mean_error": errors.mean(),
            "val/median_error": errors.median(),
            "val/mean_min_distance": self.val_min_distances.compute().mean(),
            "val/mean_steps": self.val_steps.compute().mean(),
            "val/horizon_rate": self.val_horizon.compute().mean(),
            "val/right_block_rate": self.val_right_block.compute().mean(),
        }
        if self.policy.has_goal_head:
            goal_errors = self.val_goal_agent_errors.compute()
            figures["val/goal_agent_mean_error"] = goal_errors.mean()
            figures["val/goal_agent_median_error"] = goal_errors.median()
            self.val_goal_agent_errors.reset()
        # The metrics already gathered every rank's episodes: the all-reduce below averages equal values.
        self.log_dict(figures, prog_bar=False, sync_dist=True)
        self.log("val_error", figures["val/mean_error"], prog_bar=True, logger=False, sync_dist=True)
        for metric in (self.val_errors, self.val_min_distances, self.val_steps, self.val_horizon,
                       self.val_right_block):  # fmt: skip
            metric.reset()
