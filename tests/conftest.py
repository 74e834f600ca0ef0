"""Shared fixtures: hand-made boards everywhere, the real corpus where it is present."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blocks.world.task import Task

REPO = Path(__file__).resolve().parents[1]
CORPUS_CANDIDATES = [os.environ.get("BLOCKS_DATA"), REPO.parent / "shared" / "data" / "blocks"]


def _corpus_root() -> Path | None:
    for candidate in CORPUS_CANDIDATES:
        if (
            candidate
            and (Path(candidate) / "devset.json").exists()
            and (Path(candidate) / "trainset.json").exists()
        ):
            return Path(candidate)
    return None


CORPUS_ROOT = _corpus_root()


@pytest.fixture(scope="session")
def corpus_root() -> Path:
    """Folder of the real corpus; tests using it are skipped when it is absent."""
    if CORPUS_ROOT is None:
        pytest.skip("real corpus not found (set BLOCKS_DATA)")
    return CORPUS_ROOT


@pytest.fixture(scope="session")
def renderer():
    """A renderer with real logos where the corpus is present, plain faces elsewhere."""
    from blocks.render.renderer import Renderer

    if CORPUS_ROOT is not None:
        return Renderer(CORPUS_ROOT)
    return Renderer(logos=False)


@pytest.fixture
def two_block_task() -> Task:
    """Block 0 must go 0.5 to the right; block 1 stands far away and never interferes."""
    return Task(np.array([[0.0, 0.0], [-0.8, 0.8]]), np.array([[0.5, 0.0], [-0.8, 0.8]]), "digit")


def pytest_collection_modifyitems(config, items):
    """Corpus tests are marked, so that they can be selected or left out by marker."""
    for item in items:
        if "corpus_root" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.corpus)


@pytest.fixture(scope="session")
def checkpoint(corpus_root, tmp_path_factory) -> Path:
    """A supervised policy trained for one epoch on 16 examples."""
    root = tmp_path_factory.mktemp("train")
    run = root / "run"
    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(root)}
    subprocess.run(
        [sys.executable, "train.py", "model=supervised", "experiment=smoke", "trainer.max_epochs=1", f"hydra.run.dir={run}"],
        cwd=REPO, env=env, check=True, capture_output=True,
    )  # fmt: skip
    return run / "checkpoints" / "last.ckpt"


def load_script(name: str):
    """A module of scripts/, imported from its file (scripts/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module
