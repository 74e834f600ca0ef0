"""Imitation of an oracle on the learner's own states (DAgger with the planner as the expert).

SUPERVISED sees only the states on the demonstrations' paths; once its greedy policy strays (a failed move, a
wrong turn), it stands where no label ever was and often repeats the same blocked move to the horizon. Here the
learner rolls out its own sampling policy, as the bandit does, and every state it visits is labelled by
:class:`~blocks.world.planner.Oracle`: the moved block and all directions on a shortest path from where that
block stands now (STOP once it is there). The loss is the likelihood of the oracle's *set*:

    loss = -mean_t[ log p_block(b*) + log sum_{d in D*_t} p_dir(d) ]

so the learner is never asked to reproduce one search's tie-breaks. The oracle needs the goal, so it is a
training-time teacher only: at test time the agent sees the image and the instruction, like every other agent.

With ``oracle_rollin`` > 0, each board takes the oracle's action instead of its own at each step with that
probability (DAgger's mixture): more episodes reach the goal, so STOP, the one label a wandering policy seldom
earns, is seen more often. ``stop_radius`` > 0 counts STOP as good that close to the goal, too.
"""

from __future__ import annotations

from typing import Any

import torch

from blocks.data.rollout_tensors import Rollout
from blocks.errors import ConfigError
from blocks.learn.losses import oracle_set_loss
from blocks.learn.rollout_learner import RolloutLearner
from blocks.model.distribution import FactoredActionDistribution


class OracleLearner(RolloutLearner):
    on_policy = False  # imitation of the planner's labels: any rollout's states will do
    kind = "oracle"

    def __init__(
        self,
        vocabulary: list[str],
        network: dict[str, Any] | None = None,
        lr: float = 1e-3,
        goal_loss_weight: float = 1.0,
        gradient_clip: float | None = 5.0,
        init_checkpoint: str | None = None,
        reset_direction_head: bool = False,
        oracle_rollin: float = 0.0,
        stop_radius: int = 0,
    ):
        if not 0.0 <= oracle_rollin <= 1.0:
            raise ConfigError(f"model.oracle_rollin must lie in [0, 1], got {oracle_rollin}")
        if stop_radius < 0:
            raise ConfigError(f"model.stop_radius must be >= 0, got {stop_radius}")
        super().__init__(vocabulary, network, lr, goal_loss_weight, gradient_clip, init_checkpoint,
                         reset_direction_head)  # fmt: skip

    def rollout_options(self) -> dict[str, Any]:
        return {
            "oracle": True,
            "oracle_rollin": self.hparams.oracle_rollin,
            "stop_radius": self.hparams.stop_radius,
        }

    def objective(
        self,
        rollout: Rollout,
        steps: torch.Tensor,
        boards: torch.Tensor,
        distribution: FactoredActionDistribution,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        if rollout.oracle_directions is None or rollout.oracle_block is None:
            raise RuntimeError("the rollouts carry no oracle labels: the data module was not asked for them")
        good = rollout.oracle_directions[steps, boards]  # (n, 5) bool
        block_log_prob = distribution.block.log_prob(rollout.oracle_block[boards])
        loss = oracle_set_loss(block_log_prob, distribution.direction_log_probs, good)
        with torch.no_grad():
            chosen = distribution.direction_log_probs.argmax(1)
            direction_accuracy = good.gather(1, chosen[:, None]).float().mean()
            block_accuracy = (
                (distribution.block_log_probs.argmax(1) == rollout.oracle_block[boards]).float().mean()
            )
        return loss, {
            "train/direction_accuracy": direction_accuracy,
            "train/block_accuracy": block_accuracy,
            "train/entropy": distribution.entropy().mean(),
        }
