"""How often a checkpoint predicts the demonstration's direction in the demonstration's own contexts.

A diagnostic beside the greedy rollouts of eval.py: the context is the demonstration's (its images and previous
action), so this measures what a model reads from one picture and instruction, not where its own mistakes lead.

    python scripts/teacher_forced.py checkpoints/paper/supervised_release_pictures.ckpt --split tune --limit 200
    python scripts/teacher_forced.py checkpoints/paper/supervised_release_pictures.ckpt --no-previous-action   # the previous action hidden

Prints one JSON line: direction and block accuracy, STOP recall and precision, and for a network with a goal head
(or goal map) the mean distance between the predicted and the true goal and offset (block lengths), over
``--pairs`` (example, step) pairs drawn at random (seed 0) from the demonstrations of the first ``--limit``
examples of the split.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from blocks.corpus.loader import SPLITS, load_split
from blocks.corpus.text import Vocabulary
from blocks.data.demonstrations import DemonstrationSteps
from blocks.model.checkpoint import load_policy
from blocks.render.renderer import Renderer
from blocks.world.geometry import STOP_DIRECTION


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--split", default="tune", choices=SPLITS)
    parser.add_argument("--limit", type=int, default=200, help="first N examples of the split")
    parser.add_argument("--pairs", type=int, default=1024, help="(example, step) pairs scored")
    parser.add_argument("--no-previous-action", action="store_true", help="show NONE as the previous action")
    parser.add_argument("--root", default=None, help="corpus folder (default: $BLOCKS_DATA)")
    args = parser.parse_args()

    policy, words = load_policy(args.checkpoint)
    vocabulary = Vocabulary(words)
    examples = load_split(args.split, args.root, exclude_tune=args.split == "train")[: args.limit]
    steps = DemonstrationSteps(examples, [vocabulary.encode(x.tokens) for x in examples], Renderer(args.root))
    chosen = np.random.default_rng(0).permutation(len(steps))[: args.pairs]
    predicted, gold, block_hits, goal_errors = [], [], [], []
    with torch.no_grad():
        for start in range(0, len(chosen), 128):
            batch = steps.collate([steps[i] for i in chosen[start : start + 128]])
            previous = batch["previous_action"]
            if args.no_previous_action:
                previous = torch.full_like(previous, -1)
            text = policy.encode_instruction(batch["tokens"], batch["lengths"])
            features = policy.joint_features(batch["images"], text, previous)
            distribution = policy.action_distribution(features)
            if policy.has_goal_head:
                goal = policy.predict_goal(features, batch["images"], text) - batch["goal"]
                goal_errors.append(torch.linalg.vector_norm(goal.view(-1, 2, 2), dim=2).numpy())
            predicted.append(distribution.direction_log_probs.argmax(1).numpy())
            gold.append(batch["direction"].numpy())
            block_hits.append((distribution.block_log_probs.argmax(1) == batch["block"]).numpy())
    p, g = np.concatenate(predicted), np.concatenate(gold)
    stop, said_stop = g == STOP_DIRECTION, p == STOP_DIRECTION
    goal_error = np.concatenate(goal_errors).mean(0).round(4).tolist() if goal_errors else [None, None]
    print(
        json.dumps(
            {
                "checkpoint": args.checkpoint,
                "split": args.split,
                "previous_action": not args.no_previous_action,
                "pairs": len(p),
                "direction_accuracy": round(float((p == g).mean()), 4),
                "block_accuracy": round(float(np.concatenate(block_hits).mean()), 4),
                "stop_recall": round(float(said_stop[stop].mean()), 4) if stop.any() else None,
                "stop_precision": round(float(stop[said_stop].mean()), 4) if said_stop.any() else None,
                "goal_error": goal_error[0],
                "offset_error": goal_error[1],
            }
        )
    )


if __name__ == "__main__":
    main()
