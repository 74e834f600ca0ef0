"""Read the board, predict the goal, walk there (ours): an agent that acts on what it perceives.

At the first step :class:`~blocks.model.perception.BoardReader` reads where every labelled block stands (and
whether the board carries logos or digits) from the picture, :class:`~blocks.model.goal_predictor.GoalPredictor`
says which block the instruction moves and where to, and the planner finds the shortest path there around the
other blocks *as perceived*. The agent then follows the path and stops at its end. A move that leaves the picture
unchanged failed (the board was misread): the agent reads the board again and plans anew from there, and stops
after ``max_replans`` failures. It never reads the simulator's state: only pictures, words and its own moves.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from blocks.agents.baselines import Agent, Seed
from blocks.corpus.text import Vocabulary, tokenize
from blocks.model.checkpoint import load_goal_predictor, load_reader
from blocks.model.goal_predictor import GoalPredictor, combine_readings
from blocks.model.perception import BoardReader
from blocks.model.policy import pad_token_ids
from blocks.world.geometry import BLOCK_SIDE, MAX_BLOCKS, STOP
from blocks.world.planner import plan
from blocks.world.task import Task

FAR_AWAY = 50.0  # where a label the reader did not see is parked for the planner: never in the way


class ReadAndPlanAgent(Agent):
    needs_images = True

    def __init__(
        self,
        reader: BoardReader,
        predictor: GoalPredictor | Sequence[GoalPredictor],
        vocabulary: Vocabulary | Sequence[str] | Sequence[Vocabulary | Sequence[str]],
        max_replans: int = 6,
        min_block_probability: float = 0.5,
        clearance: float = 0.05,
        clearance_step: float = 0.05,
        end_clearance: float | None = 0.0,
    ):
        """``min_block_probability``: below it the agent stops at once instead of moving a block it is unsure of
        (moving the wrong block adds its displacement to the error; stopping leaves the error as it was).
        ``clearance``: block lengths the first path keeps from the perceived blocks beyond what a collision needs;
        each failed move adds ``clearance_step``, so the next path goes round the misread block more widely.
        ``end_clearance`` (``None``: as ``clearance``): the same for the path's last cell alone, which often touches
        another block; failed moves add ``clearance_step`` to it too.
        Several goal predictors (with a vocabulary each) act as an ensemble: the mean of their block log-probabilities
        and the median of their goals."""
        self.min_block_probability = min_block_probability
        self.clearance, self.clearance_step = clearance, clearance_step
        self.end_clearance = clearance if end_clearance is None else end_clearance
        if not 0 <= self.end_clearance <= clearance:
            raise ValueError("end_clearance must lie between 0 and clearance")
        self.reader = reader
        single = isinstance(predictor, GoalPredictor)
        self.predictors = [predictor] if single else list(predictor)
        vocabularies = [vocabulary] if single else list(vocabulary)
        if len(vocabularies) != len(self.predictors):
            raise ValueError("give one vocabulary per goal predictor")
        self.vocabularies = [v if isinstance(v, Vocabulary) else Vocabulary(v) for v in vocabularies]
        self.max_replans = max_replans
        self.image_size = reader.image_size
        self.render = reader.render  # the picture the reader learnt to read: the evaluator draws it
        self.device = next(reader.parameters()).device

    @classmethod
    def from_checkpoints(
        cls, reader: str, goal: str | Sequence[str], device: str = "cpu", **options: float
    ) -> ReadAndPlanAgent:
        """The agent of a board-reader checkpoint and one goal-predictor checkpoint or a list of them (an
        ensemble); ``options`` as ``__init__``."""
        loaded = [load_goal_predictor(path, device) for path in ([goal] if isinstance(goal, str) else goal)]
        return cls(load_reader(reader, device), [p for p, _ in loaded], [v for _, v in loaded], **options)

    def begin(
        self, tasks: Sequence[Task], seed: Seed = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks)
        if instructions is None:
            raise ValueError("ReadAndPlanAgent needs the instructions")
        n = len(tasks)
        self.texts = [
            pad_token_ids([vocab.encode(tokenize(t), mend_unknown=True) for t in instructions])
            for vocab in self.vocabularies
        ]
        self.plans: list[list[int]] = [[] for _ in range(n)]
        self.needs_plan = np.ones(n, bool)
        self.failures = np.zeros(n, np.int64)
        self.stopped = np.zeros(n, bool)
        self.last_frame: np.ndarray | None = None
        self.last_action = np.full(n, -1)
        # What the agent perceived at its last reading, for notebooks and diagnostics.
        self.perceived: dict[str, np.ndarray] = {}

    @torch.no_grad()
    def perceive(self, frames: np.ndarray, rows: np.ndarray) -> None:
        """Read boards ``rows`` of ``frames``, predict their goals and plan their paths."""
        images = torch.from_numpy(frames[rows]).to(self.device)
        positions, present, logo = self.reader.read(images)
        readings = [
            predictor(
                tokens[rows].to(self.device),
                lengths[rows].to(self.device),
                positions / BLOCK_SIDE,
                present,
                logo,
            )
            for predictor, (tokens, lengths) in zip(self.predictors, self.texts, strict=True)
        ]
        moved, goals = combine_readings(readings)
        confidence, block = moved.exp().max(-1)
        goal = goals[torch.arange(len(rows)), block] * BLOCK_SIDE
        unsure = (confidence < self.min_block_probability).cpu().numpy()
        positions, present = positions.cpu().numpy(), present.cpu().numpy()
        block, goal = block.cpu().numpy(), goal.cpu().numpy()
        for i, row in enumerate(rows):
            extra = self.clearance_step * self.failures[row]
            clearance = (self.clearance + extra) * BLOCK_SIDE
            end = (self.end_clearance + extra) * BLOCK_SIDE
            self.plans[row] = (
                []
                if unsure[i]
                else self.plan_for(positions[i], present[i], int(block[i]), goal[i], clearance, end)
            )
            self.perceived.setdefault("positions", np.zeros((len(frames), MAX_BLOCKS, 2)))[row] = positions[i]
            self.perceived.setdefault("present", np.zeros((len(frames), MAX_BLOCKS), bool))[row] = present[i]
            self.perceived.setdefault("goal", np.zeros((len(frames), 2)))[row] = goal[i]
            self.perceived.setdefault("block", np.zeros(len(frames), np.int64))[row] = block[i]
        self.needs_plan[rows] = False

    @staticmethod
    def plan_for(
        positions: np.ndarray,
        present: np.ndarray,
        block: int,
        goal: np.ndarray,
        clearance: float = 0.0,
        end_clearance: float | None = None,
    ) -> list[int]:
        """The planner's moves of ``block`` to ``goal`` on the perceived board (labels not seen are parked far
        away), without its final STOP. It plans with the world's own rule (the simulator's rays), which lets a
        block end beside another closer than the release planner's square test: tune 0.920 against 0.996."""
        count = max(int(np.flatnonzero(present).max()) + 1 if present.any() else 0, block + 1)
        start = np.where(present[:count, None], positions[:count], FAR_AWAY + np.arange(count)[:, None] * 2.0)
        if not present[block]:  # the goal predictor chose a block the reader did not see: nothing to move
            return []
        end = start.copy()
        end[block] = goal
        if np.linalg.norm(goal - start[block]) <= 0.01:
            return []
        moves = plan(Task(start, end), clearance=clearance, end_clearance=end_clearance, rule="rays").actions
        return [int(a) for a in moves if a != STOP]

    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        frames = observation["image"]
        n = len(frames)
        if self.last_frame is not None:  # a move that left the picture unchanged failed: read again
            moved = (self.last_action >= 0) & (self.last_action != STOP)
            unchanged = (frames == self.last_frame).reshape(n, -1).all(axis=1)
            failed = moved & unchanged & ~self.stopped
            self.failures += failed
            self.needs_plan |= failed & (self.failures <= self.max_replans)
            self.stopped |= self.failures > self.max_replans
        rows = np.flatnonzero(self.needs_plan & ~self.stopped)
        if len(rows):
            self.perceive(frames, rows)
        actions = np.full(n, STOP, np.int64)
        for row in range(n):
            if not self.stopped[row] and self.plans[row]:
                actions[row] = self.plans[row].pop(0)
        self.stopped |= actions == STOP
        self.last_frame, self.last_action = frames.copy(), actions
        return actions
