"""The base of every learner that trains on episodes it rolls out in the world: bandit, SPO, DQN, oracle imitation.

It holds what they share: a starting policy, the update loop, the frame count. Each update's frames arrive in
chunks; their gradients accumulate and Adam steps after the last chunk, with the gradient norm clipped at
``gradient_clip``. Subclasses say what to minimise on a chunk (:meth:`RolloutLearner.objective`); a network with
a goal head adds the auxiliary goal loss on the learner's own states. ``on_policy`` says whether an update must
learn from episodes sampled by the very weights it changes (policy gradients; see ``RolloutStream`` and
``PendingRollout``) or may learn from any rollout's states (a replay memory, the planner's labels).
"""

from __future__ import annotations

from typing import Any

import torch

from blocks.data.rollout_tensors import Rollout, RolloutChunk, RolloutPiece, gather_stacks
from blocks.errors import ConfigError
from blocks.learn.base import PolicyLearner
from blocks.model.checkpoint import read_checkpoint
from blocks.model.distribution import FactoredActionDistribution


class RolloutLearner(PolicyLearner):
    kind = "rollout"
    on_policy = True  # a policy gradient: every update must learn from episodes its own weights sampled

    def __init__(
        self,
        vocabulary: list[str],
        network: dict[str, Any] | None = None,
        lr: float = 5e-5,
        goal_loss_weight: float = 1.0,
        gradient_clip: float | None = 5.0,
        init_checkpoint: str | None = None,
        reset_direction_head: bool = True,
    ):
        super().__init__(vocabulary, network, lr, goal_loss_weight)
        self.automatic_optimization = False  # one Adam step per update, after its chunks
        self.frames_seen = 0
        if init_checkpoint:
            self.initialise_from(init_checkpoint, reset_direction_head)
        # Once initialised, the weights live in this module's own checkpoints: loading one must not look for
        # the starting file again (it may be gone). Where it came from stays on record.
        self.hparams["initialised_from"] = init_checkpoint or self.hparams.get("initialised_from")
        self.hparams["init_checkpoint"] = None

    def initialise_from(self, path: str, reset_direction_head: bool) -> None:
        """Start from another learner's policy (the supervised model), optionally with a fresh direction layer."""
        start = read_checkpoint(path)
        try:
            self.policy.load_state_dict(start.policy_state)
        except RuntimeError as error:
            ours = self.hparams.network
            differ = {f"network.{k}": (start.network.get(k), ours.get(k)) for k in {*start.network, *ours}
                      if start.network.get(k) != ours.get(k)}  # fmt: skip
            raise ConfigError(
                f"model.init_checkpoint={path} holds another network than the configured one (checkpoint, "
                f"config: {differ}); set the same network options as the run that trained it"
            ) from error
        if reset_direction_head:
            self.policy.reset_direction_head()

    def on_fit_start(self) -> None:
        datamodule = getattr(self.trainer, "datamodule", None)
        if datamodule is not None:
            if not hasattr(datamodule, "attach_policy"):
                raise ConfigError(f"model={self.kind} learns from on-policy rollouts: use data=rollouts")
            updates = datamodule.batch_size // datamodule.episodes_per_update
            if self.on_policy and updates != 1:
                raise ConfigError(
                    f"model={self.kind} learns from the episodes its own weights sampled: one update per rollout, "
                    f"so data.episodes_per_update must equal data.batch_size ({datamodule.episodes_per_update} "
                    f"and {datamodule.batch_size} would make {updates} updates from one policy's episodes)"
                )
            datamodule.attach_policy(self.policy, **self.rollout_options())

    def rollout_options(self) -> dict[str, Any]:
        """How the data module rolls out for this learner (see ``RolloutDataModule.attach_policy``)."""
        return {}

    def objective(
        self,
        rollout: Rollout,
        steps: torch.Tensor,
        boards: torch.Tensor,
        distribution: FactoredActionDistribution,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(loss to minimise, figures to log) on the chunk's (step, board) pairs."""
        raise NotImplementedError

    def rollout_features(
        self, rollout: Rollout, steps: torch.Tensor, boards: torch.Tensor, images: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(joint features, image stacks, instruction vectors) at a rollout's (step, board) pairs, each instruction
        encoded once however many of its frames there are; ``images``: the stacks, if already gathered."""
        unique_boards, board_of_frame = torch.unique(boards, return_inverse=True)
        text = self.policy.encode_instruction(rollout.tokens[unique_boards], rollout.lengths[unique_boards])
        if images is None:
            images = gather_stacks(rollout.frames, steps, boards, self.policy.frames)
        text = text[board_of_frame]
        return self.policy.joint_features(images, text, rollout.previous_action[steps, boards]), images, text

    def resolve(self, piece: RolloutPiece | RolloutChunk) -> RolloutChunk:
        """The frames of a piece of the stream, its rollout sampled now by the current weights if it is the first
        (a chunk of a rollout already in hand passes as it is)."""
        if isinstance(piece, RolloutChunk):
            return piece
        return piece.pending.piece(piece.index, self.device)

    def training_step(self, piece: RolloutPiece | RolloutChunk, batch_idx: int) -> torch.Tensor:
        chunk = self.resolve(piece)
        rollout, steps, boards = chunk.rollout, chunk.steps, chunk.boards
        features, images, text = self.rollout_features(rollout, steps, boards)
        distribution = self.policy.action_distribution(features)
        loss, figures = self.objective(rollout, steps, boards, distribution)
        goal_loss = None
        if rollout.goal is not None:
            goal_loss = self.goal_loss(rollout.goal[steps, boards], features, images, text)
        if goal_loss is not None:  # network.goal_head: the goal regression on the learner's own states
            loss = loss + goal_loss

        self.manual_backward(loss * chunk.weight)
        self.frames_seen += len(steps)
        if chunk.last:
            optimizer = self.optimizers()
            if self.hparams.gradient_clip:
                self.clip_gradients(optimizer, self.hparams.gradient_clip, "norm")
            optimizer.step()
            optimizer.zero_grad()
            acted = rollout.active
            self.log_dict(
                {
                    "train/reward": rollout.reward[acted].mean(),
                    "train/rollout_error": rollout.final_error.mean(),
                    "train/rollout_steps": acted.sum(0).float().mean(),
                    "train/frames": float(self.frames_seen),
                },
                batch_size=rollout.num_boards,
            )
            self.log("reward", rollout.reward[acted].mean(), prog_bar=True, logger=False, batch_size=1)
        self.log_dict({"train/loss": loss, **figures}, batch_size=len(steps))
        return loss

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["frames_seen"] = self.frames_seen

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.frames_seen = int(checkpoint.get("frames_seen", 0))
