"""Learning curves of training runs from their CSV logs: tuning error, horizon rate and entropy against frames.

    python scripts/plot_curves.py logs/train/runs/<run> [<run> ...] --out docs/curves.png [--labels a b]

Reads every ``csv/version_*/metrics.csv`` of each run (a resumed run writes one version per session) and
plots, against the frames trained on (``train/frames``; the update step where a learner does not count frames):
the greedy mean error on the tuning split (``val/mean_error``), the share of its episodes that hit the horizon
(``val/horizon_rate``) and the policy's entropy (``train/entropy``, a running mean).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np


def read_run(run: Path) -> dict[str, np.ndarray]:
    """Columns of a run's CSV logs (all versions, in order) as float arrays, NaN where a row has no value."""
    rows: list[dict[str, str]] = []
    for path in sorted(
        (run / "csv").glob("version_*/metrics.csv"), key=lambda p: int(p.parent.name.split("_")[1])
    ):
        with open(path, newline="") as handle:
            rows.extend(csv.DictReader(handle))
    if not rows:
        raise SystemExit(f"{run}: no csv/version_*/metrics.csv (was the run logged with logger=csv?)")
    keys = sorted({k for row in rows for k in row})
    return {k: np.array([float(r[k]) if r.get(k) not in (None, "") else np.nan for r in rows]) for k in keys}


def frames_at(columns: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """Frames trained on at the given rows: ``train/frames`` interpolated over the steps (else the step)."""
    step = columns["step"]
    if "train/frames" not in columns:
        return step[rows]
    known = ~np.isnan(columns["train/frames"])
    return np.interp(step[rows], step[known], columns["train/frames"][known])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("curves.png"))
    parser.add_argument("--labels", nargs="*", help="one per run (default: the run folder's name)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = args.labels or [run.name for run in args.runs]
    panels = [("val/mean_error", "tuning mean error (block lengths)"), ("val/horizon_rate", "tuning horizon rate"),
              ("train/entropy", "policy entropy (nats)")]  # fmt: skip
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6))
    for run, label in zip(args.runs, labels, strict=True):
        columns = read_run(run)
        for axis, (key, title) in zip(axes, panels, strict=True):
            if key not in columns:
                continue
            rows = np.flatnonzero(~np.isnan(columns[key]))
            values = columns[key][rows]
            if key == "train/entropy" and len(values) > 20:  # noisy per update: a running mean
                values = np.convolve(values, np.ones(20) / 20, mode="valid")
                rows = rows[19:]
            axis.plot(frames_at(columns, rows) / 1e6, values, marker="o" if key.startswith("val") else None,
                      markersize=3, label=label)  # fmt: skip
            axis.set_title(title)
            if key == "val/horizon_rate":
                axis.set_ylim(-0.05, 1.05)
            axis.set_xlabel("frames trained on (millions)")
            axis.grid(alpha=0.3)
    figure.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=len(labels), fontsize=9)
    if args.title:
        figure.suptitle(args.title)
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
