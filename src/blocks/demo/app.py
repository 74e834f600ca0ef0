"""What the demo page asks of the package, without HTTP: the boards, the agents, one episode as pictures.

Everything the page sends is checked here and refused with a :class:`DemoError` whose message the page shows as
it is. Agents are chosen by name from a fixed list, so nothing the page sends becomes a path.
"""

from __future__ import annotations

import base64
import io
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from blocks.agents.baselines import Agent, RandomAgent, StopAgent, episode_seeds
from blocks.corpus.loader import Example, load_split
from blocks.corpus.text import Vocabulary, tokenize
from blocks.episode import Episode, run_episode
from blocks.errors import UsageError
from blocks.render.factory import make_renderer
from blocks.render.marks import draw_frames
from blocks.world.geometry import HORIZON, LOGO_NAMES, STOP

MAX_CHARACTERS = 1000  # the corpus's longest instruction has 383
VIEW_SIZE = 480  # the person's view, drawn at this size (labels and logos legible), not the agent's enlarged
VIEWS = (
    "flat",
    "release",
)  # the pictures a person may choose to look at: the flat top faces or the release's cubes
KEPT_EPISODES = 16  # the latest episodes kept, so that a download is the episode the page showed


class DemoError(Exception):
    """A request the page should show as a message: the user's input, or an agent whose files are missing."""


@dataclass(frozen=True)
class AgentSpec:
    """An agent the page offers: ``files`` under the checkpoints folder, ``build`` makes it from their paths."""

    label: str
    files: tuple[str, ...]
    build: Callable[[list[Path]], Agent]


def _read_and_plan(paths: list[Path]) -> Agent:
    from blocks.agents.reader import ReadAndPlanAgent

    return ReadAndPlanAgent.from_checkpoints(str(paths[0]), str(paths[1]))  # conf/agent/read_and_plan.yaml's


def _policy(paths: list[Path]) -> Agent:
    from blocks.agents.policy import PolicyAgent

    return PolicyAgent.from_checkpoint(str(paths[0]))  # greedy, as eval.py's agent=policy


AGENTS: dict[str, AgentSpec] = {
    "read_and_plan": AgentSpec(
        "Read and plan (ours): read the board, predict the goal, plan the path",
        ("ours/board_reader.ckpt", "ours/goal_predictor.ckpt"),
        _read_and_plan,
    ),
    "approach": AgentSpec(
        "The paper's approach (contextual bandit after supervised start)",
        ("paper/approach.ckpt",),
        _policy,
    ),
    "supervised": AgentSpec(
        "SUPERVISED (the paper's imitation baseline)", ("paper/supervised_release_pictures.ckpt",), _policy
    ),
    "stop": AgentSpec("STOP (stops at once)", (), lambda _: StopAgent()),
    "random": AgentSpec("RANDOM (uniform moves until it samples STOP)", (), lambda _: RandomAgent()),
}


def png_data_url(image: np.ndarray) -> str:
    """An RGB image as a ``data:`` URL the page can show without another request."""
    ok, encoded = cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    if not ok:
        raise RuntimeError("PNG encoding failed")
    return "data:image/png;base64," + base64.b64encode(encoded.tobytes()).decode("ascii")


def gold_block(example: Example) -> int:
    """The block the corpus's instruction moves: the one whose goal is away from its start."""
    return int(np.argmax(np.linalg.norm(example.task.goal - example.task.start, axis=1)))


