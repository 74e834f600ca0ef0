"""Callbacks the configs add to every run."""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytorch_lightning as pl

from blocks.data.rollout_tensors import RolloutPiece

log = logging.getLogger(__name__)


class ProgressBar(pl.callbacks.TQDMProgressBar):
    """Lightning's bar, which also knows its place after a resume in the middle of an epoch: Lightning does not
    call ``on_train_epoch_start`` then, and its bar would read ``400/?`` with no epoch, total or time left."""

    def on_train_batch_start(
        self, trainer: pl.Trainer, module: pl.LightningModule, batch: Any, index: int
    ) -> None:
        bar = self._train_progress_bar
        if bar is not None and bar.total is None and not bar.disable:
            total = trainer.num_training_batches
            bar.reset(total=None if total == float("inf") else int(total))
            bar.initial = bar.n = index  # the rate and time left count this session's batches only
            bar.set_description(f"Epoch {trainer.current_epoch}")


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


class GracefulStop(pl.Callback):
    """Ctrl-C or SIGTERM (a cluster's pre-emption) while fitting: the update in progress finishes, ``last.ckpt``
    is written where the run's checkpoints go, and the process exits with 128 + the signal's number. Resuming
    from that file goes on exactly where it stopped. A second Ctrl-C stops at once, saving nothing.

    The checkpoint is written when the next batch would start: by then the trainer counts every batch before it
    as done, and an update split into pieces (rollouts) is never cut in two.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: int | None = None
        self.previous: dict[int, Any] = {}

    def on_train_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        # After the trainer set its own SIGTERM handler (which stops at the end of a batch, an update cut in two
        # for rollouts, and exits 0): ours replaces it until the fit ends, then the trainer puts back what was
        # there before. A SIGTERM that the trainer's handler caught while the data were set up (planning the
        # demonstrations takes minutes) is taken over: the first batch's start saves and exits.
        self.received = signal.SIGTERM if getattr(trainer, "received_sigterm", False) else None
        if self.received is not None:
            log.warning("SIGTERM received while setting up: saving last.ckpt before the first update")
        if threading.current_thread() is threading.main_thread():
            self.previous = {s: signal.getsignal(s) for s in self.SIGNALS}
            for s in self.SIGNALS:
                signal.signal(s, self.request)

    def request(self, signum: int, frame: FrameType | None) -> None:
        if self.received == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt  # asked twice: stop now
        self.received = signum
        log.warning("%s received: stopping after the update in progress, then saving last.ckpt",
                    signal.Signals(signum).name)  # fmt: skip

    def on_train_batch_start(
        self, trainer: pl.Trainer, module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        if isinstance(batch, RolloutPiece) and batch.index != 0:
            return  # an update is never cut in two
        if trainer.world_size > 1:
            self.received = self.agreed(trainer)
        if self.received is None:
            return
        folder = Path(
            trainer.checkpoint_callback.dirpath if trainer.checkpoint_callback else trainer.default_root_dir
        )
        path = folder / "last.ckpt"
        keeper = trainer.checkpoint_callback
        if isinstance(keeper, pl.callbacks.ModelCheckpoint) and keeper.save_last:
            # Its own: else the resumed run, finding a last.ckpt it did not write, saves last-v1.ckpt beside it
            # and leaves this one behind, stale, for the next ckpt_path=auto.
            keeper.last_model_path = str(path)
        # The trainer has fetched this batch (counted "ready") but not started it. Left so, the checkpoint's
        # progress counts one batch more than it trained, and every later resume from this run (a boundary
        # one too) takes a wrong restart path that drops the validation closing its last epoch. Uncounted, the
        # checkpoint is the one a callback would have written as the previous batch ended.
        progress = trainer.fit_loop.epoch_loop.batch_progress
        progress.total.ready, progress.current.ready = progress.total.completed, progress.current.completed
        progress.is_last_batch = False  # it described the fetched batch; the previous one was not the last
        trainer.save_checkpoint(path, weights_only=False)  # the whole state: optimizer, loops, data position
        log.warning(
            "stopped at step %d; saved %s: resume with %s", trainer.global_step, path, resume_hint(path)
        )
        raise SystemExit(128 + self.received)

    def agreed(self, trainer: pl.Trainer) -> int | None:
        """The signal any rank received, on every rank: a SIGTERM to the launching process reaches rank 0 alone,
        and a rank that stopped by itself would leave the others waiting in the next collective for ever. One
        number all-reduced before each update (tens of microseconds with gloo)."""
        import torch
        import torch.distributed as dist

        mine = torch.tensor([self.received or 0], device=trainer.strategy.root_device)
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        return int(mine.item()) or None

    def on_fit_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.restore()
        if self.received is not None:  # it came during the last validation: its checkpoints are written
            raise SystemExit(128 + self.received)

    def on_exception(self, trainer: pl.Trainer, module: pl.LightningModule, exception: BaseException) -> None:
        self.restore()

    def restore(self) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        self.previous = {}


def resume_hint(path: Path) -> str:
    """The overrides that resume the run a checkpoint belongs to: its Hydra run folder with ``ckpt_path=last``
    (which also finds a supervised start stopped under ``<run>/pretrain``), else the file itself."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return f"hydra.run.dir={HydraConfig.get().runtime.output_dir} ckpt_path=last"
    except ValueError:  # not under Hydra (a notebook's own Trainer)
        return f"ckpt_path={path}"
