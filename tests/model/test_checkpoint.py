"""blocks.model.checkpoint: a file that would run code when opened is refused, by the loader and by every command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO

slow = pytest.mark.slow


class _WritesAFile:
    """A pickle payload: unpickling it calls ``open(path, "w")``, i.e. runs code of the file's choosing."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def _payload_checkpoint(tmp_path: Path) -> tuple[Path, Path]:
    """(a checkpoint whose unpickling writes a file, that file), checked to work when loaded unsafely."""
    import torch

    marker = tmp_path / "written_by_the_payload"
    bad = tmp_path / "bad.ckpt"
    torch.save({"hyper_parameters": {"vocabulary": ["a"]}, "state_dict": {}, "x": _WritesAFile(marker)}, bad)
    torch.load(bad, weights_only=False)  # the payload works: an unsafe load writes the file
    assert marker.exists()
    marker.unlink()
    return bad, marker


def test_a_checkpoint_that_would_run_code_is_refused_without_running_it(tmp_path):
    from blocks.errors import CheckpointError
    from blocks.model.checkpoint import load_goal_predictor, read_checkpoint
    from blocks.report.export import export

    bad, marker = _payload_checkpoint(tmp_path)
    for load in (read_checkpoint, load_goal_predictor, lambda p: export(p, tmp_path / "out.ckpt")):
        with pytest.raises(CheckpointError, match=r"refused: it holds objects other than plain data .*: \S"):
            load(bad)
    assert not marker.exists()


@slow
def test_the_commands_refuse_a_checkpoint_that_would_run_code_in_one_line(corpus_root, tmp_path):
    bad, marker = _payload_checkpoint(tmp_path)
    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(tmp_path)}
    for command in (["eval.py", "agent=policy", f"ckpt_path={bad}", "limit=2"],
                    ["train.py", "experiment=smoke", f"ckpt_path={bad}"]):  # fmt: skip
        out = subprocess.run([sys.executable, *command], cwd=REPO, env=env, capture_output=True, text=True)
        assert out.returncode == 2, out.stderr[-2000:]
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "bad.ckpt: refused" in lines[0]
        assert not marker.exists()
