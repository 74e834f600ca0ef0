"""How often the block nearest to the moved block's goal carries the next or previous label.

The corpus's boards were built in label order (digits in sequence, logos in the order of their list), so the
labels an instruction names say something about where the goal lies; a network can learn that prior
(docs/experiments/relabelled-copies.md). Chance is (number of neighbouring labels) / (n - 1).

    python scripts/label_prior.py --split dev
"""

from __future__ import annotations

import argparse

import numpy as np

from blocks.corpus.loader import SPLITS, load_split
from blocks.world.planner import demonstration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="train", choices=SPLITS)
    parser.add_argument("--root", default=None, help="corpus folder (default: $BLOCKS_DATA)")
    args = parser.parse_args()
    examples = load_split(args.split, args.root, exclude_tune=args.split == "train")
    for decoration in ("logo", "digit"):
        hits, chance = [], []
        for x in (x for x in examples if x.decoration == decoration):
            task, block = x.task, demonstration(x.task).block
            distance = np.linalg.norm(task.goal - task.goal[block], axis=1)
            distance[block] = np.inf
            hits.append(abs(int(np.argmin(distance)) - block) == 1)
            chance.append(((block > 0) + (block < task.num_blocks - 1)) / (task.num_blocks - 1))
        print(f"{args.split} {decoration}: {len(hits)} examples, neighbouring label {np.mean(hits):.3f}, "
              f"chance {np.mean(chance):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
