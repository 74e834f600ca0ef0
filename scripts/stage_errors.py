"""Where the read-and-plan agent loses: the error of each stage on a split, measured apart (ours).

    python scripts/stage_errors.py --reader <perception.ckpt> --goal <goal_predictor.ckpt> [<more> ...] --split dev

Prints one JSON line:
- perception: the share of present blocks the board reader places within half a block length of where they
  stand (the split's boards; logo and digit boards apart), how far off the blocks it found are (block lengths:
  mean, median, 90th percentile), and how often it tells logos from digits;
- block choice and goal, teacher-forced: the share of moved blocks the goal predictor names and the distance
  (block lengths) from its goal to the true one, reading the true positions, then reading the perceived ones;
- with ``--by-kind`` (a goal checkpoint): where the teacher-forced mean comes from, with the true positions: each
  range of error's share of the examples and of the mean, and the mean error of instructions by the words they
  use (alignments, the board's edges, counted steps, "between") and by their form: compositional (two motions:
  "then", or two counted steps) and set relative to two or more blocks other than the moved one;
- with ``--agent`` (both checkpoints): the read-and-plan agent's own error on the split and what execution adds
  to the teacher-forced goal error with the perceived positions (``execution_loss``), split by how the episode
  went: stopped at once (the predictor unsure of the block), moved another block than the instruction's, had a
  failed move, or none of these. Each part gives its share of episodes and its contribution to the means. The
  world's moves put a block only on a grid of STEP (0.66 block lengths) around where it stood, so ``move_grid``
  gives the predicted goal moved to that grid's nearest point (what exact execution reaches), the best of the
  four grid points around it (what any choice of end point could at most reach), the exact goal's own distance
  to the grid, and what execution adds beyond the grid.
Either checkpoint may be left out; its stages are then skipped.
"""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
import torch

