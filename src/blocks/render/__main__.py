"""Save a corpus example's start and goal images as PNG, to check by eye that they match the instruction.

python -m blocks.render split=dev index=0 [out=logs/render] [scale=4] [data_root=...]
"""

from __future__ import annotations

from pathlib import Path

import cv2
from omegaconf import OmegaConf

from blocks.cli import run_key_value
from blocks.corpus.download import default_data_root
from blocks.corpus.loader import load_split
from blocks.errors import ConfigError
from blocks.render.renderer import Renderer

DEFAULTS = {
    "split": "dev",
    "index": 0,
    "out": "logs/render",
    "scale": 4,
    "data_root": None,
    "image_size": 120,
}


def main(argv: list[str]) -> list[Path]:
    cfg = OmegaConf.merge(OmegaConf.create(DEFAULTS), OmegaConf.from_dotlist(argv))
    unknown = set(cfg) - set(DEFAULTS)
    if unknown:
        raise ConfigError(f"unknown option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    root = cfg.data_root or default_data_root()
    examples = load_split(cfg.split, root)
    if not 0 <= cfg.index < len(examples):
        raise ConfigError(f"index={cfg.index} out of range: split {cfg.split} has {len(examples)} examples")
    example = examples[cfg.index]
    renderer = Renderer(root, cfg.image_size)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, board in (("start", example.task.start), ("goal", example.task.goal)):
        image = renderer.render_board(board, example.decoration == "logo")
        big = cv2.resize(image, None, fx=cfg.scale, fy=cfg.scale, interpolation=cv2.INTER_NEAREST)
        path = out / f"{cfg.split}_{cfg.index}_{name}.png"
        cv2.imwrite(str(path), big[..., ::-1])
        paths.append(path)
    print(f"instruction: {example.instruction}")
    for path in paths:
        print(f"wrote {path}")
    return paths


if __name__ == "__main__":
    run_key_value(main, __doc__)
