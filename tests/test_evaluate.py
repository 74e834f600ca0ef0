"""The paper's non-learned rows on the real dev split, and the eval command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from blocks.agents import DemonstrationAgent, RandomAgent, StopAgent
from blocks.corpus.loader import Example, load_split
from blocks.evaluate import evaluate, run_episodes
from blocks.world.task import Task

from .conftest import REPO


@pytest.fixture(scope="module")
def dev(corpus_root):
    return load_split("dev", corpus_root)


def test_stop_reproduces_the_paper(dev):
    figures = evaluate(StopAgent(), dev, progress=False)
    assert figures["n"] == 1719
    assert 5.93 <= round(figures["mean_error"], 2) <= 5.95
    assert 5.69 <= round(figures["median_error"], 2) <= 5.71


def test_demonstrations_reproduce_the_paper(dev):
    figures = evaluate(DemonstrationAgent(), dev, progress=False)
    assert figures["mean_error"] == pytest.approx(0.349, abs=0.005)
    assert figures["median_error"] == pytest.approx(0.302, abs=0.005)
    assert figures["mean_steps"] - 1 == pytest.approx(14.19, abs=0.05)  # moves, STOP excluded


def test_random_reproduces_the_paper(dev):
    figures = evaluate(RandomAgent(seed=0), dev, progress=False)
    assert abs(figures["mean_error"] - 15.3) < 0.5
    assert abs(figures["mean_min_distance"] - 5.92) < 0.3


def test_demonstrations_on_train(corpus_root):
    figures = evaluate(DemonstrationAgent(), load_split("train", corpus_root), progress=False)
    assert figures["mean_error"] == pytest.approx(0.328, abs=0.005)
    assert figures["median_error"] == pytest.approx(0.304, abs=0.005)
    assert figures["mean_steps"] - 1 == pytest.approx(14.51, abs=0.05)


def test_random_is_repeatable_with_a_seed(two_block_task):
    examples = [Example(f"x/{i}", "", (), two_block_task, 0, 0) for i in range(5)]
    first = evaluate(RandomAgent(seed=3), examples, progress=False)
    assert evaluate(RandomAgent(seed=3), examples, progress=False) == first


def test_eval_command_prints_and_writes_json(corpus_root, tmp_path):
    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "eval.py", "agent=stop", "split=dev", "progress=false", "threads=1"],  # threads as train.py
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    record = json.loads(out.stdout.strip().splitlines()[-1])
    keys = {"split", "agent", "n", "mean_error", "median_error", "mean_min_distance", "median_min_distance",
            "mean_steps", "horizon_rate", "goal_rate", "failed_move_rate", "right_block_rate"}  # fmt: skip
    assert set(record) == keys and record["agent"] == "stop" and record["n"] == 1719
    (metrics,) = (tmp_path / "logs").rglob("metrics.json")
    assert json.loads(metrics.read_text()) == record


def test_eval_of_read_and_plan_finds_the_shipped_checkpoints_by_itself(corpus_root, tmp_path):
    """The documented command names no checkpoint: the agent's defaults are the shipped reader and goal network."""
    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "eval.py", "agent=read_and_plan", "split=dev", "limit=3", "progress=false"],
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    record = json.loads(out.stdout.strip().splitlines()[-1])
    assert record["agent"] == "read_and_plan" and record["n"] == 3


