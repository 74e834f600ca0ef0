"""``data=boards``: boards the simulator draws for the board reader: random layouts mixed with the
corpus's training boards, every batch new, each cell's target the block whose top face covers its centre."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, IterableDataset

from blocks.corpus.loader import load_split
from blocks.data.base import distributed_rank
from blocks.errors import ConfigError
from blocks.model.perception import CELL
from blocks.render.factory import check_render, make_renderer
from blocks.render.release import ReleaseRenderer
from blocks.render.renderer import Renderer
from blocks.world.geometry import COLLISION_REACH, MAX_BLOCKS
from blocks.world.transitions import pad_boards

LOCATED_WITHIN = 0.5  # block lengths


def cell_targets(
    renderer: Renderer | ReleaseRenderer, positions: np.ndarray, present: np.ndarray
) -> np.ndarray:
    """``(N, G, G)`` class of every cell: 1 + the index of the block whose face covers its centre, else 0."""
    grid = renderer.size // CELL
    targets = np.zeros((len(positions), grid, grid), np.int64)
    centres = np.arange(grid) * CELL + CELL // 2
    for i, boxes in enumerate(renderer.face_boxes(positions).tolist()):
        for b, (r0, r1, c0, c1) in enumerate(boxes):
            if present[i, b]:
                rows = (centres >= r0) & (centres < r1)
                cols = (centres >= c0) & (centres < c1)
                targets[i][np.ix_(rows, cols)] = b + 1
    return targets


def random_boards(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` random boards: (positions ``(N, 20, 2)``, present ``(N, 20)``, logo ``(N,)``)."""
    positions = np.zeros((count, MAX_BLOCKS, 2))
    present = np.zeros((count, MAX_BLOCKS), bool)
    for i in range(count):
        n = int(rng.integers(1, MAX_BLOCKS + 1))
        labels = np.arange(n) if rng.random() < 0.5 else np.sort(rng.choice(MAX_BLOCKS, n, replace=False))
        placed: list[np.ndarray] = []
        for label in labels:
            for _ in range(50):  # rejection: no two faces overlap
                point = rng.uniform(-1.05, 1.05, 2)
                if all(np.abs(point - q).max() > COLLISION_REACH for q in placed):
                    placed.append(point)
                    positions[i, label], present[i, label] = point, True
                    break
    return positions, present, rng.random(count) < 0.5


class BoardStream(IterableDataset):
    """Batches of freshly drawn boards; ``batches_per_epoch`` of them make an epoch. Each rank draws its own
    (seeded by seed, rank, epoch), so an epoch repeats exactly and DDP ranks never share a board."""

    def __init__(
        self,
        renderer: Renderer,
        corpus_boards: tuple[np.ndarray, np.ndarray, np.ndarray],
        batch_size: int = 32,
        batches_per_epoch: int = 1000,
        corpus_share: float = 0.25,
        seed: int = 0,
    ):
        self.renderer = renderer
        self.corpus_boards = corpus_boards
        self.batch_size = batch_size
        self.batches_per_epoch = batches_per_epoch
        self.corpus_share = corpus_share
        self.seed = seed
        self.epoch = 0

    def __len__(self) -> int:
        return self.batches_per_epoch

    def __iter__(self):
        rank, _ = distributed_rank()
        rng = np.random.default_rng([self.seed, rank, self.epoch])
        self.epoch += 1
        for _ in range(self.batches_per_epoch):
            from_corpus = int(rng.binomial(self.batch_size, self.corpus_share))
            positions, present, logo = random_boards(rng, self.batch_size - from_corpus)
            chosen = rng.integers(len(self.corpus_boards[0]), size=from_corpus)
            positions = np.concatenate([positions, self.corpus_boards[0][chosen]])
            present = np.concatenate([present, self.corpus_boards[1][chosen]])
            logo = np.concatenate([logo, self.corpus_boards[2][chosen]])
            yield board_batch(self.renderer, positions, present, logo)


def board_batch(
    renderer: Renderer | ReleaseRenderer, positions: np.ndarray, present: np.ndarray, logo: np.ndarray
) -> dict:
    return {
        "images": torch.from_numpy(renderer.render(positions, present, logo)),
        "cells": torch.from_numpy(cell_targets(renderer, positions, present)),
        "positions": torch.from_numpy(positions).float(),
        "present": torch.from_numpy(present),
        "logo": torch.from_numpy(np.asarray(logo, bool)),
    }


def corpus_boards(split: str, root: str | None, exclude_tune: bool = False) -> tuple[np.ndarray, ...]:
    """The distinct start and goal boards of a split: (positions, present, logo)."""
    seen: dict[bytes, tuple[np.ndarray, bool]] = {}
    for example in load_split(split, root, exclude_tune=exclude_tune):
        for board in (example.task.start, example.task.goal):
            seen.setdefault(
                board.tobytes() + example.decoration.encode(), (board, example.decoration == "logo")
            )
    positions, present = pad_boards([board for board, _ in seen.values()])
    return positions, present, np.array([logo for _, logo in seen.values()])


class BoardsDataModule(pl.LightningDataModule):
    """Synthetic boards for training; the tuning split's boards for validation."""

    def __init__(
        self,
        root: str | None = None,
        image_size: int = 120,
        batch_size: int = 32,
        batches_per_epoch: int = 1000,
        corpus_share: float = 0.25,
        val_batch_size: int = 128,
        seed: int = 0,
        render: str = "flat",
    ):
        super().__init__()
        check_render(render)
        self.render = render
        if not 0.0 <= corpus_share <= 1.0:
            raise ConfigError(f"data.corpus_share must lie in [0, 1], got {corpus_share}")
        self.root, self.image_size, self.batch_size = root, image_size, batch_size
        self.batches_per_epoch, self.corpus_share = batches_per_epoch, corpus_share
        self.val_batch_size, self.seed = val_batch_size, seed

    @cached_property
    def renderer(self) -> Renderer | ReleaseRenderer:
        """The picture the board reader learns to read (``data.render``)."""
        return make_renderer(self.render, self.root, self.image_size)

    @cached_property
    def stream(self) -> BoardStream:
        boards = corpus_boards("train", self.root, exclude_tune=True)
        return BoardStream(
            self.renderer, boards, self.batch_size, self.batches_per_epoch, self.corpus_share, self.seed
        )

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.stream, batch_size=None)

    def val_dataloader(self) -> DataLoader:
        positions, present, logo = corpus_boards("tune", self.root)
        batches = [
            board_batch(self.renderer, positions[i : i + self.val_batch_size], present[i : i + self.val_batch_size],
                        logo[i : i + self.val_batch_size])
            for i in range(0, len(positions), self.val_batch_size)
        ]  # fmt: skip
        return DataLoader(batches, batch_size=None)

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.stream.epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.stream.epoch = int(state["epoch"])
