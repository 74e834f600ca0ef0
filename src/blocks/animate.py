"""Write an animated GIF of an episode: every step's frame, the instruction as a caption, the final error.

python -m blocks.animate agent=policy ckpt_path=checkpoints/bandit.ckpt split=dev index=0 [out=logs/gif/x.gif]
python -m blocks.animate agent=goal ckpt_path=checkpoints/supervised_goal.ckpt split=dev index=0
python -m blocks.animate agent=demonstrations split=dev index=3
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import cv2
import numpy as np
from omegaconf import OmegaConf
from PIL import Image

from blocks.cli import user_errors
from blocks.episode import Episode
from blocks.errors import ConfigError

DEFAULTS = {
    "agent": "policy", "ckpt_path": None, "split": "dev", "index": 0, "instruction": None, "out": None,
    "scale": 4, "ms_per_frame": 350, "data_root": None,
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


def write_gif(episode: Episode, path: Path, scale: int = 4, ms_per_frame: int = 350) -> Path:
    lines = textwrap.wrap(episode.instruction, width=max(20, 120 * scale // 8)) or [""]
    steps = ["start", *episode.describe()]
    frames = []
    for t, (frame, step) in enumerate(zip(episode.frames, steps, strict=True)):
        footer = f"step {t}: {step}"
        if t == len(episode.frames) - 1:
            footer += f"   final error {episode.error:.2f} block lengths"
        frames.append(Image.fromarray(caption_frame(frame, lines, footer, scale)))
    durations = [ms_per_frame] * (len(frames) - 1) + [ms_per_frame * 6]  # linger on the result
    path.parent.mkdir(parents=True, exist_ok=True)
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=durations, loop=0)
    return path


def main(argv: list[str]) -> Path:
    from blocks.agents import DemonstrationAgent, RandomAgent, StopAgent
    from blocks.agents.goal import GoalSeekingAgent
    from blocks.agents.policy import PolicyAgent
    from blocks.corpus.download import default_data_root
    from blocks.corpus.loader import load_split
    from blocks.episode import run_episode
    from blocks.render.renderer import Renderer

    cfg = OmegaConf.merge(OmegaConf.create(DEFAULTS), OmegaConf.from_dotlist(argv))
    unknown = set(cfg) - set(DEFAULTS)
    if unknown:
        raise ConfigError(f"unknown option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    learned = {"policy": PolicyAgent, "goal": GoalSeekingAgent}
    agents = {**learned, "demonstrations": DemonstrationAgent, "random": RandomAgent, "stop": StopAgent}
    if cfg.agent not in agents:
        raise ConfigError(f"unknown agent {cfg.agent!r}; choose one of {', '.join(agents)}")
    agent = learned[cfg.agent].from_checkpoint(cfg.ckpt_path) if cfg.agent in learned else agents[cfg.agent]()
    root = cfg.data_root or default_data_root()
    examples = load_split(cfg.split, root)
    if not 0 <= cfg.index < len(examples):
        raise ConfigError(f"index={cfg.index} out of range: split {cfg.split} has {len(examples)} examples")
    example = examples[cfg.index]
    instruction = cfg.instruction or example.instruction
    renderer = Renderer(root, agent.image_size if cfg.agent in learned else 120)
    episode = run_episode(agent, example.task, instruction, renderer)
    out = Path(cfg.out or f"logs/gif/{cfg.agent}_{cfg.split}_{cfg.index}.gif")
    write_gif(episode, out, cfg.scale, cfg.ms_per_frame)
    print(f"{instruction}\n{len(episode.actions)} steps, final error {episode.error:.2f}; wrote {out}")
    return out


if __name__ == "__main__":
    with user_errors():
        main(sys.argv[1:])
