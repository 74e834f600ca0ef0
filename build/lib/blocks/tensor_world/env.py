"""``VectorBlocksEnv`` with torch tensors on a device: the same transition, rewards and pictures.

The start of an episode (padding the boards, the demonstrations F2 follows) is the numpy environment's own
``reset``, moved to the device once; every step then stays there. Positions are float64 as in numpy, so boards
match exactly; distances may differ from numpy's in the last bit (summation order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from blocks.tensor_world.renderer import TensorRenderer
from blocks.world.geometry import (
    BLOCK_SIDE,
    BOARD_HALF,
    DIRECTION_DELTAS,
    HORIZON,
    NUM_DIRECTIONS,
    STOP,
)
from blocks.world.metrics import EpisodeResult
from blocks.world.planner import Demonstration, demonstration
from blocks.world.rewards import RewardConfig
from blocks.world.task import Task
from blocks.world.transitions import DIRECTION_UNITS, ray_blocked
from blocks.world.vector_env import VectorBlocksEnv


def distance_error(positions: torch.Tensor, goals: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    """D(s) / L per board (``blocks.world.metrics.distance_error``)."""
    gap = positions - goals
    return torch.where(present, (gap * gap).sum(-1).sqrt(), 0.0).sum(-1) / BLOCK_SIDE


def apply_actions(
    positions: torch.Tensor, present: torch.Tensor, actions: torch.Tensor, deltas: torch.Tensor,
    units: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """(new positions, failed): ``blocks.world.transitions.apply_actions`` for valid action ids on the device;
    ``deltas`` and ``units`` are ``DIRECTION_DELTAS`` and ``DIRECTION_UNITS`` there."""
    rows = torch.arange(len(actions), device=actions.device)
    is_move = actions != STOP
    block = torch.where(is_move, actions // NUM_DIRECTIONS, 0)
    direction = torch.where(is_move, actions % NUM_DIRECTIONS, 0)
    moving = is_move & present[rows, block]
    origin = positions[rows, block]
    target = origin + deltas[direction]
    off_board = (target.abs() > BOARD_HALF).any(dim=1)
    others = present.clone()
    others[rows, block] = False
    gap = positions - origin[:, None, :]
    unit = units[direction]
    blocked = ray_blocked(gap[..., 0], gap[..., 1], unit[:, :1], unit[:, 1:])
    failed = moving & (off_board | (blocked & others).any(dim=1))
    succeeded = moving & ~failed
    new_positions = positions.clone()
    new_positions[rows, block] = torch.where(succeeded[:, None], target, positions[rows, block])
    return new_positions, failed


def trajectory_potential(
    gold: torch.Tensor,
    actions: torch.Tensor,
    points: torch.Tensor,
    demo_actions: torch.Tensor,
    penalty: float,
) -> torch.Tensor:
    """phi2 (``blocks.world.rewards.trajectory_potential``): 1 where the action is the demonstration's at the
    demonstration point nearest the gold block (first of ties, within one block length), else ``-penalty``."""
    gap = points - gold[:, None, :]
    gaps = (gap * gap).sum(-1).sqrt()
    gaps = torch.where(torch.isnan(gaps), torch.inf, gaps)
    nearest = gaps.argmin(dim=1)
    rows = torch.arange(len(actions), device=actions.device)
    match = (gaps[rows, nearest] < BLOCK_SIDE) & (demo_actions[rows, nearest] == actions)
    return torch.where(match, 1.0, -penalty).to(gold.dtype)


def step_rewards(
    config: RewardConfig,
    before: torch.Tensor,
    after: torch.Tensor,
    failed: torch.Tensor,
    is_stop: torch.Tensor,
    phi2: torch.Tensor | None,
    memory: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(reward, new F2 memory): ``blocks.world.rewards.step_rewards`` term by term."""
    reward = torch.zeros_like(after)
    if config.distance:
        reward = reward - after
    elif config.problem:
        stop_reward = torch.where(after < 1.0, 1.0, -1.0).to(after.dtype)
        reward = reward + torch.where(is_stop, stop_reward, -config.step_penalty)
    if config.f1:
        reward = reward + (before - after)
    if config.f2:
        reward = reward + (phi2 - memory)
        memory = torch.where(failed, memory, phi2)
    return torch.where(failed, config.failure_reward, reward), memory


