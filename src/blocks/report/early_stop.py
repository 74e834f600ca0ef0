"""What an early stop on the tuning split would have picked, read off finished runs' validation curves.

A stop with patience ``p`` ends a run after ``p`` validations in a row without a new best tuning error and keeps
the best one so far. Replayed on the curves of runs that went to the end, it says whether the stop would have
picked the same checkpoint and how many validations (and so how much training) it would have saved:

    python -m blocks.report.early_stop docs/runs/release-world/approach/seed=* --patience 2 3 4 5 6
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from blocks.errors import UsageError
from blocks.report.curves import read_run


def tuning_curve(run: Path | str) -> np.ndarray:
    """A run's tuning errors (``val/mean_error``) in the order it validated."""
    values = read_run(run).get("val/mean_error")
    values = values[~np.isnan(values)] if values is not None else np.array([])
    if not len(values):
        raise UsageError(f"{run}: no validation on the tuning split logged (val/mean_error)")
    return values


def stopped(values: np.ndarray, patience: int) -> tuple[int, int]:
    """(the index the stop keeps, the number of validations run) under ``patience``."""
    best = since = 0
    for i in range(1, len(values)):
        if values[i] < values[best]:
            best, since = i, 0
        else:
            since += 1
            if since >= patience:
                return best, i + 1
    return best, len(values)


def replay(curves: dict[str, np.ndarray], patience: int) -> dict[str, float]:
    """Over all ``curves``: the runs whose pick is the full run's, the validations run against all, and the
    largest rise in the picked tuning error."""
    same = ran = total = 0
    worst = 0.0
    for values in curves.values():
        kept, run = stopped(values, patience)
        full = int(np.argmin(values))
        same, ran, total = same + (kept == full), ran + run, total + len(values)
        worst = max(worst, float(values[kept] - values[full]))
    return {"runs": len(curves), "same_pick": same, "validations": ran, "of": total, "worst_rise": worst}


def main(argv: list[str] | None = None) -> None:
    from blocks.cli import user_errors

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="finished run folders or kept records (docs/runs/...)")
    parser.add_argument("--patience", type=int, nargs="+", default=[2, 3, 4, 5, 6])
    args = parser.parse_args(argv)
    with user_errors():
        curves = {str(run): tuning_curve(run) for run in args.runs}
    print(
        "| patience | same pick as the full run | validations run | largest rise of the picked tune error |"
    )
    print("| --- | --- | --- | --- |")
    for patience in args.patience:
        r = replay(curves, patience)
        print(f"| {patience} | {r['same_pick']} of {r['runs']} | {r['validations']} of {r['of']} | "
              f"{r['worst_rise']:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
