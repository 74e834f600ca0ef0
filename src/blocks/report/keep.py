"""Keep a finished run's record, small enough to commit, so that rows measured on different days can be joined.

A paper row measured over several runs (the best of three, the ensembles, a Figure 4 sweep finished over several
days) needs each run's figures long after its log folder is gone. ``keep`` copies what the sweep table and the
seeds report read (``final_eval.json``, ``episodes.csv``, the CSV log, the Hydra overrides and config) and, with
``--checkpoint``, exports the checkpoint the tuning split selected (weights only, a few MB) and points the kept
``final_eval.json`` at it, so that ``python -m blocks.report.seeds --ensemble`` can still act with it:

    python -m blocks.report.keep logs/figure4/fraction=0.125,seed=42 docs/runs/figure4/fraction=0.125,seed=42
    python -m blocks.report.keep logs/reinforce_seed1 docs/runs/reinforce/seed=1 \\
        --checkpoint checkpoints/paper/reinforce.ckpt

Training checkpoints, the optimizer's state and the supervised start's folder are left behind.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from blocks.errors import ConfigError

RECORD = ("final_eval.json", "episodes.csv", ".hydra/overrides.yaml", ".hydra/config.yaml")


def keep(run: Path, destination: Path, checkpoint: Path | None = None) -> Path:
    """Copy ``run``'s record to ``destination`` (and export its selected checkpoint to ``checkpoint``)."""
    missing = [name for name in RECORD[:2] if not (run / name).is_file()]
    if missing:
        raise ConfigError(f"{run}: no {' or '.join(missing)} (keep a finished, evaluated run)")
    record = json.loads((run / "final_eval.json").read_text())
    if checkpoint is not None:
        from blocks.report.export import export

        if not record.get("checkpoint") or not Path(record["checkpoint"]).is_file():
            raise ConfigError(
                f"{run}: the selected checkpoint {record.get('checkpoint')!r} is not there to export"
            )
        export(record["checkpoint"], checkpoint)
        record["selected_in_run"], record["checkpoint"] = record["checkpoint"], str(checkpoint)
    logs = [log.relative_to(run) for log in sorted(run.glob("csv/version_*/metrics.csv"))]
    for name in [Path(n) for n in RECORD[1:] if (run / n).is_file()] + logs:
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run / name, destination / name)
    (destination / "final_eval.json").write_text(json.dumps(record, indent=2) + "\n")
    return destination


def main(argv: list[str] | None = None) -> None:
    from blocks.cli import exit_with

    parser = argparse.ArgumentParser(prog="python -m blocks.report.keep", description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished run's folder (hydra.run.dir or a sweep's job)")
    parser.add_argument("destination", type=Path, help="folder for the kept record")
    parser.add_argument("--checkpoint", type=Path, help="export the selected checkpoint here (weights only)")
    args = parser.parse_args(argv)
    try:
        print(keep(args.run, args.destination, args.checkpoint))
    except ConfigError as error:
        exit_with(error)


if __name__ == "__main__":
    main()
