"""Paired comparison of two evaluations of the same split: mean difference in error with a bootstrap interval.

Both files are the ``episodes.csv`` that ``eval.py`` writes beside ``metrics.json``. The bootstrap resamples
whole corpus episodes (board sequences), not single instructions: instructions on one board are not
independent, and a tuning split of 4 board sequences then shows how little it can tell apart.

    python scripts/compare_episodes.py logs/eval/runs/<a>/episodes.csv logs/eval/runs/<b>/episodes.csv
"""

from __future__ import annotations

import argparse

from blocks.cli import user_errors
from blocks.compare import paired_difference, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    args = parser.parse_args()
    with user_errors():
        r = paired_difference(read(args.a), read(args.b))
    print(
        f"{r['n']} examples on {r['episodes']} board sequences: mean error a {r['mean_a']:.3f}, b {r['mean_b']:.3f}; "
        f"b - a = {r['difference']:+.3f} (95 % interval {r['low']:+.3f} to {r['high']:+.3f}); "
        f"b lower on {100 * r['b_better']:.1f} % of examples"
    )
    if r["episodes"] < 2:
        print("one board sequence: the bootstrap resamples board sequences and needs several, so the interval says "
              "nothing here; compare on a split with more boards (dev has 10)")  # fmt: skip


if __name__ == "__main__":
    main()
