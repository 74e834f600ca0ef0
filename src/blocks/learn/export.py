"""Slim a training checkpoint down to what inference needs: weights and hyperparameters (a few MB).

    python -m blocks.learn.export logs/train/runs/<run>/checkpoints/epoch_012.ckpt checkpoints/bandit.ckpt

The result still loads with ``load_learner(path)``, ``<Learner>.load_from_checkpoint(path)`` and
``python eval.py agent=policy ckpt_path=path``; it cannot resume training (no optimizer state).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

KEPT = ("state_dict", "hyper_parameters", "pytorch-lightning_version", "epoch", "global_step", "frames_seen")


def export(source: str | Path, destination: str | Path) -> Path:
    checkpoint = torch.load(source, map_location="cpu", weights_only=False)
    slim = {k: checkpoint[k] for k in KEPT if k in checkpoint}
    slim["state_dict"] = {k: v for k, v in slim["state_dict"].items() if k.startswith("policy.")}
    slim["exported_from"] = str(source)
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    torch.save(slim, destination)
    return destination


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m blocks.learn.export SOURCE.ckpt DESTINATION.ckpt")
    path = export(sys.argv[1], sys.argv[2])
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
