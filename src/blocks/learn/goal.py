"""Training the goal predictor (ours) on the corpus: instruction and board in, the moved block and its goal out.

The board is the example's start board as the simulator has it, with a little noise on every position
(``position_noise`` block lengths) so that the predictor tolerates the board reader's small misplacements. No
picture is rendered, so an epoch of the 11,196 training examples takes seconds. Validation is teacher-forced on
the tuning split: the share of moved blocks found, and the distance from the predicted to the true goal (block
lengths), for the predicted block (what an agent would do) and for the true one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytorch_lightning as pl
import torch
from torchmetrics import CatMetric

from blocks.data.relabel import LabelWords, relabel
from blocks.errors import ConfigError, positive_number
from blocks.model.goal_predictor import GoalPredictor, combine_readings, goal_losses


def goal_errors(
    predictor: GoalPredictor | Sequence[GoalPredictor], batch: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(block found, goal error of the predicted block's goal, goal error of the true block's, the predicted
    block's goal), per example. Several predictors (one vocabulary) read as one, as the read-and-plan agent
    combines them."""
    predictors = [predictor] if isinstance(predictor, GoalPredictor) else predictor
    moved, goals = combine_readings(
        [p(batch["tokens"], batch["lengths"], batch["positions"], batch["present"], batch["logo"])
         for p in predictors]
    )  # fmt: skip
    rows = torch.arange(len(moved))
    chosen = moved.argmax(-1)
    error = torch.linalg.vector_norm(goals[rows, chosen] - batch["goal"], dim=-1)
    forced = torch.linalg.vector_norm(goals[rows, batch["block"]] - batch["goal"], dim=-1)
    return chosen == batch["block"], error, forced, goals[rows, chosen]


class GoalLearner(pl.LightningModule):
    """Cross-entropy of the moved block plus the smooth L1 of its goal."""

    kind = "goal_predictor"

    def __init__(
        self,
        vocabulary: list[str],
        word_dim: int = 100,
        dim: int = 128,
        heads: int = 4,
        layers: int = 2,
        lr: float = 1e-3,
        position_noise: float = 0.2,
        block_loss_weight: float = 1.0,
        dropout: float = 0.1,
        translate: float = 4.0,
        relabel: float = 0.0,
        axis_references: bool = False,
        text_encoder: str | None = None,
        init_checkpoint: str | None = None,
    ):
        """``init_checkpoint``: a goal network of the same shape and vocabulary to start from (a network first
        trained on generated instructions, then on the corpus: docs/experiments/generated-instructions.md)."""
        super().__init__()
        lr = positive_number(lr, "model.lr")
        if (
            min(position_noise, block_loss_weight, translate) < 0
            or not 0 <= dropout < 1
            or not 0 <= relabel <= 1
        ):
            raise ConfigError(
                "model.lr must be positive, model.position_noise, model.block_loss_weight and model.translate >= 0, "
                "model.dropout in [0, 1), model.relabel in [0, 1]"
            )
        self.save_hyperparameters()
        self.hparams["kind"] = self.kind
        self.predictor = GoalPredictor(
            len(vocabulary), word_dim, dim, heads, layers, dropout, axis_references, text_encoder, vocabulary
        )
        if init_checkpoint:
            self._start_from(init_checkpoint, list(vocabulary))
        self.label_words = LabelWords(vocabulary) if relabel else None
        self.found, self.errors, self.forced = CatMetric(), CatMetric(), CatMetric()

    def _start_from(self, path: str, vocabulary: list[str]) -> None:
        from blocks.model.checkpoint import load_goal_predictor

        start, words = load_goal_predictor(path)
        if words != vocabulary:
            raise ConfigError(f"model.init_checkpoint={path}: a goal network of another vocabulary")
        try:
            self.predictor.load_state_dict(start.state_dict())
        except RuntimeError as error:
            first = str(error).splitlines()[1].strip() if "\n" in str(error) else str(error)
            raise ConfigError(
                f"model.init_checkpoint={path}: a goal network of another shape ({first})"
            ) from None

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        # Against learning the training layouts by heart: each board (with its goal) shifted as a whole by up to
        # ``translate`` block lengths, and every block jittered by ``position_noise``; with ``relabel``, the labels
        # of a board's blocks exchanged, in the words too. The board's centre stays put: shifted with the blocks
        # it trained far worse (docs/experiments/goal-stage.md).
        if self.label_words is not None:
            batch = relabel(batch, self.label_words, self.hparams.relabel)
        shift = self.hparams.translate * (2 * torch.rand(len(batch["goal"]), 1, 2, device=self.device) - 1)
        positions = (
            batch["positions"] + shift + self.hparams.position_noise * torch.randn_like(batch["positions"])
        )
        moved, goals, _ = self.predictor(
            batch["tokens"], batch["lengths"], positions, batch["present"], batch["logo"]
        )
        block_loss, goal_loss = goal_losses(moved, goals, batch["block"], batch["goal"] + shift[:, 0])
        loss = self.hparams.block_loss_weight * block_loss + goal_loss
        self.log_dict({"train/loss": loss, "train/block_loss": block_loss, "train/goal_loss": goal_loss},
                      batch_size=len(moved))  # fmt: skip
        self.log("loss", loss, prog_bar=True, logger=False, batch_size=len(moved))
        return loss

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # The board shifts, the jitter and dropout draw from torch's generator: a resumed run goes on with its state.
        checkpoint["torch_rng_state"] = torch.get_rng_state()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        if "torch_rng_state" in checkpoint:
            torch.set_rng_state(checkpoint["torch_rng_state"])

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        found, error, forced, _ = goal_errors(self.predictor, batch)
        self.found.update(found.float())
        self.errors.update(error)
        self.forced.update(forced)

    def on_validation_epoch_end(self) -> None:
        errors, forced = self.errors.compute(), self.forced.compute()
        self.log_dict(
            {"val/block_accuracy": self.found.compute().mean(), "val/goal_error": errors.mean(),
             "val/median_goal_error": errors.median(), "val/true_block_goal_error": forced.mean()},
            prog_bar=True, sync_dist=True,
        )  # fmt: skip
        for metric in (self.found, self.errors, self.forced):
            metric.reset()
