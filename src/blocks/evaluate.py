"""Run an agent over every example of a split and measure it (section 7 of docs/environment.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from blocks.agents.baselines import Agent, episode_seeds
from blocks.corpus.loader import Example
from blocks.world.geometry import HORIZON
from blocks.world.metrics import EpisodeResult, summarize
from blocks.world.rewards import RewardConfig
from blocks.world.vector_env import Frames, VectorBlocksEnv

_NO_REWARD = RewardConfig(problem=False, f1=False, f2=False)  # evaluation needs no reward, nor plans for F2


def run_episodes(
    agent: Agent,
    examples: Sequence[Example],
    batch_size: int = 64,
    seed: int = 0,
    render_frames: Frames | None = None,
    horizon: int = HORIZON,
    progress: bool = True,
    on_step: Callable[[VectorBlocksEnv, np.ndarray], None] | None = None,
) -> list[EpisodeResult]:
    """One episode per example, ``batch_size`` boards at a time; the evaluation is reward-free.

    Example ``i`` of the split gets its own seed from ``(seed, i)``, so that a figure depends on the seed alone,
    not on ``batch_size``.
    """
    if agent.needs_images and render_frames is None:
        raise ValueError(f"{type(agent).__name__} needs images: pass render_frames")
    env = VectorBlocksEnv(
        reward=_NO_REWARD, horizon=horizon, render_frames=render_frames if agent.needs_images else None
    )
    results: list[EpisodeResult] = []
    with tqdm(total=len(examples), desc=f"evaluate {type(agent).__name__}", disable=not progress) as bar:
        for start in range(0, len(examples), batch_size):
            batch = examples[start : start + batch_size]
            observation, _ = env.reset([x.task for x in batch])
            seeds = episode_seeds(seed, len(batch), first=start)
            agent.begin([x.task for x in batch], seed=seeds, instructions=[x.instruction for x in batch])
            while not env.all_done:
                actions = agent.act(observation)
                observation, *_ = env.step(actions)
                if on_step is not None:
                    on_step(env, actions)
            results.extend(env.results())
            bar.update(len(batch))
    return results


def evaluate(agent: Agent, examples: Sequence[Example], **kwargs) -> dict[str, float | int]:
    """The summary figures (mean/median error and min distance, steps, horizon and goal rates)."""
    return summarize(run_episodes(agent, examples, **kwargs))


def write_episodes(
    path: str | os.PathLike, examples: Sequence[Example], results: Sequence[EpisodeResult]
) -> None:
    """One CSV row per episode (uid, corpus episode, then every :class:`EpisodeResult` field), so that two agents
    can be compared example by example (``scripts/compare_episodes.py``)."""
    import csv
    import io
    from dataclasses import asdict

    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(["uid", "episode", *asdict(results[0])])
    for example, result in zip(examples, results, strict=True):
        writer.writerow([example.uid, example.episode, *asdict(result).values()])
    write_atomically(path, table.getvalue())


def write_atomically(path: str | os.PathLike, text: str) -> None:
    """``text`` to ``path`` whole or not at all: written beside it, synced, then renamed over it. A full disk or a
    kill leaves the old file (or none), never a truncated one; the results' writers call it figures last, so a
    metrics file always has its episodes beside it."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.partial")
    try:
        with open(temporary, "w", newline="", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def evaluate_split(
    agent: Agent,
    split: str,
    output: str | os.PathLike,
    root: str | None = None,
    limit: int | None = None,
    record: dict | None = None,
    image_size: int = 120,
    **kwargs,
) -> dict:
    """``agent`` over the first ``limit`` examples of ``split``: the figures (after ``split`` and ``record``'s
    fields) go to ``output/metrics.json``, every episode to ``output/episodes.csv``; returns the figures.
    ``kwargs`` go to :func:`run_episodes`."""
    import json

    from blocks.corpus.loader import load_split

    examples = load_split(split, root)[:limit]
    render_frames = None
    if agent.needs_images:
        from blocks.render.factory import make_renderer

        picture = getattr(agent, "render", "flat")  # what the agent learnt from, recorded in its checkpoint
        render_frames = make_renderer(picture, root, getattr(agent, "image_size", image_size)).render
    results = run_episodes(agent, examples, render_frames=render_frames, **kwargs)
    figures = {"split": split, **(record or {}), **summarize(results)}
    if agent.needs_images:
        figures["picture"] = picture
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    write_episodes(output / "episodes.csv", examples, results)
    write_atomically(
        output / "metrics.json", json.dumps(figures, indent=2) + "\n"
    )  # last: its episodes are there
    return figures
