"""Several runs of one recipe, as the paper reports them: the best on the tuning split, and their ensemble.

The paper ran each experiment three times and reported the best, and its ensemble rows act with three networks
together. Each run folder holds what ``train.py`` leaves there (``final_eval.json`` with the checkpoint the
tuning split selected and its dev figures, ``episodes.csv``, the CSV log); with ``--ensemble`` the selected
checkpoints act together (:class:`~blocks.agents.policy.PolicyAgent`: the mean of their log-probabilities) on
the runs' split, and the ensemble is paired against the best run (95 % bootstrap over board sequences):

    python -m blocks.report.seeds logs/reinforce_run1 logs/reinforce_seed1 logs/reinforce_seed2 \\
        --ensemble --out logs/reinforce_seeds

writes ``seeds.md`` (and the ensemble's ``metrics.json`` and ``episodes.csv``) in ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from blocks.errors import ConfigError
from blocks.report.compare import paired_difference, read
from blocks.report.sweep import best_of, number, run_row


def evaluate_ensemble(checkpoints: list[str], split: str, out: Path, root: str | None = None,
                      limit: int | None = None, device: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The checkpoints acting together on ``split``; its figures in ``out/metrics.json``, its episodes beside."""
    from blocks.agents.policy import PolicyAgent
    from blocks.engine import tune_process
    from blocks.evaluate import evaluate_split

    tune_process()
    agent = PolicyAgent.from_checkpoint(checkpoints, device=device)
    return evaluate_split(agent, split, out, root, limit, {"limit": limit, "checkpoints": checkpoints})


def report(runs: list[Path], out: Path | None = None, ensemble: bool = False, root: str | None = None,
           device: str | None = None) -> str:  # fmt: skip
    """The runs' table, the best of them on the tuning split and (``ensemble``) their ensemble, as Markdown."""
    missing = [str(run) for run in runs if not (run / "final_eval.json").is_file()]
    if missing:
        raise ConfigError(f"no final_eval.json (a finished, evaluated run) in: {', '.join(missing)}")
    rows = [run_row(run) for run in runs]
    splits = {(r["split"], r["limit"]) for r in rows}
    if len(splits) > 1:
        raise ConfigError(f"the runs were evaluated on different splits or limits: {sorted(splits, key=str)}")
    split, limit = splits.pop()
    lines = [
        "| run | seed | tune (selected) | mean error | median | mean min. distance | steps | horizon | frames | hours |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run, r in zip(runs, rows, strict=True):
        frames = "-" if np.isnan(r["frames"]) else f"{r['frames'] / 1e6:.2f} M"
        lines.append(
            f"| {run} | {r['seed'] or '-'} | {number(r['tune_error'])} | {number(r['mean_error'])} | "
            f"{number(r['median_error'])} | {number(r['mean_min_distance'])} | {number(r['mean_steps'], 1)} | "
            f"{100 * r['horizon_rate']:.0f} % | {frames} | {number(r['hours'])} |"
        )
    best = rows.index(best_of(rows))
    lines.append(
        f"\nbest of {len(rows)} on the tuning split: {runs[best]} (tune {number(rows[best]['tune_error'])}), "
        f"{split} {number(rows[best]['mean_error'])} / {number(rows[best]['median_error'])}; {split} mean over "
        f"the runs {np.mean([r['mean_error'] for r in rows]):.2f}."
    )
    if ensemble:
        if out is None:
            raise ConfigError("--ensemble writes the ensemble's episodes: give --out <folder>")
        if any(r["checkpoint"] is None for r in rows):
            raise ConfigError("a run's final_eval.json names no checkpoint: evaluate it with train.py again")
        record = evaluate_ensemble([r["checkpoint"] for r in rows], split, out, root, limit, device)
        paired = paired_difference(read(str(runs[best] / "episodes.csv")), read(str(out / "episodes.csv")))
        lines.append(
            f"\nensemble of the {len(rows)} selected checkpoints: {split} {number(record['mean_error'])} / "
            f"{number(record['median_error'])} (min. distance {number(record['mean_min_distance'])}, "
            f"{number(record['mean_steps'], 1)} steps); against the best run {paired['difference']:+.2f} "
            f"(95 % interval {paired['low']:+.2f} to {paired['high']:+.2f})."
        )
    text = "\n".join(lines) + "\n"
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "seeds.md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    from blocks.cli import exit_with

    parser = argparse.ArgumentParser(
        prog="python -m blocks.report.seeds", description=__doc__.splitlines()[0]
    )
    parser.add_argument("runs", type=Path, nargs="+", help="run folders (hydra.run.dir) of one recipe")
    parser.add_argument("--out", type=Path, help="folder for seeds.md (and the ensemble's episodes)")
    parser.add_argument(
        "--ensemble", action="store_true", help="also evaluate the selected checkpoints together"
    )
    parser.add_argument("--data", default=None, help="corpus folder (default: BLOCKS_DATA or the download)")
    parser.add_argument("--device", default=None, help="torch device for the ensemble (default: cpu)")
    args = parser.parse_args(argv)
    try:
        print(report(args.runs, args.out, args.ensemble, args.data, args.device), end="")
    except (ConfigError, ValueError) as error:
        exit_with(error)


if __name__ == "__main__":
    main()
