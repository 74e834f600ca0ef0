"""Oracle imitation with an ensemble as a second teacher (ours): several networks distilled into one.

An ensemble of oracle-imitation networks errs less than any of its members (README, "Ensembles") but costs one
forward pass per member at every step. This learner trains one network as :class:`OracleLearner` does, on the
planner's labels at the states its own rollouts visit, and also pulls its block and direction distributions
towards the ensemble's (the renormalised mean of the members' log-probabilities, as ``agent=policy`` acts on):

    loss = oracle loss + distill_weight * mean_t[ KL(P_teachers_block || P_block) + KL(P_teachers_dir || P_dir) ]

The teachers are frozen and are no part of the checkpoint: they are loaded from ``teachers`` (checkpoint paths)
when training starts, so a distilled checkpoint loads, acts and resumes like any other learner's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from blocks.corpus.text import Vocabulary
from blocks.data.rollout_tensors import Rollout, gather_stacks
from blocks.errors import ConfigError
from blocks.learn.losses import distillation_divergence
from blocks.learn.oracle import OracleLearner
from blocks.model.checkpoint import read_checkpoint
from blocks.model.distribution import FactoredActionDistribution
from blocks.model.policy import PolicyNetwork


class DistillationLearner(OracleLearner):
    kind = "distill"

    def __init__(
        self,
        vocabulary: list[str],
        network: dict[str, Any] | None = None,
        lr: float = 1e-3,
        goal_loss_weight: float = 1.0,
        gradient_clip: float | None = 5.0,
        init_checkpoint: str | None = None,
        reset_direction_head: bool = False,
        oracle_rollin: float = 0.0,
        stop_radius: int = 0,
        teachers: Sequence[str] = (),
        distill_weight: float = 1.0,
    ):
        if not teachers or isinstance(teachers, str):
            raise ConfigError(
                "model=distill needs a list of teacher checkpoints: model.teachers=[a.ckpt,b.ckpt]"
            )
        if distill_weight < 0:
            raise ConfigError(f"model.distill_weight must be >= 0, got {distill_weight}")
        super().__init__(vocabulary, network, lr, goal_loss_weight, gradient_clip, init_checkpoint,
                         reset_direction_head, oracle_rollin, stop_radius)  # fmt: skip
        self.hparams["teachers"] = list(teachers)
        # A plain list, not a ModuleList: the teachers stay out of the state dict, the optimizer and DDP.
        self.teachers: list[PolicyNetwork] = []
        self.teacher_token_ids: list[torch.Tensor] = []  # this network's token id -> each teacher's

    def on_fit_start(self) -> None:
        self.load_teachers()
        super().on_fit_start()

    def load_teachers(self) -> None:
        """Load the frozen teachers on this module's device (once), checking that they read the same inputs."""
        if self.teachers:
            return
        own, words = self.hparams.network, Vocabulary(self.hparams.vocabulary).words
        for path in self.hparams.teachers:
            teacher = read_checkpoint(path, map_location=self.device)
            for key, default in (("frames", 5), ("image_size", 120)):
                if teacher.network.get(key, default) != own.get(key, default):
                    raise ConfigError(
                        f"teacher {path} reads network.{key}={teacher.network.get(key, default)}, this network "
                        f"{own.get(key, default)}: a teacher must see the same pictures"
                    )
            vocabulary = Vocabulary(teacher.vocabulary)
            ids = [vocabulary.index.get(word, vocabulary.unk_id) for word in words]
            self.teachers.append(teacher.build().to(self.device).requires_grad_(False))
            self.teacher_token_ids.append(torch.tensor(ids, device=self.device))

    @torch.no_grad()
    def teacher_distribution(
        self, rollout: Rollout, steps: torch.Tensor, boards: torch.Tensor
    ) -> FactoredActionDistribution:
        """The ensemble's distribution at the chunk's (step, board) pairs, each teacher reading its own word ids."""
        unique_boards, board_of_frame = torch.unique(boards, return_inverse=True)
        images = gather_stacks(rollout.frames, steps, boards, self.policy.frames)
        previous = rollout.previous_action[steps, boards]
        distributions = []
        for teacher, token_ids in zip(self.teachers, self.teacher_token_ids, strict=True):
            text = teacher.encode_instruction(
                token_ids[rollout.tokens[unique_boards]], rollout.lengths[unique_boards]
            )
            features = teacher.joint_features(images, text[board_of_frame], previous)
            distributions.append(teacher.action_distribution(features))
        return FactoredActionDistribution.mean_of(distributions)

    def objective(
        self,
        rollout: Rollout,
        steps: torch.Tensor,
        boards: torch.Tensor,
        distribution: FactoredActionDistribution,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        loss, figures = super().objective(rollout, steps, boards, distribution)
        teacher = self.teacher_distribution(rollout, steps, boards)
        divergence = distillation_divergence(teacher, distribution)
        with torch.no_grad():
            agreement = (teacher.greedy() == distribution.greedy()).float().mean()
        figures = {**figures, "train/teacher_kl": divergence.detach(), "train/teacher_agreement": agreement}
        return loss + self.hparams.distill_weight * divergence, figures
