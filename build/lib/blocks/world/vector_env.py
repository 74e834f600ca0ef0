"""N boards stepped at once with numpy arrays: the environment every agent and learner runs in."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from blocks.world.geometry import HORIZON, NUM_DIRECTIONS, STOP, validate_actions
from blocks.world.metrics import EpisodeResult, distance_error
from blocks.world.planner import Demonstration, demonstration, moved_block
from blocks.world.rewards import RewardConfig, step_rewards, trajectory_potential
from blocks.world.task import Task
from blocks.world.transitions import apply_actions, moves_absent_block, pad_boards

Frames = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class VectorBlocksEnv:
    """Runs one episode on each of N boards in lockstep.

    ``step`` takes one action per board; boards whose episode has ended (STOP or the horizon) ignore theirs
    and earn 0. ``render_frames`` (e.g. ``Renderer.render``) turns positions into images; without it the
    observations carry no images, which is all the non-learned agents need.
    """

    def __init__(
        self,
        reward: RewardConfig | None = None,
        horizon: int = HORIZON,
        render_frames: Frames | None = None,
        demonstrations: Callable[[Task], Demonstration | None] = demonstration,
    ):
        self.reward_config = reward or RewardConfig()
        self.horizon = horizon
        self.render_frames = render_frames
        self.demonstrations = demonstrations
        self.num_envs = 0

    # -- episode state -------------------------------------------------------------------------------------
    def reset(self, tasks: Sequence[Task]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Start one episode per task."""
        if not tasks:
            raise ValueError("reset needs at least one task")
        self.tasks = list(tasks)
        self.num_envs = n = len(tasks)
        self.positions, self.present = pad_boards([t.start for t in tasks])
        self.goals, _ = pad_boards([t.goal for t in tasks])
        self.logo = np.array([t.decoration == "logo" for t in tasks])
        self.moves = np.zeros(n, np.int64)  # moves taken, STOP excluded (the horizon counts these)
        self.steps = np.zeros(n, np.int64)  # actions taken, STOP included
        self.failed_moves = np.zeros(n, np.int64)
        self.last_failed = np.zeros(n, bool)  # the board's last move failed
        self.done = np.zeros(n, bool)
        self.stopped = np.zeros(n, bool)
        self.error = distance_error(self.positions, self.goals, self.present)
        self.min_error = self.error.copy()
        self.previous_action = np.full(n, -1, np.int64)  # -1: NONE, no action yet
        # The block the goal moves (the corpus moves one per task; F2 follows it) and the first block the agent
        # moved (-1: none).
        self.named_block = np.array([moved_block(t) for t in self.tasks])
        self.first_block = np.full(n, -1, np.int64)
        self._trajectory_potential = np.full(n, self.reward_config.initial_trajectory_potential)
        if self.reward_config.f2:
            self._load_demonstrations()
        self.frames = (
            self.render_frames(self.positions, self.present, self.logo) if self.render_frames else None
        )
        return self._observation(), {"error": self.error.copy()}

    def _load_demonstrations(self) -> None:
        """The demonstrations F2 follows. A board whose task has none (``demonstrations`` returned None: the
        paper's Figure 4) never matches one, so its F2 term stays 0."""
        demos = [self.demonstrations(t) for t in self.tasks]
        width = max((len(d.points) for d in demos if d is not None), default=1)
        self.demo_points = np.full((self.num_envs, width, 2), np.nan)
        self.demo_actions = np.full((self.num_envs, width), -1, np.int64)
        for i, d in enumerate(demos):
            if d is None:
                continue
            self.demo_points[i, : len(d.points)] = d.points
            self.demo_actions[i, : len(d.actions)] = d.actions

    def _observation(self) -> dict[str, np.ndarray]:
        obs = {"previous_action": self.previous_action.copy(), "steps": self.steps.copy()}
        if self.frames is not None:
            obs["image"] = self.frames
        return obs

    # -- one step ------------------------------------------------------------------------------------------
    def step(
        self, actions: np.ndarray | Sequence[int]
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Apply one action per board: (observation, reward, terminated, truncated, info), all ``(N,)``.

        ``terminated`` marks the STOP that ends an episode, ``truncated`` the move that reaches the horizon;
        ``info["active"]`` the boards that took this step.
        """
        if self.num_envs == 0:
            raise RuntimeError("call reset(tasks) before step")
        actions = validate_actions(actions, self.num_envs)
        active = ~self.done
        acted = np.where(active, actions, STOP)  # finished boards stand still
        new_positions, failed = apply_actions(self.positions, self.present, acted)
        new_error = distance_error(new_positions, self.goals, self.present)
        is_stop = acted == STOP

        phi2 = None
        if self.reward_config.f2:
            rows = np.arange(self.num_envs)
            gold = self.positions[rows, self.named_block]  # the demonstrations move this block too
            phi2 = trajectory_potential(
                gold, acted, self.demo_points, self.demo_actions, self.reward_config.trajectory_penalty
            )
        # The release pays a STOP right after a failed move as a failure too, at the goal or not (its reward reads
        # the last move's message).
        if self.reward_config.absent_move_fails:
            failed_here = failed | moves_absent_block(self.present, acted)  # paid, not counted, as failed
        else:
            failed_here = failed
        paid_as_failed = failed_here | (is_stop & self.last_failed)
        reward, memory = step_rewards(
            self.reward_config,
            self.error,
            new_error,
            paid_as_failed,
            is_stop,
            phi2,
            self._trajectory_potential,
        )
        reward = np.where(active, reward, 0.0)
        if memory is not None:
            self._trajectory_potential = np.where(active, memory, self._trajectory_potential)

        self.positions = new_positions
        self.error = new_error
        self.min_error = np.minimum(self.min_error, new_error)
        self.steps += active
        self.moves += active & ~is_stop
        self.failed_moves += active & failed
        self.last_failed = np.where(active, failed_here, self.last_failed)
        self.previous_action = np.where(active, actions, self.previous_action)
        first = active & ~is_stop & (self.first_block < 0)
        self.first_block[first] = acted[first] // NUM_DIRECTIONS
        terminated = active & is_stop
        truncated = active & ~is_stop & (self.moves >= self.horizon)
        self.stopped |= terminated
        self.done |= terminated | truncated
        if self.render_frames is not None and active.any():
            # Only boards that acted can have changed; the others keep their last frame.
            changed = np.flatnonzero(active & ~is_stop)
            if len(changed) == self.num_envs:
                self.frames = self.render_frames(self.positions, self.present, self.logo)
            elif len(changed):
                self.frames = self.frames.copy()
                self.frames[changed] = self.render_frames(
                    self.positions[changed], self.present[changed], self.logo[changed]
                )
        info = {"active": active, "failed": failed & active, "error": self.error.copy()}
        return self._observation(), reward, terminated, truncated, info

    # -- results -------------------------------------------------------------------------------------------
    @property
    def all_done(self) -> bool:
        return bool(self.done.all())

    def results(self) -> list[EpisodeResult]:
        """Per-board figures of the episodes so far (final = current state)."""
        return [
            EpisodeResult(
                error=float(self.error[i]),
                min_distance=float(self.min_error[i]),
                steps=int(self.steps[i]),
                hit_horizon=bool(self.done[i] and not self.stopped[i]),
                reached_goal=bool(self.error[i] < 1.0),  # D < L
                failed_moves=int(self.failed_moves[i]),
                right_block=bool(self.first_block[i] == self.named_block[i]),
            )
            for i in range(self.num_envs)
        ]
