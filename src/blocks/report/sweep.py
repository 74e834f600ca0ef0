"""One table for a sweep of training runs (the paper's ablations, Figure 4), written when the sweep ends.

Every job of ``python train.py -m experiment=ablations ablation=...`` leaves ``final_eval.json`` and
``episodes.csv`` (its dev evaluation) in its folder. :class:`SweepSummary`, a Hydra callback, lists the finished
jobs with the swept value, their tuning and dev figures, the paper's figure, the frames and hours trained, and each
job's paired difference from the reference job with a 95 % bootstrap interval over board sequences (a value run
with several seeds also gets the best of them, picked on the tuning split: the paper's best of three); as
``summary.csv`` and ``summary.md`` in the sweep folder, with the jobs' tuning curves in ``curves.png`` and the
dev errors beside the paper's in ``paper.png``. An
interrupted sweep can be summarised by hand, runs kept elsewhere (a reference) added with ``--also``:

    python -m blocks.report.sweep logs/ablations --key ablation --reference none
    python -m blocks.report.sweep logs/figure4 --key data.demonstration_fraction --reference 1.0 --also <run>
"""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from blocks.report.compare import paired_difference, read
from blocks.report.curves import read_run
from blocks.report.paper import PAPER_SWEEPS

COLUMNS = ("value", "seed", "mean_error", "median_error", "mean_min_distance", "median_min_distance", "mean_steps",
           "horizon_rate", "tune_error", "paper_mean_error", "difference", "low", "high", "frames", "hours",
           "split", "n", "folder")  # fmt: skip


def swept_value(job: Path, key: str) -> str | None:
    """The value ``key`` took in a job: its override (``.hydra/overrides.yaml``), else its composed config."""
    overrides = job / ".hydra" / "overrides.yaml"
    if overrides.is_file():
        for override in yaml.safe_load(overrides.read_text()) or []:
            name, _, value = override.partition("=")
            if name.lstrip("+~") == key:
                return value
    config = job / ".hydra" / "config.yaml"
    if config.is_file():
        value = OmegaConf.select(OmegaConf.load(config), key)
        return None if value is None else str(value)
    return None


def paper_figure(key: str, value: str | None) -> float | None:
    """The paper's dev mean error for this value of the swept key ("0.5" and ".50" alike), if it has one."""
    for known, figure in PAPER_SWEEPS.get(key, {}).items():
        if known == value:
            return figure
        try:
            if value is not None and float(known) == float(value):
                return figure
        except ValueError:
            continue
    return None


def by_value(rows: list[dict[str, Any]]) -> dict[Any, list[dict[str, Any]]]:
    """The rows of each swept value (its seeds), the values in the rows' order."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["value"], []).append(row)
    return groups


def against_paper_figure(rows: list[dict[str, Any]], key: str) -> Any:
    """Our dev mean error per swept value beside the paper's (a line over numeric values, else categories).

    Several seeds of one value share its place: a dot each, the line through their mean."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = by_value(rows)
    values = list(runs)
    try:
        values.sort(key=float)
        place = {v: float(v) for v in values}
        numeric = True
    except (TypeError, ValueError):
        place, numeric = {v: float(i) for i, v in enumerate(values)}, False
    figure, axis = plt.subplots(figsize=(6, 3.8))
    x = [place[v] for v in values]
    several = any(len(group) > 1 for group in runs.values())
    label = "ours (dev, mean of seeds)" if several else "ours (dev)"
    joined = "-" if numeric else ""  # categories are not a scale: no line between them
    axis.plot(x, [np.mean([r["mean_error"] for r in runs[v]]) for v in values], "o" + joined, label=label)
    if several:
        dots = [(place[r["value"]], r["mean_error"]) for r in rows]
        axis.plot(*zip(*dots, strict=True), ".", color="C0", alpha=0.5, label="ours, each seed")
    paper = [(place[v], runs[v][0]["paper_mean_error"]) for v in values if runs[v][0]["paper_mean_error"]]
    if paper:
        axis.plot(*zip(*paper, strict=True), "s--" if numeric else "s", label="Misra et al. 2017 (dev)")
    if not numeric:
        axis.set_xticks(x, [str(v) for v in values], rotation=20)
    axis.set_xlabel(key)
    axis.set_ylabel("mean distance error (block lengths)")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    return figure


def plot_against_paper(rows: list[dict[str, Any]], key: str, out: Path) -> Path:
    import matplotlib.pyplot as plt

    figure = against_paper_figure(rows, key)
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out


def _logged(columns: dict[str, np.ndarray], key: str, pick: Any) -> float:
    values = columns.get(key, np.array([]))
    values = values[~np.isnan(values)]
    return float(pick(values)) if len(values) else float("nan")


