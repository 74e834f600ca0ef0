"""Would a stop rule help? Roll an agent out once, then score rules that would have stopped it earlier.

Stopping at step t leaves the board as it was at step t, so one greedy rollout that records what the agent saw
at every step scores any rule that only looks at the past exactly, without rolling out again. The rules read
only what an agent has: the ensemble's STOP probability, its goal heads' predicted offset, its own moves and
the pictures (a revisited board). ``oracle`` rows read the simulator: the best any rule could do.

    python scripts/stop_rules.py checkpoints/distill.ckpt --split tune
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import numpy as np
import torch

from blocks import set_torch_threads
from blocks.agents.policy import PolicyAgent
from blocks.corpus.loader import load_split
from blocks.evaluate import run_episodes
from blocks.render.renderer import Renderer
from blocks.world.geometry import NUM_DIRECTIONS, STOP, STOP_DIRECTION
from blocks.world.metrics import distance_error
from blocks.world.transitions import pad_boards


@dataclass
class Trace:
    """One episode: the error of each board (the start included) and what the agent read before each action."""

    errors: list[float] = field(default_factory=list)
    boards: list[bytes] = field(default_factory=list)
    p_stop: list[float] = field(default_factory=list)
    goal_offset: list[float] = field(default_factory=list)  # max(|dx|, |dz|) of the mean predicted offset
    actions: list[int] = field(default_factory=list)


class RecordingAgent(PolicyAgent):
    """The most probable action, as in ``agent=policy``, keeping the STOP probability and goal offset."""

    @torch.no_grad()
    def act(self, observation):
        distribution, goal = self.read(observation, goal=all(p.has_goal_head for p in self.policies))
        actions = distribution.greedy()
        self.p_stop = distribution.direction.probs[:, STOP_DIRECTION].cpu().numpy()
        no_goal = np.full(len(actions), np.inf)
        self.goal_offset = no_goal if goal is None else goal[:, 2:].abs().max(1).values.cpu().numpy()
        return actions.cpu().numpy()


def record(agent: RecordingAgent, examples, renderer: Renderer) -> list[Trace]:
    traces: list[Trace] = []
    batch: list[Trace] = []

    def on_step(env, actions):
        if env.steps.max() == 1 and not batch:  # first step of a new batch
            batch.extend(Trace() for _ in range(env.num_envs))
            positions, present = pad_boards([task.start for task in env.tasks])
            for trace, error in zip(batch, distance_error(positions, env.goals, present), strict=True):
                trace.errors.append(float(error))
        for i, trace in enumerate(batch):
            if len(trace.errors) > env.steps[i]:  # this episode had already ended
                continue
            trace.errors.append(float(env.error[i]))
            trace.boards.append(env.positions[i].round(4).tobytes())
            trace.p_stop.append(float(agent.p_stop[i]))
            trace.goal_offset.append(float(agent.goal_offset[i]))
            trace.actions.append(int(actions[i]))
        if env.all_done:
            traces.extend(batch)
            batch.clear()

    run_episodes(agent, examples, render_frames=renderer.render, progress=True, on_step=on_step)
    return traces


def first(hits: list[bool]) -> int | None:
    return next((t for t, hit in enumerate(hits) if hit), None)


def reverses(trace: Trace) -> list[bool]:
    """A move of the block just moved, back the way it came (left after right, up after down)."""
    a = trace.actions
    return [False] + [
        a[t] != STOP
        and a[t - 1] != STOP
        and a[t] // NUM_DIRECTIONS == a[t - 1] // NUM_DIRECTIONS
        and (a[t] % NUM_DIRECTIONS) // 2 == (a[t - 1] % NUM_DIRECTIONS) // 2
        and a[t] != a[t - 1]
        for t in range(1, len(a))
    ]


def revisits(trace: Trace, times: int) -> list[bool]:
    """The board the agent now sees was reached ``times`` times before (failed moves do not count)."""
    seen: dict[bytes, int] = {}
    hits = [False]
    for t in range(1, len(trace.boards)):
        board = trace.boards[t - 1]
        changed = t < 2 or board != trace.boards[t - 2]
        seen[board] = seen.get(board, 0) + changed
        hits.append(changed and seen[board] > times)
    return hits


def stopped_error(trace: Trace, hits: list[bool]) -> float:
    """The error had the agent emitted STOP at the first step a rule fires (the board before that action)."""
    t = first(hits)
    return trace.errors[-1] if t is None else trace.errors[t]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoints", nargs="+", help="one checkpoint, or several (an ensemble)")
    parser.add_argument("--split", default="tune")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--data", default=None, help="corpus folder (default: BLOCKS_DATA or the config's)")
    args = parser.parse_args()
    set_torch_threads()

    agent = RecordingAgent.from_checkpoint(args.checkpoints)
    examples = load_split(args.split, args.data)[: args.limit]
    traces = record(agent, examples, Renderer(args.data, agent.image_size))

    rules = {"as run (no rule)": lambda tr: [False] * len(tr.actions)}
    for threshold in (0.05, 0.1, 0.2, 0.3):
        rules[f"P(STOP) > {threshold}"] = lambda tr, th=threshold: [p > th for p in tr.p_stop]
    for radius in (0.2, 0.33, 0.5):
        rules[f"predicted offset < {radius} block lengths"] = lambda tr, r=radius: [
            g < r for g in tr.goal_offset
        ]
    rules["a move undone"] = reverses
    for times in (1, 2, 3):
        rules[f"a board revisited {times + 1} times"] = lambda tr, n=times: revisits(tr, n)
    rows = {name: [stopped_error(tr, rule(tr)) for tr in traces] for name, rule in rules.items()}
    rows["oracle: the best of the last 10 boards"] = [min(tr.errors[-10:]) for tr in traces]
    rows["oracle: the closest board (min. distance)"] = [min(tr.errors) for tr in traces]
    print(f"{len(traces)} episodes of {args.split}; mean / median error had the agent stopped when:")
    for name, errors in rows.items():
        print(f"  {name:42s} {np.mean(errors):.3f} / {np.median(errors):.3f}")


if __name__ == "__main__":
    main()
