"""Shared fixtures: hand-made boards everywhere, the real corpus where it is present."""

from __future__ import annotations

import os
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
