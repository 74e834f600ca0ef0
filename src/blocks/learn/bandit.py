"""The paper's contextual-bandit policy gradient, and REINFORCE as its return-to-go variant.

Each update uses a fresh rollout of the current policy (see ``RolloutStream``) and maximises the immediate
shaped reward of every sampled action:

    loss = -mean_t[ r_t * (log p_block(b_t) + log p_dir(d_t)) ] - entropy_coef * mean_t[ H(p_block) + H(p_dir) ]

With ``return_to_go=True``, r_t becomes the sum of rewards to the end of the episode (no baseline): REINFORCE.
The update's frames arrive in chunks; their gradients accumulate and Adam steps after the last chunk, with the
gradient norm clipped at ``gradient_clip``.
"""

from __future__ import annotations

from typing import Any

import torch

from blocks.learn.base import PolicyLearner
from blocks.learn.rollout import RolloutChunk, gather_stacks


class BanditLearner(PolicyLearner):
    kind = "bandit"

    def __init__(
        self,
        vocabulary: list[str],
        network: dict[str, Any] | None = None,
        lr: float = 5e-5,
        entropy_coef: float = 0.1,
        return_to_go: bool = False,
        gradient_clip: float | None = 5.0,
        init_checkpoint: str | None = None,
        reset_direction_head: bool = True,
        **extra: Any,
    ):
        super().__init__(vocabulary, network, lr, entropy_coef=entropy_coef, return_to_go=return_to_go,
                         gradient_clip=gradient_clip, init_checkpoint=init_checkpoint,
                         reset_direction_head=reset_direction_head, **extra)  # fmt: skip
        if entropy_coef < 0:
            raise ValueError(f"model.entropy_coef must be >= 0, got {entropy_coef}")
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
        state = torch.load(path, map_location="cpu", weights_only=False)["state_dict"]
        policy_state = {k.removeprefix("policy."): v for k, v in state.items() if k.startswith("policy.")}
        self.policy.load_state_dict(policy_state)
        if reset_direction_head:
            self.policy.reset_direction_head()

    def on_fit_start(self) -> None:
        datamodule = getattr(self.trainer, "datamodule", None)
        if datamodule is not None:
            if not hasattr(datamodule, "attach_policy"):
                raise TypeError(f"model={self.kind} learns from on-policy rollouts: use data=rollouts")
            datamodule.attach_policy(self.policy)

    def training_step(self, chunk: RolloutChunk, batch_idx: int) -> torch.Tensor:
        rollout, steps, boards = chunk.rollout, chunk.steps, chunk.boards
        # Encode each instruction once, however many of its frames the chunk holds.
        unique_boards, board_of_frame = torch.unique(boards, return_inverse=True)
        text = self.policy.encode_instruction(rollout.tokens[unique_boards], rollout.lengths[unique_boards])
        images = gather_stacks(rollout.frames, steps, boards, self.policy.frames)
        distribution = self.policy(images, text[board_of_frame], rollout.previous_action[steps, boards])

        log_prob = distribution.log_prob_parts(rollout.block[steps, boards], rollout.direction[steps, boards])
        signal = (rollout.returns_to_go() if self.hparams.return_to_go else rollout.reward)[steps, boards]
        entropy = distribution.entropy()
        loss = -(signal * log_prob).mean() - self.hparams.entropy_coef * entropy.mean()

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
        self.log_dict({"train/loss": loss, "train/entropy": entropy.mean()}, batch_size=len(steps))
        return loss

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["frames_seen"] = self.frames_seen

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.frames_seen = int(checkpoint.get("frames_seen", 0))
