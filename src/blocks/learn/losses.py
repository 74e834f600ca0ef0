"""The learners' losses as pure functions of tensors, each once, its equation in its docstring.

The learners compose them: they run the network, pick the tensors and log the parts.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.distributions import kl_divergence


def demonstration_loss(
    block_log_probs: torch.Tensor,
    direction_log_probs: torch.Tensor,
    block: torch.Tensor,
    direction: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Maximum likelihood of the demonstrations' actions (SUPERVISED; SPO's imitation steps), as its two parts:
    ``-mean log p_block(b*)`` and ``-mean log p_dir(d*)`` (STOP is a direction). Their sum is the loss."""
    return F.nll_loss(block_log_probs, block), F.nll_loss(direction_log_probs, direction)


def policy_gradient_loss(
    log_prob: torch.Tensor, signal: torch.Tensor, entropy: torch.Tensor, entropy_coef: float
) -> torch.Tensor:
    """The paper's contextual bandit (``signal`` the immediate reward) or REINFORCE (the return to go):
    ``-mean_t[ signal_t * log p(a_t) ] - entropy_coef * mean_t[ H_t ]``."""
    return -(signal * log_prob).mean() - entropy_coef * entropy.mean()


def clipped_policy_loss(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantage: torch.Tensor, clip: float
) -> torch.Tensor:
    """PPO's clipped surrogate, negated to be minimised (SPO):
    ``-mean[ min(rho * A, clip(rho, 1 - clip, 1 + clip) * A) ]`` with ``rho = exp(log p - log p_old)``."""
    ratio = (log_prob - old_log_prob).exp()
    return -torch.min(ratio * advantage, ratio.clamp(1.0 - clip, 1.0 + clip) * advantage).mean()


def oracle_set_loss(
    block_log_prob: torch.Tensor, direction_log_probs: torch.Tensor, good: torch.Tensor
) -> torch.Tensor:
    """The likelihood of the oracle's *set* of good directions (model=oracle, model=distill's base):
    ``-mean_t[ log p_block(b*) + log sum_{d in D*_t} p_dir(d) ]``; ``good`` (n, 5) marks D*_t."""
    good_log_prob = torch.logsumexp(direction_log_probs.masked_fill(~good, float("-inf")), dim=1)
    return -(block_log_prob + good_log_prob).mean()


def target_regression_loss(
    block_log_probs: torch.Tensor, block: torch.Tensor, target: torch.Tensor, goal: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """model=target's two parts: the gold block's likelihood ``-mean log p_block(b*)`` and the squared distance of
    the predicted target from the goal ``mean ||t - g||^2``. Their sum is the loss."""
    return F.nll_loss(block_log_probs, block), (target - goal).pow(2).sum(1).mean()


def distillation_divergence(teacher: Any, student: Any) -> torch.Tensor:
    """How far the student's factored action distribution is from the teachers' mean (model=distill):
    ``mean_t[ KL(P_teachers_block || P_block) + KL(P_teachers_dir || P_dir) ]``."""
    return (
        kl_divergence(teacher.block, student.block) + kl_divergence(teacher.direction, student.direction)
    ).mean()


def td_loss(chosen: torch.Tensor, reward: torch.Tensor, done: torch.Tensor, following: torch.Tensor, gamma: float
            ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """DQN's temporal-difference loss: Huber of ``Q(s, a)`` (``chosen``) against ``r + gamma * (1 - done) *
    max_a' Q_target(s', a')`` (``following``: the target network's values at s'); also the TD errors, detached
    (the replay's priorities)."""
    wanted = reward + gamma * (~done) * following.max(1).values.detach()
    return F.smooth_l1_loss(chosen, wanted), (chosen - wanted).detach()


def spo_loss(
    policy_loss: torch.Tensor,
    value: torch.Tensor,
    reward: torch.Tensor,
    entropy: torch.Tensor,
    block_log_probs: torch.Tensor,
    gold_block: torch.Tensor,
    value_loss_weight: float,
    entropy_coef: float,
    block_loss_weight: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Xiong et al.'s objective (model=spo): ``clipped_policy_loss + value_loss_weight * mean (V(s) - r)^2
    - entropy_coef * H(direction) + block_loss_weight * NLL(gold block)``; returns it with its value loss and block
    loss (logged)."""
    value_loss = F.mse_loss(value, reward)
    block_loss = F.nll_loss(block_log_probs, gold_block)
    loss = (
        policy_loss + value_loss_weight * value_loss - entropy_coef * entropy + block_loss_weight * block_loss
    )
    return loss, value_loss, block_loss