def run_row(job: Path, key: str | None = None) -> dict[str, Any]:
    """One finished run (``final_eval.json`` in its folder): its dev figures and selected checkpoint, its best
    tuning error, frames and hours from its CSV log, and with ``key`` the swept value and the paper's figure."""
    record = json.loads((job / "final_eval.json").read_text())
    columns = read_run(job) if any(job.glob("csv/version_*/metrics.csv")) else {}
    value = swept_value(job, key) if key else None
    return {
        "value": value, "seed": swept_value(job, "seed"), **{k: record[k] for k in COLUMNS[2:8]},
        "tune_error": _logged(columns, "val/mean_error", np.min),
        "paper_mean_error": paper_figure(key, value) if key else None,
        "frames": _logged(columns, "train/frames", lambda v: v[-1]),
        "hours": _logged(columns, "time/train_hours", lambda v: v[-1]),
        "folder": job.name, "checkpoint": record.get("checkpoint"), "split": record.get("split"),
        "limit": record.get("limit"), "n": record.get("n"),
    }  # fmt: skip


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run the tuning split picks (the paper picked on dev; we never do)."""
    return min(runs, key=lambda r: np.inf if np.isnan(r["tune_error"]) else r["tune_error"])


def summarize_sweep(
    folder: Path, key: str, reference: str, also: Sequence[Path] = ()
) -> list[dict[str, Any]]:
    """Rows for every finished job under ``folder`` and the finished runs ``also`` names (a reference trained or
    kept elsewhere, e.g. the approach for Figure 4's 100 %); writes summary.csv, summary.md and curves.png there."""
    jobs = sorted(p.parent for p in folder.glob("*/final_eval.json")) + [Path(run) for run in also]
    rows = [run_row(job, key) for job in jobs]
    for job, row in zip(jobs, rows, strict=True):
        if job.parent != folder:
            row["folder"] = str(job)
    # Each run against the reference run of its own seed (the same supervised start), else the first reference.
    bases = {row["seed"]: job for job, row in zip(jobs, rows, strict=True) if row["value"] == reference}
    for job, row in zip(jobs, rows, strict=True):
        base = bases.get(row["seed"], next(iter(bases.values()), None))
        if base is not None and job != base:
            row.update({k: paired_difference(read(str(base / "episodes.csv")), read(str(job / "episodes.csv")))[k]
                        for k in ("difference", "low", "high")})  # fmt: skip
    with open(folder / "summary.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    (folder / "summary.md").write_text(markdown(rows, key, reference))
    if rows:
        plot_against_paper(rows, key, folder / "paper.png")
    logged = [
        (job, row) for job, row in zip(jobs, rows, strict=True) if any(job.glob("csv/version_*/metrics.csv"))
    ]
    if logged:
        from blocks.report.curves import plot_runs

        plot_runs([j for j, _ in logged], [f"{r['value']} (seed {r['seed']})" for _, r in logged],
                  folder / "curves.png", title=f"{key} sweep")  # fmt: skip
    return rows


def number(x: Any, digits: int = 2) -> str:
    """A figure for a table: '-' where there is none."""
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def evaluated_on(row: dict[str, Any]) -> str:
    """The split and how many of its examples a row's figures cover: an 8-example smoke sweep says so."""
    n = row.get("n")
    return f"{row.get('split') or '?'}, {n if n is not None else '?'} examples" + (
        f" (limit {row['limit']})" if row.get("limit") else ""
    )


def markdown(rows: list[dict[str, Any]], key: str, reference: str) -> str:
    lines = [
        f"| {key} | seed | tune (selected) | mean error | median | mean min. distance | paper (mean) | "
        f"vs {reference} (95 % interval) | steps | horizon | frames | hours | evaluated on |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        paired = "-" if r.get("difference") is None else (
            f"{r['difference']:+.2f} ({r['low']:+.2f} to {r['high']:+.2f})")  # fmt: skip
        frames = "-" if np.isnan(r["frames"]) else f"{r['frames'] / 1e6:.2f} M"
        lines.append(
            f"| {r['value']} | {r['seed'] or '-'} | {number(r['tune_error'])} | {number(r['mean_error'])} | "
            f"{number(r['median_error'])} | "
            f"{number(r['mean_min_distance'])} | {number(r['paper_mean_error'])} | {paired} | "
            f"{number(r['mean_steps'], 1)} | {100 * r['horizon_rate']:.0f} % | {frames} | {number(r['hours'])} | "
            f"{evaluated_on(r)} |"
        )
    # The paper's protocol: the best of several runs. Ours picks on the tuning split, never on dev.
    for value, runs in by_value(rows).items():
        if len(runs) > 1:
            best = best_of(runs)
            lines.append(
                f"\n{value}: best of {len(runs)} seeds on the tuning split: seed {best['seed']} (tune "
                f"{number(best['tune_error'])}), dev {number(best['mean_error'])} / {number(best['median_error'])}; "
                f"dev mean over the seeds {np.mean([r['mean_error'] for r in runs]):.2f}."
            )
    return "\n".join(lines) + "\n"


class SweepSummary(Callback):
    """Hydra callback: the sweep's table when the multirun ends (``hydra.callbacks`` in the experiment)."""

    def __init__(self, key: str, reference: str) -> None:
        self.key, self.reference = key, reference

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        folder = Path(config.hydra.sweep.dir)
        rows = summarize_sweep(folder, self.key, self.reference)
        print(f"\n{len(rows)} finished runs, summary in {folder / 'summary.md'}:\n")
        print((folder / "summary.md").read_text(), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m blocks.report.sweep", description=__doc__.splitlines()[0]
    )
    parser.add_argument("folder", type=Path, help="the sweep folder (hydra.sweep.dir)")
    parser.add_argument("--key", required=True, help="the swept override, e.g. ablation")
    parser.add_argument("--reference", required=True, help="the value the others are compared with")
    parser.add_argument(
        "--also",
        type=Path,
        nargs="+",
        default=[],
        metavar="RUN",
        help="finished runs outside the folder to list and pair too (e.g. a kept reference)",
    )
    args = parser.parse_args(argv)
    for run in args.also:
        if not (run / "final_eval.json").is_file():
            parser.error(f"{run} is not a finished run: it has no final_eval.json")
    summarize_sweep(args.folder, args.key, args.reference, args.also)
    print((args.folder / "summary.md").read_text())


if __name__ == "__main__":
    main()
