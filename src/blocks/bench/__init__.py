"""Speed figures, printed (never asserted): ``python -m blocks.bench <env|train|demo>``.

``env``: the world alone (``env.py``); ``train``: training frames/s beside the network's own floor (``train.py``);
``demo``: the demo page's seconds per episode (``demo.py``). The last line of each benchmark is one JSON object, so scripts can read the figures.
"""

from __future__ import annotations

import argparse
import json
import sys

from blocks.bench.demo import bench_demo
from blocks.bench.env import bench_env
from blocks.bench.train import bench_train, network_floor

BENCHMARKS = {"env": bench_env, "train": bench_train, "demo": bench_demo}
__all__ = ["BENCHMARKS", "bench_demo", "bench_env", "bench_train", "main", "network_floor"]


def main(argv: list[str] | None = None) -> dict[str, float | str]:
    parser = argparse.ArgumentParser(prog="python -m blocks.bench", description=__doc__)
    parser.add_argument("which", choices=sorted(BENCHMARKS))
    parser.add_argument("--seconds", type=float, default=2.0, help="time spent on each figure")
    parser.add_argument(
        "--episodes-per-update",
        type=int,
        default=None,
        help="train: bandit episodes per Adam step (default: the whole rollout; the bandit refuses fewer)",
    )
    parser.add_argument("--skip-supervised", action="store_true", help="train: measure the bandit only")
    parser.add_argument("--batch", type=int, default=32, help="train: episodes per rollout, steps per batch")
    parser.add_argument("--simulator", choices=("numpy", "torch"), default="numpy",
                        help="train: where the bandit's rollouts run (torch: on the model's device)")  # fmt: skip
    parser.add_argument(
        "--accelerator", default="auto", help="train: Lightning's accelerator (cpu, gpu, auto)"
    )
    parser.add_argument("--spo", action="store_true", help="train: also SPO, --batch examples a batch")
    parser.add_argument(
        "--precision", default="32-true", help="train: Lightning's precision (32-true, bf16-mixed)"
    )
    parser.add_argument(
        "--compile", action="store_true", help="train: network.compile=true (torch.compile the CNN)"
    )
    parser.add_argument("--chunks-per-update", type=int, default=None,
                        help="train: backward passes per update (1: the whole update at once, for GPUs)")  # fmt: skip
    args = parser.parse_args(argv)
    options = {}
    if args.which == "train":
        options = {
            "episodes_per_update": args.episodes_per_update, "skip_supervised": args.skip_supervised,
            "batch": args.batch, "simulator": args.simulator, "accelerator": args.accelerator,
            "chunks_per_update": args.chunks_per_update, "spo": args.spo, "precision": args.precision,
            "compile": args.compile,
        }  # fmt: skip
    from blocks.errors import UsageError

    try:
        figures = BENCHMARKS[args.which](seconds=args.seconds, **options)
    except UsageError as error:  # no corpus, a bad value: one line, as the other commands
        print(f"error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    import torch

    setting = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    print(json.dumps(setting | {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}))
    return figures