class TensorBlocksEnv:
    """N boards in lockstep on ``device``; ``reset`` takes tasks, ``step`` one action id per board (a tensor).

    Observations are tensors on the device: ``image (N, 3, H, W)`` uint8 (with a renderer), ``previous_action``
    and ``steps``. Boards whose episode has ended ignore their action and earn 0, as in ``VectorBlocksEnv``.
    """

    def __init__(
        self,
        reward: RewardConfig | None = None,
        horizon: int = HORIZON,
        renderer: TensorRenderer | None = None,
        demonstrations: Callable[[Task], Demonstration | None] = demonstration,
        device: torch.device | str = "cpu",
    ):
        self.reward_config = reward or RewardConfig()
        self.horizon = horizon
        self.renderer = renderer
        self.device = torch.device(device)
        self.deltas = torch.from_numpy(DIRECTION_DELTAS).to(self.device)
        self.units = torch.from_numpy(DIRECTION_UNITS).to(self.device)
        self._start = VectorBlocksEnv(self.reward_config, horizon, None, demonstrations)
        self.num_envs = 0

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def reset(self, tasks: Sequence[Task]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        start = self._start
        start.reset(tasks)
        self.tasks = start.tasks
        self.num_envs = n = start.num_envs
        self.positions, self.present = self._tensor(start.positions), self._tensor(start.present)
        self.goals, self.logo = self._tensor(start.goals), self._tensor(start.logo)
        self.error = distance_error(self.positions, self.goals, self.present)
        self.min_error = self.error.clone()
        zeros = torch.zeros(n, dtype=torch.long, device=self.device)
        self.moves, self.steps, self.failed_moves = zeros.clone(), zeros.clone(), zeros.clone()
        self.done = torch.zeros(n, dtype=torch.bool, device=self.device)
        self.stopped = self.done.clone()
        self.last_failed = self.done.clone()  # the board's last move failed
        self.previous_action = torch.full((n,), -1, dtype=torch.long, device=self.device)
        self.named_block = self._tensor(start.named_block)
        self.first_block = torch.full((n,), -1, dtype=torch.long, device=self.device)
        self._memory = torch.full((n,), self.reward_config.initial_trajectory_potential, device=self.device,
                                  dtype=torch.float64)  # fmt: skip
        if self.reward_config.f2:
            self.demo_points, self.demo_actions = (
                self._tensor(start.demo_points),
                self._tensor(start.demo_actions),
            )
        self.frames = self.renderer.render(self.positions, self.present, self.logo) if self.renderer else None
        return self._observation(), {"error": self.error.clone()}

    def _observation(self) -> dict[str, torch.Tensor]:
        obs = {"previous_action": self.previous_action.clone(), "steps": self.steps.clone()}
        if self.frames is not None:
            obs["image"] = self.frames
        return obs

    def step(self, actions: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor,
                                                   torch.Tensor, dict[str, torch.Tensor]]:  # fmt: skip
        """(observation, reward, terminated, truncated, info), all ``(N,)`` tensors on the device."""
        if self.num_envs == 0:
            raise RuntimeError("call reset(tasks) before step")
        if actions.shape != (self.num_envs,) or actions.dtype != torch.long:
            raise ValueError(f"expected {self.num_envs} action ids as a long tensor, got {actions.dtype} "
                             f"{tuple(actions.shape)}")  # fmt: skip
        actions = actions.to(self.device)
        active = ~self.done
        acted = torch.where(active, actions, STOP)
        positions, failed = apply_actions(self.positions, self.present, acted, self.deltas, self.units)
        error = distance_error(positions, self.goals, self.present)
        is_stop = acted == STOP
        phi2 = None
        if self.reward_config.f2:
            rows = torch.arange(self.num_envs, device=self.device)
            gold = self.positions[rows, self.named_block]
            phi2 = trajectory_potential(gold, acted, self.demo_points, self.demo_actions,
                                        self.reward_config.trajectory_penalty)  # fmt: skip
        # As the numpy world: moves of absent blocks paid, not counted, as failed if asked.
        failed_here = failed
        if self.reward_config.absent_move_fails:
            rows = torch.arange(self.num_envs, device=self.device)
            block = torch.where(is_stop, 0, acted // NUM_DIRECTIONS)
            failed_here = failed | (~is_stop & ~self.present[rows, block])
        paid_as_failed = failed_here | (is_stop & self.last_failed)  # the release's STOP rule
        reward, memory = step_rewards(
            self.reward_config, self.error, error, paid_as_failed, is_stop, phi2, self._memory
        )
        reward = torch.where(active, reward, 0.0)
        self._memory = torch.where(active, memory, self._memory)

        moved = active & ~is_stop
        self.positions, self.error = positions, error
        self.min_error = torch.minimum(self.min_error, error)
        self.steps += active
        self.moves += moved
        self.failed_moves += active & failed
        self.last_failed = torch.where(active, failed_here, self.last_failed)
        self.previous_action = torch.where(active, actions, self.previous_action)
        first = moved & (self.first_block < 0)
        self.first_block = torch.where(first, torch.div(acted, NUM_DIRECTIONS, rounding_mode="floor"),
                                       self.first_block)  # fmt: skip
        terminated = active & is_stop
        truncated = moved & (self.moves >= self.horizon)
        self.stopped |= terminated
        self.done |= terminated | truncated
        if (
            self.renderer is not None
        ):  # all boards at once: one that did not move draws the same picture again
            self.frames = self.renderer.render(positions, self.present, self.logo)
        info = {"active": active, "failed": failed & active, "error": self.error.clone()}
        return self._observation(), reward, terminated, truncated, info

    @property
    def all_done(self) -> bool:
        return bool(self.done.all())

    def results(self) -> list[EpisodeResult]:
        """Per-board figures of the episodes so far, as ``VectorBlocksEnv.results``."""
        error, min_error = self.error.tolist(), self.min_error.tolist()
        steps, failed = self.steps.tolist(), self.failed_moves.tolist()
        done, stopped = self.done.tolist(), self.stopped.tolist()
        right = (self.first_block == self.named_block).tolist()
        return [
            EpisodeResult(
                error[i],
                min_error[i],
                steps[i],
                done[i] and not stopped[i],
                error[i] < 1.0,
                failed[i],
                right[i],
            )
            for i in range(self.num_envs)
        ]
