"""The learners' losses as pure functions of tensors, each once, its equation in its docstring.

The learners compose them: they run the network, pick the tensors and log the parts.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


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
