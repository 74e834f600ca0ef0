"""DQN, the paper's baseline (appendix A): Q-learning of the 81 action values with the shaped reward.

As the appendix describes it: the network of :mod:`blocks.model.dqn`, an epsilon-greedy behaviour policy whose
epsilon falls from 1 to 0.1 over the first 100,000 frames, a replay memory of 2,000 transitions sampled by
priority (the magnitude of each transition's last temporal-difference error), a target network synchronised
after every epoch, no supervised start, the shaped reward (F1 and F2), mini-batches of 32. The paper gives no
discount; ``gamma`` is Mnih et al.'s 0.99. Episodes come from ``data=rollouts`` (one batch of episodes at a time,
as for the bandit); each episode's transitions enter the memory, then one update per ``replay_batch`` new
frames. A horizon reached ends the episode like STOP (the state does not show the time left).

The replay memory is not saved in checkpoints (2,000 pairs of image stacks): a resumed run refills it.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from blocks.data.rollout_tensors import RolloutChunk, RolloutPiece, gather_stacks
from blocks.errors import ConfigError
from blocks.learn.losses import td_loss
from blocks.learn.rollout_learner import RolloutLearner
from blocks.model.distribution import to_action
from blocks.model.dqn import QNetwork
from blocks.model.policy import pad_token_ids


class ReplayMemory:
    """The last ``size`` transitions (stack, words, previous action, action, reward, next stack, done) on the CPU,
    drawn in proportion to ``priority ** exponent``; new transitions get the largest priority seen."""

    def __init__(self, size: int, exponent: float = 0.6):
        self.size, self.exponent = size, exponent
        self.items: list[tuple[Any, ...] | None] = [None] * size
        self.priority = np.zeros(size)
        self.next, self.count = 0, 0

    def __len__(self) -> int:
        return self.count

    def add(self, *transitions: Any) -> None:
        """Columns of n transitions (tensors or lists with a first axis of n)."""
        for row in zip(*transitions, strict=True):
            self.items[self.next] = row
            self.priority[self.next] = self.priority[: max(self.count, 1)].max() or 1.0
            self.next = (self.next + 1) % self.size
            self.count = min(self.count + 1, self.size)

    def sample(self, batch: int, generator: torch.Generator) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
        weights = torch.from_numpy(self.priority[: self.count] ** self.exponent)
        index = torch.multinomial(weights, batch, replacement=True, generator=generator).numpy()
        return index, [self.items[i] for i in index]

    def update(self, index: np.ndarray, errors: np.ndarray) -> None:
        self.priority[index] = np.abs(errors) + 1e-3


def td_errors(
    online: QNetwork, target: QNetwork, batch: dict[str, torch.Tensor], gamma: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`~blocks.learn.losses.td_loss` of a replayed batch: the online network's Q(s, a), the target's at s'."""
    text = online.encode_instruction(batch["tokens"], batch["lengths"])
    q = online.q_values(online.joint_features(batch["stack"], text, batch["previous"]))
    chosen = q.gather(1, batch["action"][:, None]).squeeze(1)
    with torch.no_grad():
        next_text = target.encode_instruction(batch["tokens"], batch["lengths"])
        following = target.q_values(target.joint_features(batch["next_stack"], next_text, batch["action"]))
    return td_loss(chosen, batch["reward"], batch["done"], following, gamma)