def test_eval_command_rejects_unknown_agent():
    out = subprocess.run(
        [sys.executable, "eval.py", "agent=oracle"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode != 0 and "oracle" in out.stderr and "demonstrations" in out.stderr


def test_render_command_writes_pngs(corpus_root, tmp_path):
    import cv2

    out = subprocess.run(
        [sys.executable, "-m", "blocks.render", "split=dev", "index=0", f"out={tmp_path}", f"data_root={corpus_root}"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "instruction:" in out.stdout
    start, goal = cv2.imread(str(tmp_path / "dev_0_start.png")), cv2.imread(str(tmp_path / "dev_0_goal.png"))
    assert start.shape == (480, 480, 3) and not np.array_equal(start, goal)


def test_tasks_of_one_example_are_consistent(dev):
    x = dev[0]
    assert isinstance(x.task, Task) and x.task.num_blocks == 20 and x.decoration == "digit"


def test_random_figures_do_not_depend_on_the_batch_size(two_block_task):
    # Each example draws from a stream seeded by (seed, its place in the split), however the examples are batched.
    examples = [Example(f"x/{i}", "", (), two_block_task, 0, 0) for i in range(20)]
    episodes = [
        run_episodes(RandomAgent(), examples, batch_size=b, seed=5, progress=False) for b in (20, 7, 1)
    ]
    assert episodes[0] == episodes[1] == episodes[2]
    assert run_episodes(RandomAgent(), examples, seed=6, progress=False) != episodes[0]


@pytest.mark.slow
def test_a_second_evaluation_into_a_busy_or_finished_folder_is_refused_and_the_first_keeps_its_configuration(
    corpus_root, tmp_path
):
    import time

    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(tmp_path)}
    folder = tmp_path / "run"
    first = subprocess.Popen(
        [sys.executable, "eval.py", "agent=policy", "ckpt_path=checkpoints/paper/approach.ckpt", "limit=400",
         "progress=false", f"hydra.run.dir={folder}"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (folder / ".evaluating").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    second = subprocess.run(
        [sys.executable, "eval.py", "agent=stop", "seed=7", "progress=false", f"hydra.run.dir={folder}"],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip
    out, _ = first.communicate(timeout=600)
    assert second.returncode == 2 and len(second.stderr.strip().splitlines()) == 1
    assert f"another evaluation (process {first.pid}) is writing its results there" in second.stderr
    assert first.returncode == 0 and json.loads(out.strip().splitlines()[-1])["agent"] == "policy"
    overrides = (folder / ".hydra" / "overrides.yaml").read_text()
    assert "ckpt_path=checkpoints/paper/approach.ckpt" in overrides and "seed=7" not in overrides
    assert not (folder / ".evaluating").exists()
    # One after the other: the first's figures stand, the second is refused and its command logged beside them.
    metrics = (folder / "metrics.json").read_text()
    after = subprocess.run([sys.executable, "eval.py", "agent=stop", "seed=8", "limit=3", "progress=false",
                            f"hydra.run.dir={folder}"], cwd=REPO, env=env, capture_output=True, text=True)  # fmt: skip
    assert after.returncode == 2 and "holds an earlier evaluation's results" in after.stderr
    assert (folder / "metrics.json").read_text() == metrics and (
        folder / ".hydra" / "overrides.yaml"
    ).read_text() == overrides
    logged = [p.read_text() for p in (folder / ".hydra" / "later").glob("*/overrides.yaml")]
    assert len(logged) == 2 and any("seed=7" in o for o in logged) and any("seed=8" in o for o in logged)
    # A claim left by a process that is gone (a killed run) is taken over.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / ".evaluating").write_text("999999999")
    again = subprocess.run([sys.executable, "eval.py", "agent=stop", "limit=3", "progress=false",
                            f"hydra.run.dir={fresh}"], cwd=REPO, env=env, capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 0, again.stderr[-1000:]


def test_a_full_disk_leaves_no_figures_without_their_episodes(corpus_root, tmp_path, monkeypatch):
    """The episodes are written first and the figures last, each whole or not at all: a disk that fills up while
    writing leaves neither a truncated episodes.csv nor a metrics.json that describes episodes not there."""
    import errno

    from blocks import evaluate as module

    out = tmp_path / "eval"
    figures = module.evaluate_split(StopAgent(), "dev", out, root=str(corpus_root), limit=3, progress=False)
    assert json.loads((out / "metrics.json").read_text()) == figures
    assert len((out / "episodes.csv").read_text().splitlines()) == 4
    full = tmp_path / "full"

    def no_space(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(module.os, "fsync", no_space)
    with pytest.raises(OSError, match="No space left"):
        module.evaluate_split(StopAgent(), "dev", full, root=str(corpus_root), limit=3, progress=False)
    assert sorted(p.name for p in full.iterdir()) == []  # nothing half-written, no temporary file left
    with pytest.raises(OSError, match="No space left"):
        module.evaluate_split(StopAgent(), "dev", out, root=str(corpus_root), limit=3, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["episodes.csv", "metrics.json"]  # the first run's, whole
    assert len((out / "episodes.csv").read_text().splitlines()) == 4
