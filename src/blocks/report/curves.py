"""Learning curves of training runs from their CSV logs: tuning error, horizon rate and entropy against frames.

The error panel also draws, dashed, the final error of the episodes the learner rolled out on training
instructions (``train/rollout_error``, on-policy learners): the gap between the two lines is what the network
fails to carry to held-out instructions (the tuning line is greedy, the training line samples).

A run folder's ``csv/version_*/metrics.csv`` (a resumed run writes one version per session). Read by the
sweep summaries (:mod:`blocks.report.sweep`) and from the command line:

    python -m blocks.report.curves logs/train/runs/<run> [<run> ...] --out docs/curves.png [--labels a b]

A run resumed into new folders is one argument, its folders in order joined by colons as in PATH
(``<first>:<second>``).
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path
from typing import Any

import numpy as np

from blocks.errors import UsageError


def run_folders(run: Path | str) -> list[Path]:
    """A run's folders: one, or several joined by ``:`` as in PATH (a run resumed into new folders, in order)."""
    if Path(run).is_dir():
        return [Path(run)]
    return [Path(part) for part in str(run).split(os.pathsep) if part]


def read_run(run: Path | str) -> dict[str, np.ndarray]:
    """Columns of a run's CSV logs (all versions of all its folders, in order; rows a resumed segment logged
    again replace the earlier ones) as float arrays, NaN where a row has no value."""
    rows: list[dict[str, str]] = []
    for folder in run_folders(run):
        for path in sorted(
            (folder / "csv").glob("version_*/metrics.csv"), key=lambda p: int(p.parent.name.split("_")[1])
        ):
            with open(path, newline="") as handle:
                segment = list(csv.DictReader(handle))
            if segment:  # a resumed segment redoes the steps logged after the checkpoint it resumed from
                first = float(segment[0]["step"])
                rows = [row for row in rows if float(row["step"]) <= first]
            rows.extend(segment)
    if not rows:
        raise UsageError(f"{run}: no csv/version_*/metrics.csv (was the run logged with logger=csv?)")
    keys = sorted({k for row in rows for k in row})
    return {k: np.array([float(r[k]) if r.get(k) not in (None, "") else np.nan for r in rows]) for k in keys}


def frames_at(columns: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """Frames trained on at the given rows: ``train/frames`` interpolated over the steps (else the step)."""
    step = columns["step"]
    if "train/frames" not in columns:
        return step[rows]
    known = ~np.isnan(columns["train/frames"])
    return np.interp(step[rows], step[known], columns["train/frames"][known])


def running_mean(columns: dict[str, np.ndarray], key: str, window: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows where ``key`` was logged and its running mean over ``window`` of them (fewer: as logged)."""
    rows = np.flatnonzero(~np.isnan(columns[key]))
    values = columns[key][rows]
    if window > 1 and len(values) > window:
        values = np.convolve(values, np.ones(window) / window, mode="valid")
        rows = rows[window - 1 :]
    return rows, values


def plot_runs(runs: list[Path | str], labels: list[str] | None, out: Path, title: str | None = None) -> Path:
    """:func:`curves_figure` written to ``out``."""
    import matplotlib.pyplot as plt

    figure = curves_figure(runs, labels, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out


def curves_figure(runs: list[Path | str], labels: list[str] | None = None, title: str | None = None) -> Any:
    """One figure, a panel per curve (tuning error, horizon rate, entropy), a line per run, the legend under
    the panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = labels or [run_folders(run)[0].name for run in runs]
    panels = [("val/mean_error", "tuning mean error (block lengths)"), ("val/horizon_rate", "tuning horizon rate"),
              ("train/entropy", "policy entropy (nats)")]  # fmt: skip
    read = [read_run(run) for run in runs]
    drawn = {key for columns in read for key, _ in panels if not np.isnan(columns.get(key, np.nan)).all()}
    if not drawn:  # a run before its first validation, and a learner that logs no entropy
        raise UsageError(
            f"{', '.join(map(str, runs))}: nothing to plot yet: no {' or '.join(k for k, _ in panels)} logged "
            "(the tuning error comes with the first validation)"
        )
    width = 5 * len(panels)
    figure, axes = plt.subplots(1, len(panels), figsize=(width, 3.6))
    for axis, (key, heading) in zip(axes, panels, strict=True):
        axis.set_title(heading)
        if key not in drawn:
            axis.text(0.5, 0.5, f"no {key} logged", ha="center", va="center", transform=axis.transAxes)
    for columns, label in zip(read, labels, strict=True):
        for axis, (key, _) in zip(axes, panels, strict=True):
            if key not in columns or np.isnan(columns[key]).all():
                continue
            rows, values = running_mean(columns, key, 20 if key == "train/entropy" else 1)  # noisy per update
            (line,) = axis.plot(frames_at(columns, rows) / 1e6, values, marker="o" if key.startswith("val") else None,
                                markersize=3, label=label)  # fmt: skip
            if key == "val/mean_error" and "train/rollout_error" in columns:
                rows, values = running_mean(columns, "train/rollout_error", 200)
                axis.plot(frames_at(columns, rows) / 1e6, values, linestyle="--", color=line.get_color(),
                          linewidth=1, label=f"{label} (training instructions, sampled)")  # fmt: skip
            if key == "val/horizon_rate":
                axis.set_ylim(-0.05, 1.05)
            axis.set_xlabel("frames trained on (millions)")
            axis.grid(alpha=0.3)
    lines: dict[str, Any] = {}  # every panel's lines, each name once (a panel may lack a run's line)
    for axis in axes:
        for handle, name in zip(*axis.get_legend_handles_labels(), strict=True):
            lines.setdefault(name, handle)
    names, handles = list(lines), list(lines.values())
    # As many legend columns as the longest name allows (about 13 characters an inch at this size), at most 4;
    # the figure grows by the legend's rows so that it sits under the axis labels.
    legend_columns = max(1, min(4, len(names), int(width * 13) // (max(map(len, names), default=1) + 6)))
    legend_height = 0.22 * -(-len(names) // legend_columns) + 0.1  # inches
    figure.set_size_inches(width, 3.6 + legend_height)
    figure.legend(handles, names, loc="lower center", ncol=legend_columns, fontsize=9)
    if title:
        figure.suptitle(title)
    figure.tight_layout(rect=(0, legend_height / (3.6 + legend_height), 1, 1))
    return figure


def main(argv: list[str] | None = None) -> None:
    from blocks.cli import user_errors

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run folders (a resumed run's folders joined by colons)")
    parser.add_argument("--out", type=Path, default=Path("curves.png"))
    parser.add_argument("--labels", nargs="*", help="one per run (default: the run folder's name)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    with user_errors():
        print(f"wrote {plot_runs(args.runs, args.labels, args.out, args.title)}")


if __name__ == "__main__":
    main()
