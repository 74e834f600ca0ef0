"""Training the board reader (ours) on boards the simulator draws, supervised by the simulator's positions.

Every batch is new: random layouts (1 to 20 blocks, the first n or any subset of the labels, no two overlapping,
logos or digits) mixed with the corpus's own training boards. The target of a cell is the block whose top face
covers the cell's centre pixel. Validation reads the tuning split's boards; :func:`location_accuracy` scores any
boards (``scripts/stage_errors.py --reader <ckpt> --split dev`` runs it): the share of present blocks found within
half a block length of where they stand, for logo and digit boards apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
import torch.nn.functional as F

from blocks.data.boards import board_batch
from blocks.errors import positive_number
from blocks.model.perception import NUM_CLASSES, BoardReader
from blocks.render.release import ReleaseRenderer
from blocks.render.renderer import Renderer
from blocks.world.geometry import BLOCK_SIDE, MAX_BLOCKS

LOCATED_WITHIN = 0.5  # block lengths


def located(
    positions: torch.Tensor, present: torch.Tensor, found: torch.Tensor, found_present: torch.Tensor
) -> torch.Tensor:
    """Per present block: read as present and placed within :data:`LOCATED_WITHIN` block lengths."""
    distance = torch.linalg.vector_norm(found - positions, dim=-1) / BLOCK_SIDE
    return (found_present & (distance < LOCATED_WITHIN))[present]


class PerceptionLearner(pl.LightningModule):
    """Cross-entropy of every cell's class; background cells weigh ``background_weight`` (most cells are)."""

    kind = "perception"

    def __init__(
        self, image_size: int = 120, channels: int = 64, lr: float = 1e-3, background_weight: float = 0.2
    ):
        super().__init__()
        lr = positive_number(lr, "model.lr")
        self.save_hyperparameters()
        self.hparams["kind"] = self.kind
        self.reader = BoardReader(image_size, channels)
        weights = torch.ones(NUM_CLASSES)
        weights[0] = background_weight
        self.register_buffer("class_weights", weights, persistent=False)
        self.hits: dict[str, list[torch.Tensor]] = {"logo": [], "digit": []}
        self.decoration_hits: list[torch.Tensor] = []

    def setup(self, stage: str) -> None:
        """The run names its picture in the record (``data.render``) after construction: read at its face height."""
        self.reader.reads(self.hparams.get("render", "flat"))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        logits, logo = self.reader(batch["images"])
        loss = F.cross_entropy(logits, batch["cells"], weight=self.class_weights)
        loss = loss + F.binary_cross_entropy_with_logits(logo, batch["logo"].float())
        with torch.no_grad():
            blocks = batch["cells"] > 0
            accuracy = (logits.argmax(1)[blocks] == batch["cells"][blocks]).float().mean()
        self.log_dict({"train/loss": loss, "train/block_cell_accuracy": accuracy}, batch_size=len(logits))
        self.log("loss", loss, prog_bar=True, logger=False, batch_size=len(logits))
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        found, found_present, logo = self.reader.read(batch["images"])
        self.decoration_hits.append((logo == batch["logo"]).float())
        for name, rows in (("logo", batch["logo"]), ("digit", ~batch["logo"])):
            self.hits[name].append(
                located(
                    batch["positions"][rows], batch["present"][rows], found[rows], found_present[rows]
                ).float()
            )

    def on_validation_epoch_end(self) -> None:
        figures: dict[str, Any] = {}
        every = []
        for name, hits in self.hits.items():
            if hits:
                joined = torch.cat(hits)
                figures[f"val/located_{name}"] = joined.mean()
                every.append(joined)
            hits.clear()
        if self.decoration_hits:
            figures["val/decoration_accuracy"] = torch.cat(self.decoration_hits).mean()
            self.decoration_hits.clear()
        if every:
            figures["val/missed"] = 1.0 - torch.cat(every).mean()  # the checkpoint monitor (lower is better)
        self.log_dict(figures, sync_dist=True, prog_bar=True)


@torch.no_grad()
def location_accuracy(
    reader: BoardReader,
    renderer: Renderer | ReleaseRenderer,
    boards: tuple[np.ndarray, np.ndarray, np.ndarray],
    batch_size: int = 128,
) -> dict[str, float]:
    """Share of present blocks located within half a block length, on logo and on digit boards, and per label;
    and how far off (block lengths: mean, median, 90th percentile) the blocks it found are, since "within half"
    hides errors well inside that half that the agent pays for at every goal."""
    hits: dict[str, list[np.ndarray]] = {"logo": [], "digit": []}
    errors: list[np.ndarray] = []
    per_label = np.zeros((2, MAX_BLOCKS))
    counts = np.zeros((2, MAX_BLOCKS))
    positions, present, logo = boards
    for i in range(0, len(positions), batch_size):
        batch = board_batch(
            renderer, positions[i : i + batch_size], present[i : i + batch_size], logo[i : i + batch_size]
        )
        found, found_present, _ = reader.read(batch["images"])
        distance = torch.linalg.vector_norm(found - batch["positions"], dim=-1) / BLOCK_SIDE
        good = (found_present & (distance < LOCATED_WITHIN)).numpy()
        errors.append(distance[found_present & batch["present"]].numpy())
        for kind, rows in (("logo", batch["logo"].numpy()), ("digit", ~batch["logo"].numpy())):
            mask = batch["present"].numpy()[rows]
            hits[kind].append(good[rows][mask])
            row = 0 if kind == "logo" else 1
            per_label[row] += (good[rows] & mask).sum(0)
            counts[row] += mask.sum(0)
    result = {f"located_{k}": float(np.concatenate(v).mean()) for k, v in hits.items() if v}
    result["located_digit_1_to_9"] = float(per_label[1, :9].sum() / max(counts[1, :9].sum(), 1))
    result["located_digit_10_to_20"] = float(per_label[1, 9:].sum() / max(counts[1, 9:].sum(), 1))
    if errors and (found_errors := np.concatenate(errors)).size:
        result["position_error_mean"] = float(found_errors.mean())
        result["position_error_median"] = float(np.median(found_errors))
        result["position_error_p90"] = float(np.quantile(found_errors, 0.9))
    result["boards"] = len(positions)
    return result
