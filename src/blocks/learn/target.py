"""SUPERVISED with an oracle planner, the paper's variant: learn the block to move and its target position.

From the first picture of each example (no previous action), the likelihood of the moved block and the squared
distance between the predicted and the annotated target position (block lengths), as the paper's appendix
describes it. The network is the paper's with a goal head (``network.goal_head=true``) whose first two outputs
are the target; its direction head is not trained. ``agent=oracle_planner`` executes it with the planner.
"""

from __future__ import annotations

import torch

from blocks.agents.planner import OraclePlannerAgent
from blocks.errors import ConfigError
from blocks.learn.base import PolicyLearner
from blocks.learn.losses import target_regression_loss


class TargetLearner(PolicyLearner):
    kind = "target"

    def __init__(self, vocabulary: list[str], network: dict | None = None, lr: float = 1e-3):
        super().__init__(vocabulary, network, lr)
        if self.policy.goal_head is None:
            raise ConfigError(
                "model=target regresses the target with the goal head: set network.goal_head=true"
            )

    def agent(self, greedy: bool = True) -> OraclePlannerAgent:
        acting = super().agent(greedy)
        return OraclePlannerAgent(self.policy, acting.vocab, acting.frames, acting.image_size)

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        text = self.policy.encode_instruction(batch["tokens"], batch["lengths"])
        features = self.policy.joint_features(batch["images"], text, batch["previous_action"])
        block_log_probs = self.policy.action_distribution(features).block_log_probs
        target = self.policy.predict_goal(features)[:, :2]
        block_loss, target_loss = target_regression_loss(
            block_log_probs, batch["block"], target, batch["goal"][:, :2]
        )
        loss = block_loss + target_loss
        with torch.no_grad():
            accuracy = (block_log_probs.argmax(1) == batch["block"]).float().mean()
            distance = (target - batch["goal"][:, :2]).norm(dim=1).mean()
        self.log_dict({"train/loss": loss, "train/block_loss": block_loss, "train/target_loss": target_loss,
                       "train/block_accuracy": accuracy, "train/target_distance": distance})  # fmt: skip
        self.log("loss", loss, prog_bar=True, logger=False)
        return loss
