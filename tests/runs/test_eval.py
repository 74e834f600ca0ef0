"""eval.py (blocks.runs.eval): a policy, an ensemble, and what is missing said in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ..conftest import REPO

slow = pytest.mark.slow


@slow
def test_eval_command_with_a_policy(checkpoint, corpus_root, tmp_path):
    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "eval.py", "agent=policy", f"ckpt_path={checkpoint}", "split=dev", "limit=16", "progress=false"],
        cwd=REPO, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    record = json.loads(out.stdout.strip().splitlines()[-1])
    assert record["agent"] == "policy" and record["n"] == 16 and record["mean_steps"] >= 1
    (episodes,) = tmp_path.glob("logs/eval/runs/*/episodes.csv")  # every episode, beside metrics.json
    from blocks.report.compare import read

    rows = read(str(episodes))
    assert len(rows) == 16 and all(uid.startswith("devset.json/") for uid in rows)
    assert sum(error for _, error in rows.values()) / 16 == pytest.approx(record["mean_error"], abs=1e-9)


@slow
def test_eval_command_with_an_ensemble(checkpoint, corpus_root, tmp_path):
    """Two copies of one network act as the network does: the mean of equal log-probabilities is the same."""
    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(tmp_path)}
    records = []
    for path in (str(checkpoint), f"[{checkpoint},{checkpoint}]"):
        out = subprocess.run(
            [sys.executable, "eval.py", "agent=policy", f"ckpt_path={path}", "split=dev", "limit=16", "progress=false"],
            cwd=REPO, env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        records.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert records[0]["mean_error"] == pytest.approx(records[1]["mean_error"], abs=1e-9)


@slow
def test_eval_policy_without_checkpoint_says_what_is_missing(corpus_root, tmp_path):
    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "eval.py", "agent=policy"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "error: a learned agent needs a checkpoint: add ckpt_path=<file>.ckpt (or a list of them)"
    ]
