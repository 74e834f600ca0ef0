"""What a rollout learner's update reads: a batch of episodes as tensors (:class:`Rollout`), its pieces as they
stream to the learner, and the agent contexts rebuilt from its frames (:func:`gather_stacks`).

A rollout keeps only what the update needs: each step's new frame, the sampled (block, direction), the previous
action, the immediate reward, whether the board was still acting, and the goal head's targets. The agent
contexts (5-frame stacks) are rebuilt from the frames in one gather at update time, identical to what the
policy saw. The collectors that fill it are in :mod:`blocks.data.collect`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from lightning_fabric.utilities.apply_func import move_data_to_device


@dataclass
class Rollout:
    """Tensors of a batch of episodes; ``T`` steps (the longest episode) by ``B`` boards."""

    frames: torch.Tensor  # (T, B, 3, H, W) uint8: the image at each step, before the action
    previous_action: torch.Tensor  # (T, B) long, -1 = NONE
    block: torch.Tensor  # (T, B) long: sampled block (kept for STOP too)
    direction: torch.Tensor  # (T, B) long: sampled direction, 4 = STOP
    reward: torch.Tensor  # (T, B) float: immediate (shaped) reward
    active: torch.Tensor  # (T, B) bool: the board acted at this step
    tokens: torch.Tensor  # (B, L) long
    lengths: torch.Tensor  # (B,) long
    final_error: torch.Tensor  # (B,) float: distance error at the end of each episode
    goal: torch.Tensor | None = None  # (T, B, 4) float: the goal head's targets at each step (goal_targets)
    # With an oracle: the moved block (B,) and, at each step, the directions on a shortest path (T, B, 5) bool
    oracle_block: torch.Tensor | None = None
    oracle_directions: torch.Tensor | None = None

    @property
    def num_frames(self) -> int:
        return int(self.active.sum())

    @property
    def num_boards(self) -> int:
        return self.active.shape[1]

    def returns_to_go(self) -> torch.Tensor:
        """Sum of rewards from each step to the end of its episode (gamma = 1): REINFORCE's signal."""
        reward = self.reward * self.active
        return reward.flip(0).cumsum(0).flip(0)


@dataclass
class RolloutChunk:
    """A slice of a rollout's (step, board) pairs: one backward pass. The update happens after the ``last`` one.

    A whole rollout (about 1,000 frames) in one batch runs about twice slower per frame on the CPU than pieces of
    a few dozen frames that stay in cache, so an update accumulates the gradients of its chunks.
    """

    rollout: Rollout
    steps: torch.Tensor  # (n,) long
    boards: torch.Tensor  # (n,) long
    weight: float  # n / frames of the whole update: chunk means add up to the update's mean
    last: bool


class PendingRollout:
    """A rollout that is sampled when its first piece is trained on, inside the training step.

    A trainer may ask its loader for the next batch before it trains on the current one (Lightning prefetches
    from loaders of unknown length); sampling there would roll out with the weights from before the update in
    progress. Sampled here instead, every update learns from episodes that the weights it changes sampled,
    whatever the loader does.
    """

    def __init__(self, collect: Callable[[], Rollout], updates: int, chunks_per_update: int):
        self._collect = collect
        self.updates = updates
        self.chunks_per_update = chunks_per_update
        self._pieces: list[RolloutChunk] | None = None

    def __len__(self) -> int:
        return self.updates * self.chunks_per_update

    def piece(self, index: int, device: torch.device) -> RolloutChunk:
        """The ``index``-th backward pass of this rollout (sampling it first, on ``device``'s policy)."""
        if self._pieces is None:
            rollout = move_data_to_device(self._collect(), device)
            per_update = rollout.num_boards // self.updates
            self._pieces = [
                piece
                for u in range(self.updates)
                for piece in split_update(
                    rollout, slice(u * per_update, (u + 1) * per_update), self.chunks_per_update
                )
            ]
        return self._pieces[index]

    def sampled(self, index: int) -> RolloutChunk:
        """The ``index``-th piece of a rollout already sampled (for callbacks that look after the step)."""
        if self._pieces is None:
            raise RuntimeError("this rollout is sampled by the training step: train on it first")
        return self._pieces[index]


class RolloutPiece:
    """What the rollout stream hands the trainer: one backward pass of a rollout that may not be sampled yet.
    (A plain class: the trainer's device transfer leaves it alone; the rollout is sampled on the policy's device.)"""

    __slots__ = ("pending", "index")

    def __init__(self, pending: PendingRollout, index: int):
        self.pending, self.index = pending, index

    @property
    def last(self) -> bool:
        """The rollout's last backward pass."""
        return self.index == len(self.pending) - 1

    @property
    def chunk(self) -> RolloutChunk:
        """The frames of this piece, once the training step has sampled its rollout."""
        return self.pending.sampled(self.index)


def split_update(rollout: Rollout, boards: slice, chunks: int) -> list[RolloutChunk]:
    """The (step, board) pairs of ``boards`` in ``chunks`` near-equal pieces, board by board (few instructions each)."""
    active = rollout.active[:, boards]
    steps, local = active.nonzero(as_tuple=True)
    board_index = local + (boards.start or 0)
    order = torch.argsort(board_index * active.shape[0] + steps)
    steps, board_index = steps[order], board_index[order]
    total = len(steps)
    if total < chunks:
        raise ValueError(f"{total} frames cannot make {chunks} chunks")
    pieces = torch.tensor_split(torch.arange(total), chunks)
    return [
        RolloutChunk(rollout, steps[p], board_index[p], len(p) / total, i == chunks - 1)
        for i, p in enumerate(pieces)
    ]


def gather_stacks(
    frames: torch.Tensor, steps: torch.Tensor, boards: torch.Tensor, history: int = 5
) -> torch.Tensor:
    """The ``history``-frame stacks ``(N, 3 * history, H, W)`` at (step, board) pairs, zeros before the start.

    Only the N x history pictures are copied (padding the whole rollout with zeros first cost 50 ms per chunk of
    60 frames on a CPU core, a sixth of a bandit update), and nothing waits on the device.
    """
    t, b = frames.shape[:2]
    window = steps[:, None] + torch.arange(1 - history, 1, device=steps.device)  # (N, history), oldest first
    rows = (window.clamp_min(0) * b + boards[:, None]).flatten()  # rows of the (t * b, picture) view
    pictures = frames.reshape(t * b, -1)
    if pictures.dtype == torch.uint8 and pictures.shape[1] % 4 == 0:
        # Whole words: index_select copies rows about 5x faster on a CPU than byte by byte.
        pictures = pictures.view(torch.int32)
    stacks = pictures.index_select(0, rows).view(len(steps), history, -1)
    stacks.masked_fill_((window < 0)[..., None], 0)  # black before the first picture
    return stacks.view(frames.dtype).view(len(steps), history * frames.shape[2], *frames.shape[3:])
