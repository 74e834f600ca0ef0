"""Write an animated GIF of an episode: every step's frame, the instruction as a caption, the final error.

python -m blocks.animate agent=policy ckpt_path=checkpoints/paper/approach.ckpt split=dev index=0 [out=logs/gif/x.gif]
python -m blocks.animate agent=goal ckpt_path=<a network trained with network.goal_head=true> split=dev index=0
python -m blocks.animate agent=demonstrations split=dev index=3
python -m blocks.animate agent=read_and_plan split=dev index=0   # + what it read (the shipped reader and goal
    network, as eval.py loads them; reader=<r.ckpt> goal=<g.ckpt> for others)
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import BinaryIO

import cv2
import numpy as np
from omegaconf import OmegaConf
from PIL import Image

from blocks.cli import run_key_value
from blocks.episode import Episode
from blocks.errors import ConfigError

DEFAULTS = {
    "agent": "policy", "ckpt_path": None, "split": "dev", "index": 0, "instruction": None, "out": None,
    "scale": 4, "ms_per_frame": 350, "data_root": None,
    "reader": "checkpoints/ours/board_reader.ckpt", "goal": "checkpoints/ours/goal_predictor.ckpt",  # conf/agent/read_and_plan
}  # fmt: skip


def caption_frame(frame: np.ndarray, lines: list[str], footer: str, scale: int) -> np.ndarray:
    """The frame enlarged ``scale`` times with the caption above and a status line below (RGB)."""
    big = cv2.resize(frame, None, fx=scale, fy=scale, interpolation=cv2.INTER_NEAREST)
    width, line_height = big.shape[1], 18
    top = np.full((line_height * len(lines) + 8, width, 3), 255, np.uint8)
    for i, line in enumerate(lines):
        cv2.putText(
            top, line, (6, 16 + i * line_height), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1, cv2.LINE_AA
        )
    bottom = np.full((26, width, 3), 255, np.uint8)
    cv2.putText(bottom, footer, (6, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (40, 40, 160), 1, cv2.LINE_AA)
    return np.vstack([top, big, bottom])


def draw_reading(big: np.ndarray, reading: dict[str, np.ndarray], scale: int) -> np.ndarray:
    """What a read-and-plan agent perceived, on an enlarged frame: a cyan dot where it read each block, a blue ring
    round the block it moves, a red cross on the goal it predicted (the block tops' height)."""
    from blocks.render.camera import Camera
    from blocks.world.geometry import BLOCK_SIDE

    camera = Camera(big.shape[0] // scale)
    out = big.copy()

    def pixel(point: np.ndarray) -> tuple[int, int]:
        row, column = camera.project(point[0], point[1], BLOCK_SIDE)
        return int(round(float(column) * scale)), int(round(float(row) * scale))

    for point in reading["positions"][reading["present"]]:
        cv2.circle(out, pixel(point), 3, (0, 200, 220), -1, cv2.LINE_AA)
    cv2.circle(
        out, pixel(reading["positions"][int(reading["block"])]), 4 * scale, (40, 60, 230), 2, cv2.LINE_AA
    )
    cv2.drawMarker(out, pixel(reading["goal"]), (220, 30, 30), cv2.MARKER_CROSS, 5 * scale, 2, cv2.LINE_AA)
    return out


def write_gif(
    episode: Episode,
    path: Path | BinaryIO,
    scale: int = 4,
    ms_per_frame: int = 350,
    reading: dict[str, np.ndarray] | None = None,
) -> Path | BinaryIO:
    """The episode as a GIF, to a file or a binary stream (the demo's download); with ``reading`` (a read-and-plan
    agent's ``perceived`` board of this episode) every frame also shows what the agent read and where it aimed."""
    lines = textwrap.wrap(episode.instruction, width=max(20, 120 * scale // 8)) or [""]
    steps = ["start", *episode.describe()]
    frames = []
    for t, (frame, step) in enumerate(zip(episode.frames, steps, strict=True)):
        footer = f"step {t}: {step}"
        if t == len(episode.frames) - 1:
            footer += f"   final error {episode.error:.2f} block lengths"
        captioned = caption_frame(frame, lines, footer, scale)
        if reading is not None:
            top = captioned.shape[0] - 26 - frame.shape[0] * scale
            captioned[top : top + frame.shape[0] * scale] = draw_reading(
                captioned[top : top + frame.shape[0] * scale], reading, scale
            )
        frames.append(Image.fromarray(captioned))
    durations = [ms_per_frame] * (len(frames) - 1) + [ms_per_frame * 6]  # linger on the result
    if isinstance(path, Path):
        path.parent.mkdir(parents=True, exist_ok=True)
    frames[0].save(path, format="GIF", save_all=True, append_images=frames[1:], duration=durations, loop=0)
    return path


def writable(path: Path) -> Path:
    """``path`` once its folder exists and the file can be written: checked before the episode runs, one line
    (exit 2) where it cannot."""
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab"):
            pass
    except OSError as error:
        raise ConfigError(
            f"out={path}: cannot write it ({error.strerror}); choose another out=<file.gif>"
        ) from None
    if not existed:
        path.unlink()
    return path


def main(argv: list[str]) -> Path:
    from blocks.agents import DemonstrationAgent, RandomAgent, StopAgent
    from blocks.agents.goal import GoalSeekingAgent
    from blocks.agents.policy import PolicyAgent
    from blocks.agents.reader import ReadAndPlanAgent
    from blocks.corpus.download import default_data_root
    from blocks.corpus.loader import load_split
    from blocks.episode import run_episode
    from blocks.render.factory import make_renderer

    # The instruction is taken verbatim: parsed as YAML, ``?!.,;:`` would become a mapping and ``${x}`` an
    # interpolation. Everything else is a key=value the config parses.
    texts = [a.split("=", 1)[1] for a in argv if a.startswith("instruction=")]
    settings = [a for a in argv if not a.startswith("instruction=")]
    malformed = [a for a in settings if "=" not in a]
    if malformed:
        raise ConfigError(
            f"{malformed[0]!r}: options are key=value, for example index=3 or instruction='put ...'"
        )
    cfg = OmegaConf.merge(OmegaConf.create(DEFAULTS), OmegaConf.from_dotlist(settings))
    unknown = set(cfg) - set(DEFAULTS)
    if unknown:
        raise ConfigError(f"unknown option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    learned = {"policy": PolicyAgent, "goal": GoalSeekingAgent}
    agents = {**learned, "demonstrations": DemonstrationAgent, "random": RandomAgent, "stop": StopAgent,
              "read_and_plan": ReadAndPlanAgent}  # fmt: skip
    if cfg.agent not in agents:
        raise ConfigError(f"unknown agent {cfg.agent!r}; choose one of {', '.join(agents)}")
    out = writable(Path(cfg.out or f"logs/gif/{cfg.agent}_{cfg.split}_{cfg.index}.gif"))
    if cfg.agent == "read_and_plan":
        if not cfg.reader or not cfg.goal:
            raise ConfigError(
                "agent=read_and_plan needs reader=<perception checkpoint> and goal=<goal checkpoint>"
            )
        agent = ReadAndPlanAgent.from_checkpoints(cfg.reader, cfg.goal)
    elif cfg.agent in learned:
        agent = learned[cfg.agent].from_checkpoint(cfg.ckpt_path)
    else:
        agent = agents[cfg.agent]()
    root = cfg.data_root or default_data_root()
    examples = load_split(cfg.split, root)
    if not 0 <= cfg.index < len(examples):
        raise ConfigError(f"index={cfg.index} out of range: split {cfg.split} has {len(examples)} examples")
    example = examples[cfg.index]
    instruction = texts[-1] if texts and texts[-1].strip() else example.instruction
    renderer = make_renderer(getattr(agent, "render", "flat"), root, getattr(agent, "image_size", 120))
    episode = run_episode(agent, example.task, instruction, renderer)
    reading = {k: v[0] for k, v in agent.perceived.items()} if getattr(agent, "perceived", None) else None
    write_gif(episode, out, cfg.scale, cfg.ms_per_frame, reading)
    print(f"{instruction}\n{len(episode.actions)} steps, final error {episode.error:.2f}; wrote {out}")
    return out


if __name__ == "__main__":
    run_key_value(main, __doc__)
