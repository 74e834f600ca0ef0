"""Gradients and counts shared across DDP ranks for a learner that takes several backward passes per step.

DDP averages gradients during each backward pass and expects exactly one per step. SPO takes a varying number (an
imitation step, then ``ppo_epochs`` passes over chunks, and ranks roll out different numbers of frames), so its
passes run under :func:`local_gradients` and each optimizer step sums the ranks' gradients with
:func:`sum_gradients`; each rank has already scaled its losses by its share of all ranks' frames
(:func:`sum_over_ranks`), so the sum is the mean over every frame. On one process every function is the identity.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import torch
from pytorch_lightning.strategies import Strategy
from torch.nn.parallel import DistributedDataParallel


def sum_over_ranks(counts: list[int], strategy: Strategy, device: torch.device) -> list[int]:
    """Each count summed over the ranks."""
    summed = torch.tensor(counts, dtype=torch.float64, device=device)
    return [int(x) for x in strategy.reduce(summed, reduce_op="sum").tolist()]


def local_gradients(strategy: Strategy) -> contextlib.AbstractContextManager:
    """Backward passes that leave each rank's gradients its own (DDP's ``no_sync``)."""
    model = strategy.model
    return model.no_sync() if isinstance(model, DistributedDataParallel) else contextlib.nullcontext()


def sum_gradients(parameters: Iterable[torch.nn.Parameter], strategy: Strategy, world_size: int) -> None:
    """Replace each trainable parameter's gradient by its sum over the ranks, in one all-reduce of a flat vector
    (a parameter without a gradient on this rank counts as zeros, so every rank sends the same shape)."""
    if world_size <= 1:
        return
    parameters = [p for p in parameters if p.requires_grad]
    flat = torch.cat(
        [torch.zeros_like(p).flatten() if p.grad is None else p.grad.flatten() for p in parameters]
    )
    flat = strategy.reduce(flat, reduce_op="sum")
    for p, g in zip(parameters, flat.split([p.numel() for p in parameters]), strict=True):
        p.grad = g.view_as(p)


def check_same_weights(parameters: Iterable[torch.nn.Parameter], strategy: Strategy, world_size: int) -> None:
    """Fail if the ranks' weights have drifted apart (they must step on the same summed gradients)."""
    if world_size <= 1:
        return
    total = torch.stack([p.detach().double().sum() for p in parameters]).sum().view(1)
    low = strategy.reduce(total.clone(), reduce_op="min")
    high = strategy.reduce(total.clone(), reduce_op="max")
    if not torch.isclose(low, high, rtol=1e-9, atol=1e-9):
        raise RuntimeError(f"the ranks' weights diverged (sums {low.item()} and {high.item()})")
