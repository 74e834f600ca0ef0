"""Learning curves of training runs from their CSV logs: tuning error, horizon rate and entropy against frames.

A run folder's ``csv/version_*/metrics.csv`` (a resumed run writes one version per session). Read by
``scripts/plot_curves.py`` and the sweep summaries (``blocks.learn.sweep``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from blocks.errors import UsageError


def read_run(run: Path) -> dict[str, np.ndarray]:
    """Columns of a run's CSV logs (all versions, in order) as float arrays, NaN where a row has no value."""
    rows: list[dict[str, str]] = []
    for path in sorted(
        (run / "csv").glob("version_*/metrics.csv"), key=lambda p: int(p.parent.name.split("_")[1])
    ):
        with open(path, newline="") as handle:
            rows.extend(csv.DictReader(handle))
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


def plot_runs(runs: list[Path], labels: list[str] | None, out: Path, title: str | None = None) -> Path:
    """One figure, a panel per curve (tuning error, horizon rate, entropy), a line per run; written to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = labels or [run.name for run in runs]
    panels = [("val/mean_error", "tuning mean error (block lengths)"), ("val/horizon_rate", "tuning horizon rate"),
              ("train/entropy", "policy entropy (nats)")]  # fmt: skip
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6))
    for run, label in zip(runs, labels, strict=True):
        columns = read_run(run)
        for axis, (key, heading) in zip(axes, panels, strict=True):
            if key not in columns:
                continue
            rows = np.flatnonzero(~np.isnan(columns[key]))
            values = columns[key][rows]
            if key == "train/entropy" and len(values) > 20:  # noisy per update: a running mean
                values = np.convolve(values, np.ones(20) / 20, mode="valid")
                rows = rows[19:]
            axis.plot(frames_at(columns, rows) / 1e6, values, marker="o" if key.startswith("val") else None,
                      markersize=3, label=label)  # fmt: skip
            axis.set_title(heading)
            if key == "val/horizon_rate":
                axis.set_ylim(-0.05, 1.05)
            axis.set_xlabel("frames trained on (millions)")
            axis.grid(alpha=0.3)
    figure.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=len(labels), fontsize=9)
    if title:
        figure.suptitle(title)
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)
    return out
