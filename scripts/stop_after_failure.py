"""How often an episode ends with STOP right after a failed move inside the goal: the release's simulator pays
that STOP -1 (it reads the failed move's message), this package +1 (docs/experiments/release-fidelity.md
section 4). Also counts the sampled moves of blocks absent from the board: a successful no-op here; in the release
an inactive cube moved from wherever an earlier episode left it, which fails only when that hidden place is near
the board's edge or another block. Samples the policy's episodes as the bandit does, on the first N training
examples (``--greedy`` acts as evaluation does; ``--split dev`` reads another split).

    python scripts/stop_after_failure.py checkpoints/paper/approach_onpolicy_seed42.ckpt 1000
    python scripts/stop_after_failure.py <checkpoint> 200 --greedy --split dev
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from blocks.agents.policy import PolicyAgent
from blocks.corpus.loader import load_split
from blocks.evaluate import run_episodes
from blocks.render.renderer import Renderer
from blocks.world.geometry import NUM_DIRECTIONS, STOP

torch.set_grad_enabled(False)
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("checkpoint")
parser.add_argument("limit", type=int, help="the first N examples of the split")
parser.add_argument(
    "--greedy", action="store_true", help="the greedy policy, as evaluated (default: sampled)"
)
parser.add_argument("--split", default="fit", help="fit (training, default), tune or dev")
args = parser.parse_args()
agent = PolicyAgent.from_checkpoint(args.checkpoint, greedy=args.greedy)
examples = load_split(args.split)[: args.limit]
state: dict[str, np.ndarray] = {}
counts = {
    "stops": 0,
    "stop_after_failure": 0,
    "stop_after_failure_in_goal": 0,
    "moves": 0,
    "absent_block_moves": 0,
}


def on_step(env, actions: np.ndarray) -> None:
    """Called after each step of a batch of boards: count the STOPs taken at it."""
    if env.steps.max() == 1:  # a new batch
        state.update(failed=np.zeros(env.num_envs, np.int64), failed_last=np.zeros(env.num_envs, bool),
                     stopped=np.zeros(env.num_envs, bool))  # fmt: skip
    fresh = (actions == STOP) & env.stopped & ~state["stopped"]
    moved = (actions != STOP) & ~state["stopped"]
    counts["moves"] += int(moved.sum())
    rows = np.flatnonzero(moved)
    counts["absent_block_moves"] += int((~env.present[rows, actions[rows] // NUM_DIRECTIONS]).sum())
    counts["stops"] += int(fresh.sum())
    counts["stop_after_failure"] += int((fresh & state["failed_last"]).sum())
    counts["stop_after_failure_in_goal"] += int((fresh & state["failed_last"] & (env.error < 1.0)).sum())
    state.update(failed_last=env.failed_moves > state["failed"], failed=env.failed_moves.copy(),
                 stopped=env.stopped.copy())  # fmt: skip


results = run_episodes(agent, examples, render_frames=Renderer().render, progress=False, on_step=on_step)
counts["episodes"] = len(results)
counts["reached_goal"] = int(sum(r.reached_goal for r in results))
print(json.dumps(counts))
