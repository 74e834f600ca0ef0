"""Where a run goes on from: the checkpoint ``ckpt_path`` names, a stopped supervised start, a finished run."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from blocks.errors import CheckpointError
from blocks.model.checkpoint import load_file

log = logging.getLogger(__name__)


def resume_path(cfg: DictConfig, folder: Path | None = None, required: bool = True) -> str | None:
    """The checkpoint to resume from, checked readable before anything starts.

    ``ckpt_path=<file>`` is that file. ``last`` is ``folder``'s ``checkpoints/last.ckpt`` (the run folder's, or
    its pretraining's), which must exist when ``required`` (each run gets a new folder: resuming needs the old
    one named). ``auto`` takes it if there is one and starts afresh otherwise: what a sweep job run again after
    an interruption needs (its folder does not change). A damaged ``last.ckpt`` (cut short by a kill) gives way
    to the run's readable checkpoint of the furthest step, said in the log.
    """
    wanted = cfg.get("ckpt_path")
    if wanted not in ("last", "auto"):
        if wanted:
            load_file(wanted, mmap=True)  # missing, damaged or unsafe: one line naming it
        return wanted
    checkpoints = Path(folder or cfg.paths.output_dir) / "checkpoints"
    last = checkpoints / "last.ckpt"
    if not last.is_file():
        if wanted == "last" and required and not stopped_pretraining(cfg):
            raise CheckpointError(
                f"ckpt_path=last: no {last} to resume (every run starts in a new folder): name the run's folder, "
                f"hydra.run.dir=<run folder> ckpt_path=last, or its file, ckpt_path=<run folder>/checkpoints/"
                f"last.ckpt; ckpt_path=auto resumes when there is one and starts afresh otherwise"
            )
        return None
    try:
        load_file(last, mmap=True)
    except CheckpointError as damaged:
        readable = {}  # the furthest step wins, not the latest file time: cp -r and rsync rewrite times
        for candidate in checkpoints.glob("*.ckpt"):
            if candidate == last:
                continue
            try:
                readable[candidate] = (
                    int(load_file(candidate, mmap=True).get("global_step", -1)),
                    candidate.name,
                )
            except CheckpointError:
                continue
        if not readable:
            raise CheckpointError(
                f"{damaged}; no other checkpoint in {checkpoints} is readable either"
            ) from None
        candidate = max(readable, key=readable.get)
        log.warning("%s is damaged (%s); resuming from %s, the run's readable checkpoint of the furthest step (%d)",
                    last, damaged, candidate, readable[candidate][0])  # fmt: skip
        return str(candidate)
    log.info("resuming %s", last)
    return str(last)


def stopped_pretraining(cfg: DictConfig) -> str | None:
    """The ``last.ckpt`` of a supervised start that was stopped before its run's first checkpoint, when resuming."""
    last = Path(cfg.paths.output_dir) / "pretrain" / "checkpoints" / "last.ckpt"
    return str(last) if cfg.get("ckpt_path") in ("last", "auto") and last.is_file() else None


def finished_record(cfg: DictConfig, ckpt_path: str | None) -> dict[str, Any] | None:
    """The run folder's ``final_eval.json`` when ``ckpt_path=last`` or ``auto`` resumes a run that already ended and was
    evaluated (same step, epochs, split and limit): a sweep run again after an interruption skips its finished
    jobs instead of evaluating them a second time."""
    record_file = Path(cfg.paths.output_dir) / "final_eval.json"
    if cfg.get("ckpt_path") not in ("last", "auto") or not ckpt_path or not record_file.is_file():
        return None
    record = json.loads(record_file.read_text())
    step = load_file(ckpt_path, mmap=True)["global_step"]
    wanted = {
        "global_step": step,
        "max_epochs": cfg.trainer.max_epochs,
        "split": OmegaConf.select(cfg, "final_eval.split"),
        "limit": OmegaConf.select(cfg, "final_eval.limit"),
    }
    return record if all(record.get(k, "absent") == v for k, v in wanted.items()) else None