from blocks.agents.reader import ReadAndPlanAgent
from blocks.corpus.loader import SPLITS, load_split
from blocks.corpus.text import Vocabulary
from blocks.data.boards import board_batch, corpus_boards
from blocks.data.goals import goal_batch
from blocks.data.relabel import LabelWords
from blocks.evaluate import run_episodes
from blocks.learn.goal import goal_errors
from blocks.learn.perception import location_accuracy
from blocks.model.checkpoint import load_goal_predictor, load_reader
from blocks.render.factory import make_renderer
from blocks.render.release import ReleaseRenderer
from blocks.render.renderer import Renderer
from blocks.world.geometry import BLOCK_SIDE, STEP
from blocks.world.planner import moved_block
from blocks.world.transitions import pad_boards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", help="a model=perception checkpoint")
    parser.add_argument(
        "--goal", nargs="+", help="a model=goal_predictor checkpoint, or several read as one (one vocabulary)"
    )
    parser.add_argument("--split", default="dev", choices=SPLITS)
    parser.add_argument("--root", default=None, help="corpus folder (default: $BLOCKS_DATA)")
    parser.add_argument("--limit", type=int, default=None, help="first N examples of the split")
    parser.add_argument(
        "--agent", action="store_true", help="also run the read-and-plan agent (both checkpoints)"
    )
    parser.add_argument(
        "--by-kind", action="store_true", help="split the goal error by its size and the instruction's words"
    )
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    examples = load_split(args.split, args.root)[: args.limit]
    record: dict[str, object] = {"split": args.split, "examples": len(examples)}
    reader = load_reader(args.reader) if args.reader else None
    renderer = make_renderer(reader.render if reader else "flat", args.root)  # the picture the reader learnt
    if reader is not None:
        record["perception"] = location_accuracy(reader, renderer, corpus_boards(args.split, args.root))
        logo_hits = []
        for start in range(0, len(examples), 128):
            chunk = examples[start : start + 128]
            positions, present = pad_boards([x.task.start for x in chunk])
            logo = np.array([x.decoration == "logo" for x in chunk])
            batch = board_batch(renderer, positions, present, logo)
            logo_hits.append((reader.read(batch["images"])[2] == batch["logo"]).numpy())
        record["perception"]["decoration_accuracy"] = float(np.concatenate(logo_hits).mean())
    if args.goal:
        loaded = [load_goal_predictor(path) for path in args.goal]
        if any(words != loaded[0][1] for _, words in loaded):
            parser.error("the goal checkpoints read different vocabularies")
        predictor, vocabulary = [p for p, _ in loaded], Vocabulary(loaded[0][1])
        readings = {"true_positions": [], "perceived_positions": []} if reader else {"true_positions": []}
        for start in range(0, len(examples), 128):
            chunk = examples[start : start + 128]
            batch = goal_batch(chunk, [vocabulary.encode(x.tokens, mend_unknown=True) for x in chunk])
            readings["true_positions"].append(goal_errors(predictor, batch))
            if reader is not None:
                images = board_batch(renderer, *pad_boards([x.task.start for x in chunk]),
                                     np.array([x.decoration == "logo" for x in chunk]))["images"]  # fmt: skip
                positions, present, logo = reader.read(images)
                seen = {**batch, "positions": positions / BLOCK_SIDE, "present": present, "logo": logo}
                readings["perceived_positions"].append(goal_errors(predictor, seen))
        joined = {name: [torch.cat(p) for p in zip(*parts, strict=True)] for name, parts in readings.items()}
        for name, (found, error, forced, _) in joined.items():
            record[name] = {
                "block_accuracy": round(float(found.float().mean()), 4),
                "goal_error_mean": round(float(error.mean()), 3),
                "goal_error_median": round(float(error.median()), 3),
                "true_block_goal_error_mean": round(float(forced.mean()), 3),
            }
        if args.by_kind:
            found, error, _, _ = joined["true_positions"]
            texts = [" ".join(x.tokens) for x in examples]
            words = LabelWords(vocabulary.to_list())
            references = [
                len(words.mentioned(vocabulary.encode(x.tokens, mend_unknown=True), x.decoration == "logo")
                    - {moved_block(x.task)})
                for x in examples
            ]  # fmt: skip
            record["by_kind"] = error_by_kind(error.numpy(), found.numpy(), texts, np.array(references))
        if args.agent and reader is not None:
            found, error, _, goal = (t.numpy() for t in joined["perceived_positions"])
            agent = ReadAndPlanAgent.from_checkpoints(args.reader, args.goal)
            grid = move_grid(goal, found, error, examples)
            record["agent"] = execution_loss(agent, examples, renderer, error, grid)
    print(json.dumps(record))


KINDS = {
    "alignment": r"\b(line|lined|lines|row|column|even|level|aligned|align|same)\b",
    "board_edges": r"\b(edge|corner|center|centre|middle|very|square|board|page|grid|screen|table)\b",
    # "2 block spaces", "one block length"; not "the 6 block", a digit board's label
    "counted_steps": r"\b(\d+|one|two|three|four|five|six|half)\s+(block\s+)?"
    r"(space|spaces|square|squares|length|lengths|unit|units|step|steps)\b",
    "between": r"\bbetween\b",
}
SIZES = ((0.0, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 5.0), (5.0, float("inf")))


def error_by_kind(
    error: np.ndarray, found: np.ndarray, texts: list[str], references: np.ndarray | None = None
) -> dict[str, object]:
    """Each error range's share of the examples and of the mean (a wrong block apart), and each kind of
    instruction's share, mean error against the rest's, and part of the mean. Kinds overlap; the word kinds'
    regular expressions are in ``KINDS``; ``references``: how many blocks besides the moved one the words name."""
    n = len(error)
    parts = {"wrong_block": ~found} | {
        f"{lo:g}-{hi:g}": found & (error >= lo) & (error < hi) for lo, hi in SIZES
    }
    record: dict[str, object] = {
        "by_size": {
            name: {"share": round(float(rows.mean()), 4), "of_mean": round(float(error[rows].sum() / n), 3)}
            for name, rows in parts.items()
        }
    }
    kinds = {
        kind: np.array([re.search(pattern, t) is not None for t in texts]) for kind, pattern in KINDS.items()
    }
    steps = np.array([len(re.findall(KINDS["counted_steps"], t)) for t in texts])
    kinds["compositional"] = np.array([re.search(r"\bthen\b", t) is not None for t in texts]) | (steps >= 2)
    if references is not None:
        kinds["one_reference"] = references == 1
        kinds["two_references"] = references >= 2
        kinds["no_reference"] = references == 0
    for kind, rows in kinds.items():
        record[kind] = {
            "share": round(float(rows.mean()), 4),
            "mean": round(float(error[rows].mean()), 3) if rows.any() else None,
            "rest_mean": round(float(error[~rows].mean()), 3) if (~rows).any() else None,
            "of_mean": round(float(error[rows].sum() / n), 3),
        }
    return record