class DQNLearner(RolloutLearner):
    kind = "dqn"
    on_policy = False  # learns from its replay memory

    def __init__(
        self,
        vocabulary: list[str],
        network: dict[str, Any] | None = None,
        lr: float = 0.00025,
        gamma: float = 0.99,
        memory_size: int = 2000,
        replay_batch: int = 32,
        epsilon_start: float = 1.0,
        epsilon_end: float = 0.1,
        epsilon_frames: int = 100_000,
        priority_exponent: float = 0.6,
        gradient_clip: float | None = 5.0,
    ):
        if not 0 <= gamma <= 1 or memory_size < replay_batch or replay_batch < 1 or epsilon_frames < 1:
            raise ConfigError("model.gamma must lie in [0, 1], model.memory_size >= model.replay_batch >= 1, "
                              "model.epsilon_frames >= 1")  # fmt: skip
        super().__init__(vocabulary, network, lr, goal_loss_weight=0.0, gradient_clip=gradient_clip)
        if not isinstance(self.policy, QNetwork):
            raise ConfigError("model=dqn learns action values: use network=dqn (network.architecture=dqn)")
        # A submodule: checkpoints save and restore it with the rest (exports keep only the policy).
        self.target = copy.deepcopy(self.policy).requires_grad_(False)
        self.memory = ReplayMemory(memory_size, priority_exponent)
        self.sampler = torch.Generator().manual_seed(0)
        self.policy.epsilon = epsilon_start

    def epsilon(self) -> float:
        """Linear from ``epsilon_start`` to ``epsilon_end`` over the first ``epsilon_frames`` frames."""
        h = self.hparams
        done = min(self.frames_seen / h.epsilon_frames, 1.0)
        return h.epsilon_start + done * (h.epsilon_end - h.epsilon_start)

    def remember(self, chunk: RolloutChunk) -> int:
        """Put the chunk's transitions into the memory; returns how many."""
        rollout, steps, boards = chunk.rollout, chunk.steps, chunk.boards
        frames = self.policy.frames
        last = rollout.active.shape[0] - 1
        following = (steps + 1).clamp(max=last)
        done = (steps == last) | ~rollout.active[following, boards]
        actions = to_action(rollout.block[steps, boards], rollout.direction[steps, boards])
        tokens = [rollout.tokens[b, : rollout.lengths[b]].tolist() for b in boards.tolist()]
        self.memory.add(
            gather_stacks(rollout.frames, steps, boards, frames).cpu(), tokens,
            rollout.previous_action[steps, boards].cpu(), actions.cpu(), rollout.reward[steps, boards].cpu(),
            gather_stacks(rollout.frames, following, boards, frames).cpu(), done.cpu(),
        )  # fmt: skip
        return len(steps)

    def replay(self) -> dict[str, torch.Tensor]:
        index, rows = self.memory.sample(self.hparams.replay_batch, self.sampler)
        stack, tokens, previous, action, reward, next_stack, done = zip(*rows, strict=True)
        words, lengths = pad_token_ids(tokens)
        batch = {"stack": torch.stack(stack), "tokens": words, "lengths": lengths, "previous": torch.stack(previous),
                 "action": torch.stack(action), "reward": torch.stack(reward).float(),
                 "next_stack": torch.stack(next_stack), "done": torch.stack(done)}  # fmt: skip
        batch = {k: v.to(self.device) for k, v in batch.items()}
        batch["index"] = torch.from_numpy(index)
        return batch

    def training_step(self, piece: RolloutPiece | RolloutChunk, batch_idx: int) -> torch.Tensor:
        chunk = self.resolve(piece)
        new = self.remember(chunk)
        self.frames_seen += new
        optimizer = self.optimizers()
        losses = []
        for _ in range(max(1, new // self.hparams.replay_batch)):
            batch = self.replay()
            loss, errors = td_errors(self.policy, self.target, batch, self.hparams.gamma)
            self.manual_backward(loss)
            if self.hparams.gradient_clip:
                self.clip_gradients(optimizer, self.hparams.gradient_clip, "norm")
            optimizer.step()
            optimizer.zero_grad()
            self.memory.update(batch["index"].numpy(), errors.cpu().numpy())
            losses.append(loss.detach())
        self.policy.epsilon = self.epsilon()  # for the rollouts to come
        loss = torch.stack(losses).mean()
        acted = chunk.rollout.active
        self.log_dict({"train/loss": loss, "train/epsilon": self.policy.epsilon, "train/frames": float(self.frames_seen),
                       "train/reward": chunk.rollout.reward[acted].mean()}, batch_size=new)  # fmt: skip
        self.log("loss", loss, prog_bar=True, logger=False, batch_size=new)
        return loss

    def on_train_epoch_end(self) -> None:
        self.target.load_state_dict(self.policy.state_dict())  # the paper syncs the target after every epoch

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        # An exported file keeps only the acting network: the target starts as its copy, as after an epoch's sync.
        weights = checkpoint["state_dict"]
        if not any(k.startswith("target.") for k in weights):
            weights.update(
                {f"target.{k[len('policy.') :]}": v for k, v in weights.items() if k.startswith("policy.")}
            )
        self.policy.epsilon = self.epsilon()
