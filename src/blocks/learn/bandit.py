"""The paper's contextual-bandit policy gradient, and REINFORCE as its return-to-go variant.

Each update uses a fresh rollout of the current policy and maximises the immediate shaped reward of every
sampled action:

    loss = -mean_t[ r_t * (log p_block(b_t) + log p_dir(d_t)) ] - entropy_coef * mean_t[ H(p_block) + H(p_dir) ]
    (blocks.learn.losses.policy_gradient_loss)

With ``return_to_go=True``, r_t becomes the sum of rewards to the end of the episode (no baseline): REINFORCE.
The update loop (chunks, one Adam step per update, clipping) is :class:`~blocks.learn.rollout_learner.RolloutLearner`'s.
"""

from __future__ import annotations

from typing import Any

import torch

from blocks.data.rollout_tensors import Rollout
from blocks.errors import ConfigError
from blocks.learn.losses import policy_gradient_loss
from blocks.learn.rollout_learner import RolloutLearner
from blocks.model.distribution import FactoredActionDistribution


class BanditLearner(RolloutLearner):
    kind = "bandit"

    def __init__(
        self,
        vocabulary: list[str],
        network: dict[str, Any] | None = None,
        lr: float = 5e-5,
        goal_loss_weight: float = 1.0,
        gradient_clip: float | None = 5.0,
        init_checkpoint: str | None = None,
        reset_direction_head: bool = True,
        entropy_coef: float = 0.1,
        return_to_go: bool = False,
    ):
        if entropy_coef < 0:
            raise ConfigError(f"model.entropy_coef must be >= 0, got {entropy_coef}")
        super().__init__(vocabulary, network, lr, goal_loss_weight, gradient_clip, init_checkpoint,
                         reset_direction_head)  # fmt: skip

    def objective(
        self,
        rollout: Rollout,
        steps: torch.Tensor,
        boards: torch.Tensor,
        distribution: FactoredActionDistribution,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        log_prob = distribution.log_prob_parts(rollout.block[steps, boards], rollout.direction[steps, boards])
        signal = (rollout.returns_to_go() if self.hparams.return_to_go else rollout.reward)[steps, boards]
        entropy = distribution.entropy()
        loss = policy_gradient_loss(log_prob, signal, entropy, self.hparams.entropy_coef)
        return loss, {"train/entropy": entropy.mean()}
