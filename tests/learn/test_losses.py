"""Each objective of learn/losses.py against its docstring's equation, by hand on a few numbers."""

from __future__ import annotations

import math

import torch

from blocks.learn.losses import (
    distillation_divergence,
    oracle_set_loss,
    spo_loss,
    target_regression_loss,
    td_loss,
)
from blocks.model.distribution import FactoredActionDistribution


def test_the_oracle_set_loss_sums_the_good_directions_probabilities():
    direction = torch.log(torch.tensor([[0.1, 0.2, 0.3, 0.3, 0.1]]))
    good = torch.tensor([[False, True, True, False, False]])
    block = torch.log(torch.tensor([0.5]))
    assert math.isclose(
        oracle_set_loss(block, direction, good).item(), -(math.log(0.5) + math.log(0.5)), rel_tol=1e-6
    )


def test_target_regression_is_the_blocks_likelihood_and_the_squared_distance():
    block_log_probs = torch.log(torch.tensor([[0.25, 0.75]]))
    nll, squared = target_regression_loss(block_log_probs, torch.tensor([1]), torch.tensor([[1.0, 2.0]]),
                                          torch.tensor([[4.0, 6.0]]))  # fmt: skip
    assert math.isclose(nll.item(), -math.log(0.75), rel_tol=1e-6) and squared.item() == 25.0


def test_the_td_loss_bootstraps_from_the_best_next_value_unless_done():
    chosen = torch.tensor([1.0, 1.0], requires_grad=True)
    following = torch.tensor([[0.0, 2.0], [5.0, 1.0]])
    loss, errors = td_loss(
        chosen, torch.tensor([0.5, 0.5]), torch.tensor([False, True]), following, gamma=0.5
    )
    assert torch.allclose(errors, torch.tensor([1.0 - 1.5, 1.0 - 0.5]))  # r + 0.5 * 2; done: r alone
    assert math.isclose(
        loss.item(), (0.5 * 0.5**2 + 0.5 * 0.5**2) / 2, rel_tol=1e-6
    )  # Huber below 1: x^2 / 2


def test_the_distillation_divergence_is_zero_for_the_same_distribution_and_positive_otherwise():
    logits = torch.randn(3, 20), torch.randn(3, 5)
    student = FactoredActionDistribution(*logits)
    assert distillation_divergence(student, student).abs().item() < 1e-6
    assert (
        distillation_divergence(FactoredActionDistribution(torch.zeros(3, 20), torch.zeros(3, 5)), student)
        > 0
    )


def test_the_spo_objective_weighs_its_four_parts():
    block_log_probs = torch.log(torch.tensor([[0.5, 0.5]]))
    loss, value_loss, block_loss = spo_loss(torch.tensor(1.0), torch.tensor([2.0]), torch.tensor([0.0]),
                                            torch.tensor(0.3), block_log_probs, torch.tensor([0]), 0.5, 0.1, 2.0)  # fmt: skip
    assert value_loss.item() == 4.0 and math.isclose(block_loss.item(), math.log(2), rel_tol=1e-6)
    assert math.isclose(loss.item(), 1.0 + 0.5 * 4.0 - 0.1 * 0.3 + 2.0 * math.log(2), rel_tol=1e-6)
