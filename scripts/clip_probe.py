"""How often gradient clipping acts, and whether clipping each tensor (the release) differs from clipping the
global norm (this package): docs/experiments/release-fidelity.md section 4.

Runs ``train.py``'s composition for a few updates with the overrides given, records before every clip the global
gradient norm and each tensor's, and prints one JSON line: the share of updates each rule would clip at the
threshold and, where either does, the cosine between the two clipped gradients and the ratio of their norms.

    python scripts/clip_probe.py 300 experiment=paper_bandit 'pretrain.checkpoint=<2-epoch supervised>'
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from hydra import compose, initialize_config_dir

from blocks.learn.train import train

updates, overrides = int(sys.argv[1]), sys.argv[2:]
records: list[dict[str, float]] = []
original = pl.LightningModule.clip_gradients


def recording(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):
    grads = [p.grad.detach().flatten() for p in self.parameters() if p.grad is not None]
    norms = torch.stack([g.norm() for g in grads])
    limit = float(gradient_clip_val)
    total = float(torch.cat(grads).norm())
    globally = torch.cat(grads) * min(1.0, limit / total)
    each = torch.cat([g * min(1.0, limit / float(n)) for g, n in zip(grads, norms, strict=True)])
    records.append(
        {
            "global": total,
            "largest_tensor": float(norms.max()),
            "cosine": float(globally @ each / (globally.norm() * each.norm()).clamp_min(1e-12)),
            "norm_ratio": float(each.norm() / globally.norm().clamp_min(1e-12)),
            "limit": limit,
        }
    )
    return original(self, optimizer, gradient_clip_val, gradient_clip_algorithm)


pl.LightningModule.clip_gradients = recording
with initialize_config_dir(config_dir=str(Path("conf").resolve()), version_base="1.3"):
    cfg = compose(
        "train",
        overrides=[
            *overrides,
            f"++trainer.max_steps={updates}",
            "++trainer.limit_val_batches=0",
            "++trainer.enable_progress_bar=false",
            "final_eval.split=null",
            "logger=[]",
            "callbacks=[]",
            "paths.output_dir=/tmp/clip_probe",
        ],
    )
train(cfg)
limit = records[0]["limit"]
total = np.array([r["global"] for r in records])
largest = np.array([r["largest_tensor"] for r in records])
acting = (total > limit) | (largest > limit)
where = [r for r, a in zip(records, acting, strict=True) if a]
summary = {
    "updates": len(records),
    "limit": limit,
    "global_norm_median": float(np.median(total)),
    "global_norm_p99": float(np.quantile(total, 0.99)),
    "global_clips": float((total > limit).mean()),
    "per_tensor_clips": float((largest > limit).mean()),
    "cosine_where_either_clips": float(np.mean([r["cosine"] for r in where])) if where else None,
    "norm_ratio_where_either_clips": float(np.mean([r["norm_ratio"] for r in where])) if where else None,
}
print(json.dumps(summary))
