"""SUPERVISED: maximum likelihood of the demonstrations' actions in the demonstrations' own contexts.

With ``network.goal_head=true`` (ours) the loss also regresses where the moved block must go (its goal, and the
offset from where it stands, in block lengths; smooth L1). The direction label is one of often two equally short
directions, picked by the search's tie-break; the offset says exactly where the goal lies.
"""

from __future__ import annotations

import torch

from blocks.learn.base import PolicyLearner
from blocks.learn.losses import demonstration_loss


class SupervisedLearner(PolicyLearner):
    """Cross-entropy on the gold block and on the gold direction (STOP is a direction), Adam 0.001."""

    kind = "supervised"

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        text = self.policy.encode_instruction(batch["tokens"], batch["lengths"])
        features = self.policy.joint_features(batch["images"], text, batch["previous_action"])
        distribution = self.policy.action_distribution(features)
        block_loss, direction_loss = demonstration_loss(
            distribution.block_log_probs, distribution.direction_log_probs, batch["block"], batch["direction"]
        )
        loss = block_loss + direction_loss
        goal_loss = self.goal_loss(batch["goal"], features, batch["images"], text)
        if goal_loss is not None:  # network.goal_head
            loss = loss + goal_loss
        with torch.no_grad():
            block_accuracy = (distribution.block_log_probs.argmax(1) == batch["block"]).float().mean()
            direction_accuracy = (
                (distribution.direction_log_probs.argmax(1) == batch["direction"]).float().mean()
            )
        self.log_dict(
            {
                "train/loss": loss,
                "train/block_loss": block_loss,
                "train/direction_loss": direction_loss,
                "train/block_accuracy": block_accuracy,
                "train/direction_accuracy": direction_accuracy,
            },
            prog_bar=False,
        )
        self.log("loss", loss, prog_bar=True, logger=False)
        return loss
