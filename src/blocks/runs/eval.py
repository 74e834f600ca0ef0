"""What ``eval.py`` does, as ``runs/train.py`` is what ``train.py`` does: check the config, build the agent, hold the
run folder, evaluate the split with :mod:`blocks.evaluate`, print and save the figures."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import hydra

from blocks.checks import check_eval_config
from blocks.engine import tune_process
from blocks.errors import UsageError
from blocks.evaluate import evaluate_split


@contextlib.contextmanager
def claim_folder(folder: str | os.PathLike) -> Iterator[None]:
    """Hold ``folder`` for one evaluation: a second one started into it while the first runs, or after it finished,
    is refused (one line), instead of both writing there and leaving one's figures beside the other's
    configuration. A claim whose process is gone (a killed run) is taken over."""
    lock = Path(folder) / ".evaluating"
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            handle = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            owner = lock.read_text().strip() if lock.exists() else ""
            if owner.isdigit() and _alive(int(owner)):
                raise UsageError(
                    f"{folder}: another evaluation (process {owner}) is writing its results there; give this one "
                    f"its own folder (hydra.run.dir=...)"
                ) from None
            lock.unlink(missing_ok=True)  # left by a process that is gone
            continue
        os.write(handle, str(os.getpid()).encode())
        os.close(handle)
        break
    # An evaluation finished there: its figures are not replaced.
    if (Path(folder) / "metrics.json").is_file():
        lock.unlink(missing_ok=True)
        raise UsageError(
            f"{folder}: holds an earlier evaluation's results (metrics.json, episodes.csv); give this one its own "
            f"folder (hydra.run.dir=...), or remove them to evaluate there again"
        )
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # PermissionError: alive, someone else's
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def evaluate(cfg) -> dict[str, float | int | str]:
    """What ``eval.py`` does: build the agent, run the split, print and save the figures as JSON.

    The last line on stdout is the JSON object; the same object goes to ``metrics.json`` in the run folder, and
    every episode's figures to ``episodes.csv`` beside it.
    """
    check_eval_config(cfg)
    tune_process(cfg.get("threads"))
    with claim_folder(cfg.paths.output_dir):
        agent = hydra.utils.instantiate(cfg.agent)
        name = hydra.core.hydra_config.HydraConfig.get().runtime.choices["agent"]
        learnt = getattr(agent, "render", None)
        if learnt is not None and learnt != cfg.data.get("render", "flat"):
            print(f"{name}: its checkpoint learnt from data.render={learnt} pictures; evaluated on them, "
                  f"not on data.render={cfg.data.render}", file=sys.stderr, flush=True)  # fmt: skip
        record = evaluate_split(
            agent, cfg.split, cfg.paths.output_dir, cfg.data.root, cfg.get("limit"), {"agent": name},
            cfg.data.image_size, batch_size=cfg.batch_size, seed=cfg.seed, progress=cfg.progress,
        )  # fmt: skip
    print(json.dumps(record), flush=True)
    return record
