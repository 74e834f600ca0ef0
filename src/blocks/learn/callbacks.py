"""Callbacks the configs add to every run."""

from __future__ import annotations

import time
from typing import Any

import pytorch_lightning as pl


class WallClock(pl.Callback):
    """Logs ``time/train_hours``: training wall time summed over every session of a run, resumes included."""

    def __init__(self) -> None:
        self.hours_before = 0.0
        self.started: float | None = None

    def on_train_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.started = time.monotonic()

    def hours(self) -> float:
        return (
            self.hours_before + (time.monotonic() - self.started) / 3600
            if self.started
            else self.hours_before
        )

    def on_train_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        module.log("time/train_hours", self.hours(), sync_dist=True)

    def state_dict(self) -> dict[str, Any]:
        return {"hours": self.hours()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.hours_before = float(state["hours"])
