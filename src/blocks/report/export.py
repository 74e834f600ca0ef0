"""Slim a training checkpoint down to what inference needs: weights and hyperparameters (a few MB).

    python -m blocks.report.export logs/train/runs/<run>/checkpoints/epoch_012.ckpt my.ckpt
    python -m blocks.report.export --best logs/train/runs/<run> my.ckpt   # the tune-best one
    python -m blocks.report.export --average 14 19 logs/train/runs/<run> out.ckpt   # the mean weights of epochs 14-19

The result still loads with ``blocks.model.checkpoint.load_policy(path)``, ``load_learner(path)`` and
``python eval.py agent=policy ckpt_path=path``; it cannot resume training (no optimizer state).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from blocks.cli import user_errors
from blocks.errors import CheckpointError
from blocks.model.checkpoint import load_file

NETWORKS = ("policy.", "reader.", "predictor.")  # what a learner holds that acting needs (no metric states)
KEPT = ("state_dict", "hyper_parameters", "pytorch-lightning_version", "epoch", "global_step", "frames_seen")


def _slim(checkpoint: dict, source: str) -> dict:
    slim = {k: checkpoint[k] for k in KEPT if k in checkpoint}
    slim["state_dict"] = {k: v for k, v in slim["state_dict"].items() if k.startswith(NETWORKS)}
    slim["exported_from"] = source
    return slim


def _save(slim: dict, destination: str | Path) -> Path:
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    torch.save(slim, destination)
    return destination


def export(source: str | Path, destination: str | Path) -> Path:
    return _save(_slim(load_file(source), str(source)), destination)


def average(run: str | Path, first: int, last: int, destination: str | Path) -> Path:
    """The mean of the weights of a run's epoch checkpoints ``epoch_<first>`` to ``epoch_<last>`` (same names
    as the default checkpoint files), exported like :func:`export`: averaging the last epochs of a noisy run gives
    a flatter, steadier network than any one of them."""
    paths = [Path(run) / "checkpoints" / f"epoch_{epoch:03d}.ckpt" for epoch in range(first, last + 1)]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing or first > last:
        raise CheckpointError(f"--average {first} {last}: no such checkpoints {missing or ''}")
    checkpoints = [load_file(p) for p in paths]
    slim = _slim(checkpoints[-1], f"mean of {paths[0]} .. {paths[-1].name}")
    slim["state_dict"] = {
        k: torch.stack([c["state_dict"][k].double() for c in checkpoints]).mean(0).to(v.dtype)
        if v.is_floating_point() else v
        for k, v in slim["state_dict"].items()
    }  # fmt: skip
    return _save(slim, destination)


def _checkpoint_states(run: str | Path) -> tuple[Path, list[dict]]:
    """The run's newest ``last*.ckpt`` and the states its checkpoint callbacks saved there."""
    folder = Path(run) / "checkpoints"
    lasts = sorted(folder.glob("last*.ckpt"), key=lambda p: p.stat().st_mtime)
    if not lasts:
        raise CheckpointError(f"{folder}: no last.ckpt, so no record of the validations")
    callbacks = load_file(lasts[-1]).get("callbacks", {})
    return lasts[-1], [state for name, state in callbacks.items() if name.startswith("ModelCheckpoint")]


def validations(run: str | Path) -> list[tuple[Path, float]]:
    """Every checkpoint of a run with the validation score it was saved at (:func:`monitored`; for the policies
    ``val/mean_error``, the tuning split's greedy error), by file name (epoch and step order with the default names).

    Lightning's checkpoint callback keeps all scores (``save_top_k: -1``) in the run's newest ``last*.ckpt``; the
    files are looked up in the run's own ``checkpoints/`` folder, so a run copied from another machine works.
    """
    folder = Path(run) / "checkpoints"
    last, states = _checkpoint_states(run)
    scores: dict[str, float] = {}
    for state in states:
        scores.update({Path(p).name: float(s) for p, s in state.get("best_k_models", {}).items()})
    if not scores:
        raise CheckpointError(f"{last} records no scored checkpoint (did the run validate?)")
    found = [(folder / name, score) for name, score in sorted(scores.items()) if (folder / name).is_file()]
    if not found:
        raise CheckpointError(f"{folder}: none of the validated checkpoints {sorted(scores)} is there")
    return found


def monitored(run: str | Path) -> str:
    """The name of the score a run's checkpoints were saved at (``val/mean_error``, the board reader's
    ``val/missed``, ...), as its newest ``last*.ckpt`` records it."""
    names = {state.get("monitor") for state in _checkpoint_states(run)[1]} - {None}
    return names.pop() if len(names) == 1 else "score"


def best_checkpoint(run: str | Path) -> tuple[Path, float]:
    """The run's checkpoint with the lowest validation score: the tuning split picks, never dev."""
    return min(validations(run), key=lambda item: item[1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m blocks.report.export", description=__doc__.split("\n")[0]
    )
    parser.add_argument("source", help="a training checkpoint, or with --best a run folder")
    parser.add_argument("destination")
    parser.add_argument("--best", action="store_true", help="export the run's tune-best checkpoint")
    parser.add_argument("--average", nargs=2, type=int, metavar=("FIRST", "LAST"),
                        help="export the mean weights of the run's epochs FIRST to LAST")  # fmt: skip
    args = parser.parse_args(argv)
    source = args.source
    with user_errors():
        if args.average:
            path = average(source, *args.average, args.destination)
            print(f"wrote {path}: {load_file(path)['exported_from']}")
            return
        if args.best:
            name, scored = monitored(source), validations(source)
            for path, score in scored:
                print(f"{path.name}: {name} {score:.4g}")
            source, score = min(
                scored, key=lambda item: item[1]
            )  # best_checkpoint, without reading the run again
            print(f"best: {source.name} ({score:.4g}; the first of equal scores)")
        path = export(source, args.destination)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
