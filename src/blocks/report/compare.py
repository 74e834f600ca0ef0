"""Paired comparison of two evaluations of one split: the mean difference in error, with a bootstrap interval.

The bootstrap resamples whole corpus episodes (board sequences), not single instructions: instructions on one
board are not independent, and dev has only 10 board sequences. Both files are the ``episodes.csv`` that ``eval.py`` writes beside ``metrics.json``; the sweep summaries
(:mod:`blocks.report.sweep`) use the same test.

    python -m blocks.report.compare logs/eval/runs/<a>/episodes.csv logs/eval/runs/<b>/episodes.csv
"""

from __future__ import annotations

import argparse
import csv

import numpy as np

from blocks.errors import UsageError


def read(path: str) -> dict[str, tuple[int, float]]:
    """An ``episodes.csv``'s error and board sequence per example (uid); a missing or other file is a UsageError."""
    made_by = "eval.py writes one beside metrics.json"
    try:
        with open(path, encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file ({made_by})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not an episodes.csv ({made_by})") from None
    if not rows or not {"uid", "episode", "error"} <= rows[0].keys():
        raise UsageError(f"{path}: not an episodes.csv, no uid, episode and error columns ({made_by})")
    return {row["uid"]: (int(row["episode"]), float(row["error"])) for row in rows}


def paired_difference(
    a: dict[str, tuple[int, float]], b: dict[str, tuple[int, float]], samples: int = 10_000, seed: int = 0
) -> dict[str, float]:
    """Mean error of b minus a over their shared examples, and a 95 % interval resampling corpus episodes."""
    shared = sorted(a.keys() & b.keys())
    if not shared or len(shared) != len(a) or len(shared) != len(b):
        raise UsageError(
            f"the files must score the same examples ({len(a)} and {len(b)}, {len(shared)} shared)"
        )
    episodes = np.array([a[u][0] for u in shared])
    difference = np.array([b[u][1] - a[u][1] for u in shared])
    groups = np.unique(episodes)
    sums = np.array([difference[episodes == g].sum() for g in groups])
    counts = np.array([(episodes == g).sum() for g in groups])
    draws = np.random.default_rng(seed).integers(0, len(groups), size=(samples, len(groups)))
    means = sums[draws].sum(1) / counts[draws].sum(1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {
        "n": len(shared),
        "episodes": len(groups),
        "mean_a": float(np.mean([a[u][1] for u in shared])),
        "mean_b": float(np.mean([b[u][1] for u in shared])),
        "difference": float(difference.mean()),
        "low": float(low),
        "high": float(high),
        "b_better": float((difference < 0).mean()),
    }


def main(argv: list[str] | None = None) -> None:
    from blocks.cli import user_errors

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    args = parser.parse_args(argv)
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
