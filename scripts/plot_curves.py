"""Learning curves of training runs from their CSV logs: tuning error, horizon rate and entropy against frames.

    python scripts/plot_curves.py logs/train/runs/<run> [<run> ...] --out docs/curves.png [--labels a b]

A run resumed into new folders is one argument, its folders in order joined by colons as in PATH (``<first>:<second>``).

Reads every ``csv/version_*/metrics.csv`` of each run (a resumed run writes one version per session) and
plots, against the frames trained on (``train/frames``; the update step where a learner does not count frames):
the greedy mean error on the tuning split (``val/mean_error``), the share of its episodes that hit the horizon
(``val/horizon_rate``) and the policy's entropy (``train/entropy``, a running mean).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from blocks.cli import user_errors
from blocks.curves import plot_runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run folders (a resumed run's folders joined by colons)")
    parser.add_argument("--out", type=Path, default=Path("curves.png"))
    parser.add_argument("--labels", nargs="*", help="one per run (default: the run folder's name)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    with user_errors():
        print(f"wrote {plot_runs(args.runs, args.labels, args.out, args.title)}")


if __name__ == "__main__":
    main()