def move_grid(
    goal: np.ndarray, found: np.ndarray, goal_error: np.ndarray, examples: list
) -> dict[str, np.ndarray]:
    """Per example, in block lengths: the distance to the true goal from the grid point nearest the predicted
    ``goal`` (the grid: the block's start plus whole moves on either axis), from the nearest to it of the four
    grid points around the predicted goal, and from the grid point nearest the true goal itself. Where the
    predicted block is not the instruction's (``found`` false) the first two keep the off-grid ``goal_error``."""
    step = STEP / BLOCK_SIDE
    blocks = [moved_block(x.task) for x in examples]
    start = np.stack([x.task.start[b] for x, b in zip(examples, blocks, strict=True)]) / BLOCK_SIDE
    true = np.stack([x.task.goal[b] for x, b in zip(examples, blocks, strict=True)]) / BLOCK_SIDE
    moves = (goal - start) / step
    nearest = np.linalg.norm(start + np.round(moves) * step - true, axis=-1)
    corners = np.floor(moves) + np.array([[0, 0], [0, 1], [1, 0], [1, 1]])[:, None]
    best = np.linalg.norm(start + corners * step - true, axis=-1).min(0)
    floor = np.linalg.norm(start + np.round((true - start) / step) * step - true, axis=-1)
    return {
        "nearest_point": np.where(found, nearest, goal_error),
        "best_of_four": np.where(found, best, goal_error),
        "exact_goal": floor,
    }


def execution_loss(
    agent: ReadAndPlanAgent,
    examples: list,
    renderer: Renderer | ReleaseRenderer,
    goal_error: np.ndarray,
    grid: dict[str, np.ndarray],
) -> dict[str, object]:
    """The agent's error against the teacher-forced goal error (perceived positions) and against that goal moved
    onto the world's move grid (``move_grid``), example by example."""
    results = run_episodes(agent, examples, render_frames=renderer.render, progress=False)
    error = np.array([r.error for r in results])
    stopped = np.array([r.steps <= 1 for r in results])
    failed = np.array([r.failed_moves > 0 for r in results]) & ~stopped
    wrong = np.array([not r.right_block for r in results]) & ~stopped & ~failed
    parts = {"stopped_at_once": stopped, "wrong_block": wrong, "failed_move": failed}
    parts["rest"] = ~(stopped | wrong | failed)
    n = len(results)
    return {
        "mean_error": round(float(error.mean()), 3),
        "median_error": round(float(np.median(error)), 3),
        "execution_loss": round(float(error.mean() - goal_error.mean()), 3),
        "move_grid": {name: round(float(value.mean()), 3) for name, value in grid.items()}
        | {
            "execution_loss_beyond_grid": round(float(error.mean() - grid["nearest_point"].mean()), 3),
            "as_planned_ended_on_nearest_point": round(
                float((np.abs(error - grid["nearest_point"]) < 1e-3)[parts["rest"]].mean()), 4
            ),
        },
        "parts": {
            name: {
                "share": round(float(rows.mean()), 4),
                "agent": round(float(error[rows].sum() / n), 3),
                "teacher_forced": round(float(goal_error[rows].sum() / n), 3),
                "on_grid": round(float(grid["nearest_point"][rows].sum() / n), 3),
            }
            for name, rows in parts.items()
        },
    }


if __name__ == "__main__":
    main()
