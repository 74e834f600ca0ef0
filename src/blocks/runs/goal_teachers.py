"""What several trained goal predictors read in every training example, saved for ``model.distill`` (ours).

    python -m blocks.runs.goal_teachers --out logs/goal-teachers/seven.pt \
        --goal checkpoints/goal_predictor.ckpt checkpoints/goal_predictor_seed5.ckpt ...

The members read each example of the full training split (tuning boards excluded), each with its own vocabulary,
and are combined as the read-and-plan agent combines them (:func:`combine_readings`): the file holds the combined
block log-probabilities ``moved`` (N, 20), the combined goal of the true block ``goal`` (N, 2, block lengths), and
the split's digest, so that ``data.teachers`` refuses it for another corpus. The last line printed is a JSON object
with the members' error on the training split (how much they learnt by heart: soft targets that equal the labels
teach nothing more than the labels).

With ``--holdout`` the i-th of k members was trained with ``data.holdout=i/k``, and each example is read by the one
member that never saw its episode: readings of unseen boards, as the agent meets them.

    python -m blocks.runs.goal_teachers --holdout --out logs/goal-teachers/xfold2.pt --goal <fold 0> <fold 1>
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
from tqdm import tqdm

from blocks.corpus.loader import load_split
from blocks.corpus.text import Vocabulary
from blocks.data.goals import episode_folds, examples_digest, goal_batch
from blocks.model.checkpoint import load_goal_predictor
from blocks.model.goal_predictor import combine_readings


@torch.no_grad()
def teacher_readings(
    goals: list[str],
    root: str | Path | None = None,
    batch_size: int = 256,
    limit: int | None = None,
    holdout: bool = False,
) -> tuple[dict, dict]:
    """The record ``data.teachers`` loads, and the members' error and block accuracy on the training split (its
    first ``limit`` examples, for a quick look: such a record fits no run). ``holdout``: member i reads only fold i
    of ``len(goals)`` (:func:`episode_folds`) instead of all members reading every example together."""
    examples = load_split("train", root, exclude_tune=True)
    folds = torch.from_numpy(episode_folds(examples, len(goals)))[:limit] if holdout else None
    examples = examples[:limit]
    members = [load_goal_predictor(path) for path in goals]
    vocabularies = [Vocabulary(words) for _, words in members]
    moved_rows, goal_rows, errors, found = [], [], [], []
    for start in tqdm(range(0, len(examples), batch_size), desc="teachers", unit="batch"):
        chunk = examples[start : start + batch_size]
        readings = []
        for (predictor, _), vocabulary in zip(members, vocabularies, strict=True):
            batch = goal_batch(chunk, [vocabulary.encode(x.tokens, mend_unknown=True) for x in chunk])
            readings.append(
                predictor(
                    batch["tokens"], batch["lengths"], batch["positions"], batch["present"], batch["logo"]
                )
            )
        rows = torch.arange(len(chunk))
        if folds is None:
            moved, goal = combine_readings(readings)
        else:  # each row from the member that did not train on it
            own = folds[start : start + batch_size]
            moved = torch.stack([m for m, _, _ in readings])[own, rows].log_softmax(-1)
            goal = torch.stack([g for _, g, _ in readings])[own, rows]
        true_goal = goal[rows, batch["block"]]
        chosen = moved.argmax(-1)
        moved_rows.append(moved)
        goal_rows.append(true_goal)
        errors.append(torch.linalg.vector_norm(goal[rows, chosen] - batch["goal"], dim=-1))
        found.append(chosen == batch["block"])
    record = {
        "moved": torch.cat(moved_rows),
        "goal": torch.cat(goal_rows),
        "digest": examples_digest(examples),
        "members": [str(path) for path in goals],
        "holdout": holdout,
        "count": len(examples),
    }
    error, found_all = torch.cat(errors), torch.cat(found)
    summary = {
        "members": len(goals),
        "holdout": holdout,
        "examples": len(examples),
        "train_mean_error": round(float(error.mean()), 4),
        "train_median_error": round(float(error.median()), 4),
        "train_block_accuracy": round(float(found_all.float().mean()), 4),
    }
    return record, summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--goal", nargs="+", required=True, help="goal-predictor checkpoints (the members)")
    parser.add_argument("--out", required=True, help="where to save the teachers' readings (.pt)")
    parser.add_argument(
        "--data", default=os.environ.get("BLOCKS_DATA"), help="the corpus folder (BLOCKS_DATA)"
    )
    parser.add_argument(
        "--holdout",
        action="store_true",
        help="member i was trained with data.holdout=i/<members>: read its fold only",
    )
    parser.add_argument("--limit", type=int, default=None, help="read only the first examples (a quick look)")
    args = parser.parse_args(argv)
    record, summary = teacher_readings(args.goal, args.data, limit=args.limit, holdout=args.holdout)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(record, out)
    print(json.dumps(summary | {"out": str(out)}))


if __name__ == "__main__":
    main()