class DemoApp:
    """The corpus split the page shows, and the agents it offers (loaded on first use, then kept)."""

    def __init__(
        self,
        data_root: Path | str | None = None,
        checkpoints: Path | str = "checkpoints",
        split: str = "dev",
        seed: int = 0,
    ):
        self.data_root = data_root
        self.split = split
        self.examples = load_split(split, data_root)  # a missing corpus fails here, in one line
        self.checkpoints = Path(checkpoints)
        self.seed = seed
        self._agents: dict[str, Agent] = {}
        self._renderers: dict[tuple[str, int], Any] = {}
        self._pictures: dict[str, str] = {}
        self._tiles: dict[int, str] = {}
        self._episodes: OrderedDict[tuple, tuple[Episode, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()  # agents keep an episode's state: one episode at a time

    # -- what the page lists ------------------------------------------------------------------------------------

    def missing(self, name: str) -> str | None:
        """Why agent ``name`` cannot run, in one line; None when its files are all there."""
        absent = [f for f in AGENTS[name].files if not (self.checkpoints / f).is_file()]
        if not absent:
            return None
        return (
            f"{', '.join(str(self.checkpoints / f) for f in absent)} not found: the shipped checkpoints come with a "
            f"clone of the repository (run the demo from its root, or give checkpoints=<folder>)"
        )

    def agents(self) -> list[dict[str, Any]]:
        return [
            {"name": name, "label": spec.label, "available": self.missing(name) is None,
             "missing": self.missing(name), "picture": self.picture(name)}
            for name, spec in AGENTS.items()
        ]  # fmt: skip

    def index(self, value: Any) -> int:
        """A board index from the page: an integer in range, or ``"random"``."""
        if isinstance(value, str) and value.strip().lower() == "random":
            return random.randrange(len(self.examples))
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise DemoError(f"board index must be a whole number from 0 to {len(self.examples) - 1}")
        try:
            index = int(value)
        except ValueError:
            raise DemoError(
                f"board index {str(value)[:40]!r} is not a whole number: choose 0 to {len(self.examples) - 1}"
            ) from None
        if not 0 <= index < len(self.examples):
            raise DemoError(
                f"board index {index} is out of range: the {self.split} split has {len(self.examples)} "
                f"examples, 0 to {len(self.examples) - 1}"
            )
        return index

    def view(self, value: Any) -> str:
        """The picture a person looks at: ``flat`` (the default) or ``release``."""
        value = "flat" if value in (None, "") else value
        if value not in VIEWS:
            raise DemoError(f"unknown view {str(value)[:40]!r}; choose one of {', '.join(VIEWS)}")
        return value

    def picture(self, name: str) -> str | None:
        """The picture agent ``name`` was trained on and sees (its checkpoint's record), None for an agent that
        sees none (STOP, RANDOM) or whose files are missing."""
        if name not in self._pictures:
            files = AGENTS[name].files
            if not files or self.missing(name) is not None:
                return None
            from blocks.model.checkpoint import load_file
            from blocks.render.factory import render_of

            try:
                self._pictures[name] = render_of(load_file(self.checkpoints / files[0], mmap=True)
                                                 .get("hyper_parameters"))  # fmt: skip
            except UsageError:
                return None
        return self._pictures[name]

    def logo_tile(self, block: int) -> str:
        """Block ``block``'s logo as a small PNG for the legend (the flat picture's face)."""
        if block not in self._tiles:
            face = self.renderer("flat", VIEW_SIZE).glyph("logo", block)
            self._tiles[block] = png_data_url(cv2.resize(face, (48, 48), interpolation=cv2.INTER_AREA))
        return self._tiles[block]

    def presets(self) -> list[dict[str, Any]]:
        """A few boards worth trying, found in the split by what they hold: the first of each kind."""
        kinds = [
            ("digits", lambda e: e.decoration != "logo"),
            ("logos", lambda e: e.decoration == "logo"),
            ("fewer than 20 blocks", lambda e: len(e.task.start) < 20),
            ("'between' two blocks", lambda e: " between " in f" {e.instruction.lower()} "),
            ("a corner", lambda e: "corner" in e.instruction.lower()),
            ("the centre", lambda e: any(w in e.instruction.lower() for w in ("center", "centre", "middle"))),
        ]
        found: list[dict[str, Any]] = []
        for label, wanted in kinds:  # each a board of its own
            taken = {f["index"] for f in found}
            index = next((i for i, e in enumerate(self.examples) if i not in taken and wanted(e)), None)
            if index is not None:
                found.append({"index": index, "label": f"{label} (board {index})"})
        return found

    def board(self, value: Any, view: Any = None, agent: Any = None) -> dict[str, Any]:
        """A board's start drawn for a person (``view``, at the display size), the corpus's goal for it (a pink
        ring where the moved block should end and a line from where it starts), the logos' names, the picture
        ``agent`` sees, and the corpus's instruction."""
        index, view = self.index(value), self.view(view)
        example = self.examples[index]
        logo = example.decoration == "logo"
        human = self.renderer(view, VIEW_SIZE).render_board(example.task.start, logo)
        block = gold_block(example)
        start, goal = example.task.start[block], example.task.goal[block]
        drawn = draw_frames([human], [example.task.start], [], gold_goal=goal, gold_start=start)[0]
        picture = self.picture(agent) if isinstance(agent, str) and agent in AGENTS else "flat"
        seen = self.renderer(picture, 120).render_board(example.task.start, logo) if picture else None
        return {
            "index": index,
            "count": len(self.examples),
            "split": self.split,
            "instruction": example.instruction,
            "decoration": example.decoration,
            "view": view,
            "image": png_data_url(drawn),
            "plain": png_data_url(human),
            "agent_image": png_data_url(seen) if seen is not None else None,
            "picture": picture,
            "gold": {"block": block_name(block, logo), "blocks": f"{len(example.task.start)} blocks"},
            "legend": [
                {"name": block_name(b, logo), "image": self.logo_tile(b)}
                for b in range(len(example.task.start))
            ]
            if logo
            else [],
        }

    # -- one episode ----------------------------------------------------------------------------------------------

    def agent(self, name: Any) -> Agent:
        if not isinstance(name, str) or name not in AGENTS:
            raise DemoError(f"unknown agent {str(name)[:40]!r}; choose one of {', '.join(AGENTS)}")
        why = self.missing(name)
        if why is not None:
            raise DemoError(f"agent {name} cannot run: {why}")
        if name not in self._agents:
            try:
                self._agents[name] = AGENTS[name].build([self.checkpoints / f for f in AGENTS[name].files])
            except UsageError as error:  # a checkpoint that is not what it should be: the loader's own words
                raise DemoError(f"agent {name} cannot run: {error}") from None
        return self._agents[name]

    def renderer(self, kind: str, size: int):
        if (kind, size) not in self._renderers:
            self._renderers[kind, size] = make_renderer(kind, self.data_root, size)
        return self._renderers[kind, size]

    def episode(self, request: Any) -> tuple[Episode, dict[str, Any]]:
        """The episode ``request`` asks for and what the page shows of it; the latest few are kept, so the GIF
        and the JSON downloaded are the episode on screen (an agent is deterministic for its seed anyway)."""
        if not isinstance(request, dict):
            raise DemoError(
                'send a JSON object: {"index": 0, "instruction": "...", "agent": "read_and_plan"}'
            )
        unknown = set(request) - {"index", "instruction", "agent", "seed", "view"}
        if unknown:
            raise DemoError(
                f"unknown field(s) {sorted(unknown)}; send index, instruction, agent, seed and view"
            )
        run_seed = check_seed(request.get("seed", self.seed))
        index = self.index(request.get("index", 0))
        view = self.view(request.get("view"))
        example = self.examples[index]
        instruction = check_instruction(request.get("instruction", example.instruction))
        name = request.get("agent", "read_and_plan")
        key = (name, index, instruction, run_seed, view)
        if isinstance(name, str) and key in self._episodes:
            self._episodes.move_to_end(key)
            return self._episodes[key]
        started = time.perf_counter()
        with self._lock:
            agent = self.agent(name)
            picture = getattr(agent, "render", "flat")
            renderer = self.renderer(picture, getattr(agent, "image_size", 120))
            seed = episode_seeds(run_seed, 1, first=index)  # example ``index``'s seed in eval.py seed=<seed>
            episode = run_episode(agent, example.task, instruction, renderer, seed=seed)
            aim = _aim(agent)
            reading = (
                {k: v[0] for k, v in agent.perceived.items()} if getattr(agent, "perceived", None) else None
            )
        corpus = instruction.strip() == example.instruction.strip()
        notes = word_notes(instruction, vocabularies(agent), mends=_mends(agent))
        logo = example.decoration == "logo"
        human = self.renderer(view, VIEW_SIZE)
        block = gold_block(example)
        frames = draw_frames(
            [human.render_board(p, logo) for p in episode.positions], episode.positions, episode.actions,
            gold_goal=example.task.goal[block] if corpus else None, aim=aim,
        )  # fmt: skip
        seconds = round(time.perf_counter() - started, 3)
        shown = {
            "agent": name,
            "label": AGENTS[name].label,
            "index": index,
            "instruction": instruction,
            "corpus_instruction": corpus,
            "view": view,
            "picture": picture if AGENTS[name].files else None,
            "frames": [png_data_url(f) for f in frames],
            "agent_frames": [png_data_url(f) for f in episode.frames] if AGENTS[name].files else [],
            "steps": ["start", *describe_steps(episode)],
            "actions": [int(a) for a in episode.actions],
            "positions": [np.round(p, 4).tolist() for p in episode.positions],
            "gold_goal": np.round(example.task.goal, 4).tolist() if corpus else None,
            "error": round(episode.error, 4) if corpus else None,
            "seed": run_seed,
            "stopped": bool(episode.actions) and episode.actions[-1] == STOP,
            "hit_step_limit": bool(episode.actions)
            and episode.actions[-1] != STOP
            and len(episode.actions) >= HORIZON,
            "step_limit": HORIZON,
            "notes": notes,
            "seconds": seconds,
        }
        self._episodes[key] = (episode, {**shown, "reading": reading})
        while len(self._episodes) > KEPT_EPISODES:
            self._episodes.popitem(last=False)
        return episode, self._episodes[key][1]

    def run(self, request: Any) -> dict[str, Any]:
        """One episode of ``request["agent"]`` on board ``request["index"]`` following ``request["instruction"]``:
        its frames drawn for a person (the moved block ringed, the gold goal drawn when the instruction is the
        corpus's), the agent's own pictures, its steps in words and, for the corpus's instruction, its final
        error as ``eval.py`` measures it."""
        _, shown = self.episode(request)
        return {k: v for k, v in shown.items() if k != "reading"}

    def gif(self, request: Any) -> bytes:
        """The episode of ``request`` as ``python -m blocks.animate`` draws it: the agent's picture, captioned."""
        from blocks.animate import write_gif

        episode, shown = self.episode(request)
        buffer = io.BytesIO()
        write_gif(episode, buffer, reading=shown["reading"])
        return buffer.getvalue()


def block_name(block: int, logo: bool) -> str:
    """How the page names a block: its logo's brand, or its digit (block 0 is labelled 1)."""
    return LOGO_NAMES[block] if logo else str(block + 1)


def check_seed(value: Any) -> int:
    """The sampling agents' seed from the page: a whole number from 0 to 2**31 - 1 (eval.py's ``seed=``)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise DemoError("the seed must be a whole number from 0 to 2147483647")
    try:
        seed = int(value)
    except ValueError:
        raise DemoError(f"the seed {str(value)[:40]!r} is not a whole number (0 to 2147483647)") from None
    if not 0 <= seed < 2**31:
        raise DemoError(f"the seed {seed} is out of range: 0 to 2147483647")
    return seed


def check_instruction(text: Any) -> str:
    """The instruction as the page sent it, or a :class:`DemoError` saying what is wrong with it."""
    if not isinstance(text, str):
        raise DemoError("the instruction must be text")
    if not text.strip():
        raise DemoError("type an instruction, or press 'Corpus instruction' to take the board's own")
    if len(text) > MAX_CHARACTERS:
        raise DemoError(
            f"the instruction has {len(text):,} characters; the agents read at most {MAX_CHARACTERS:,} "
            f"(the corpus's longest has 383)"
        )
    if not tokenize(text):
        raise DemoError(
            "the instruction has no words the agents can read (they read English words and numbers, "
            "not symbols or emoji)"
        )
    return text


def vocabularies(agent: Agent) -> list[Vocabulary]:
    return list(getattr(agent, "vocabularies", []))


def _mends(agent: Agent) -> bool:
    from blocks.agents.reader import ReadAndPlanAgent

    return isinstance(agent, ReadAndPlanAgent)  # it reads unknown words as Vocabulary.mend says


def word_notes(text: str, vocabs: list[Vocabulary], mends: bool = False) -> list[str]:
    """What the page should tell about how the agent reads ``text``: the characters it skips (emoji, symbols)
    and the words it never saw in training (read as unknown, or as the known words they stand for)."""
    notes = []
    kept = set("".join(tokenize(text)))
    skipped = sorted({c for c in text.lower() if not c.isspace() and c not in kept and not c.isascii()})
    if skipped:
        notes.append(f"skipped (not words): {' '.join(skipped)}")
    if not vocabs:
        return notes
    vocab = vocabs[0]
    unknown = list(dict.fromkeys(t for t in tokenize(text) if t not in vocab))
    if unknown:
        read = []
        for word in unknown[:20]:
            mended = vocab.mend(word) if mends else []
            read.append(f"{word} (read as {' '.join(mended)})" if mended and mended != [word] else word)
        more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
        notes.append(
            f"words this agent never saw in training: {', '.join(read)}{more}; the rest it reads as unknown"
        )
    return notes


def describe_steps(episode: Episode) -> list[str]:
    """Each action in words, a move that left the board as it was marked as blocked."""
    steps = []
    for t, (action, text) in enumerate(zip(episode.actions, episode.describe(), strict=True)):
        blocked = action != STOP and np.array_equal(episode.positions[t], episode.positions[t + 1])
        steps.append(f"{text} (blocked)" if blocked else text)
    return steps


def _aim(agent: Agent) -> np.ndarray | None:
    """Where a read-and-plan agent last aimed the block it moves (board coordinates), None for other agents."""
    perceived = getattr(agent, "perceived", None)
    return None if not perceived else np.asarray(perceived["goal"][0], float)
