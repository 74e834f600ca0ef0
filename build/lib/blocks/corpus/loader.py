"""Load the splits of the Blocks corpus into examples (section 4 of docs/environment.md).

Only single-block-move notes (``type == "A0"``) are examples; every instruction string of such a note is one
example with the note's start and finish frames. Anything malformed raises ``CorpusError`` naming the file and
the episode, so that a damaged file is never half-read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from blocks.corpus.download import SPLIT_FILES, CorpusError, ensure_file
from blocks.corpus.text import tokenize
from blocks.world.task import Task

SPLITS = ("train", "fit", "tune", "dev", "test")
TUNE_EPISODES_PER_DECORATION = 2


@dataclass(frozen=True, eq=False)
class Example:
    """One instruction with its start and goal boards."""

    uid: str  # "<split file>/<episode>/<note>/<instruction>", stable across runs
    instruction: str
    tokens: tuple[str, ...]
    task: Task
    episode: int
    start_frame: int

    @property
    def decoration(self) -> str:
        return self.task.decoration


def parse_episodes(raw: object, source: str) -> list[list[Example]]:
    """Examples of every episode of a parsed split file, one list per episode, in file order."""
    if not isinstance(raw, list):
        raise CorpusError(f"{source}: expected a JSON list of episodes, got {type(raw).__name__}")
    episodes = []
    for e, episode in enumerate(raw):
        where = f"{source}, episode {e}"
        try:
            frames = episode["states"]
            decoration = episode["decoration"]
            notes = episode["notes"]
        except (KeyError, TypeError) as error:
            raise CorpusError(f"{where}: missing field {error}") from error
        try:
            boards = [np.asarray(frame, dtype=np.float64) for frame in frames]
        except (ValueError, TypeError) as error:
            raise CorpusError(f"{where}: a frame is not a list of [x, y, z] blocks ({error})") from error
        sizes = {b.shape for b in boards}
        if len(sizes) != 1:
            raise CorpusError(
                f"{where}: frames have different block counts or shapes: {sorted(map(str, sizes))}"
            )
        if boards and (boards[0].ndim != 2 or boards[0].shape[1] != 3):
            raise CorpusError(f"{where}: blocks must be [x, y, z] triples, frame shape is {boards[0].shape}")
        examples = []
        for n, note in enumerate(notes):
            if not isinstance(note, dict) or note.get("type") != "A0":
                continue
            start, finish = note.get("start"), note.get("finish")
            for index, name in ((start, "start"), (finish, "finish")):
                if not isinstance(index, int) or not 0 <= index < len(boards):
                    raise CorpusError(
                        f"{where}, note {n}: {name} frame {index!r} does not exist (episode has {len(boards)} frames)"
                    )
            try:
                task = Task(boards[start][:, [0, 2]], boards[finish][:, [0, 2]], decoration)
            except ValueError as error:
                raise CorpusError(f"{where}, note {n}: {error}") from error
            for i, text in enumerate(note.get("notes", [])):
                if not isinstance(text, str):
                    raise CorpusError(f"{where}, note {n}: instruction {i} is not a string")
                uid = f"{source}/{e}/{n}/{i}"
                examples.append(Example(uid, text, tuple(tokenize(text)), task, e, start))
        episodes.append(examples)
    return episodes


def read_split_file(path: Path) -> list[list[Example]]:
    """Parse one split file, turning JSON errors into a message that names the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except json.JSONDecodeError as error:
        raise CorpusError(f"{path}: not valid JSON ({error}); the file is truncated or corrupt") from error
    return parse_episodes(raw, path.name)


@lru_cache(maxsize=8)
def _episodes(root: str, file_name: str, verify: bool) -> list[list[Example]]:
    path = ensure_file(file_name, root) if verify else Path(root) / file_name
    if not path.exists():
        raise CorpusError(f"{path} does not exist")
    return read_split_file(path)


def _tune_episodes(episodes: list[list[Example]]) -> set[int]:
    """The first two logo and first two digit episodes that carry examples, in file order."""
    chosen: dict[str, list[int]] = {"logo": [], "digit": []}
    for e, examples in enumerate(episodes):
        if examples and len(chosen[examples[0].decoration]) < TUNE_EPISODES_PER_DECORATION:
            chosen[examples[0].decoration].append(e)
    return set(chosen["logo"] + chosen["digit"])


def load_split(
    split: str, root: Path | str | None = None, exclude_tune: bool = False, verify: bool = True
) -> list[Example]:
    """Examples of ``split``: train (11,871), fit (the 11,196 of train the learners fit on), tune (the other 675),
    dev (1,719) or test (3,177). ``exclude_tune=True`` with ``train`` is ``fit``.
    """
    if split not in SPLITS:
        raise CorpusError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    from blocks.corpus.download import default_data_root

    root = str(Path(root).expanduser() if root is not None else default_data_root())
    file_name = SPLIT_FILES["train" if split in ("fit", "tune") else split]
    episodes = _episodes(root, file_name, verify)
    if split in ("train", "fit", "tune"):
        tune = _tune_episodes(episodes)
        if split == "tune":
            return [x for e in sorted(tune) for x in episodes[e]]
        if exclude_tune or split == "fit":
            return [x for e, xs in enumerate(episodes) if e not in tune for x in xs]
    return [x for xs in episodes for x in xs]
