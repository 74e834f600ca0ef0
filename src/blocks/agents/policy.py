"""The adapter that turns a policy network into an agent: it keeps the frame history and the encoded text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from blocks.agents.baselines import Agent
from blocks.corpus.text import Vocabulary, tokenize
from blocks.model.policy import PolicyNetwork
from blocks.render.history import FrameHistory
from blocks.world.task import Task


def encode_tokens(vocab: Vocabulary, instructions: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded token ids ``(B, T)`` and lengths ``(B,)`` of raw instructions."""
    ids = [vocab.encode(tokenize(text)) for text in instructions]
    return pad_token_ids(ids)


def pad_token_ids(ids: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([max(len(x), 1) for x in ids])
    tokens = torch.zeros(len(ids), int(lengths.max()), dtype=torch.long)
    for i, x in enumerate(ids):
        tokens[i, : len(x)] = torch.as_tensor(x, dtype=torch.long)
    return tokens, lengths


class PolicyAgent(Agent):
    """Acts with a policy network: greedy (the evaluation rule) or by sampling block and direction."""

    needs_images = True

    def __init__(
        self,
        policy: PolicyNetwork,
        vocabulary: Vocabulary | Sequence[str],
        frames: int = 5,
        image_size: int = 120,
        greedy: bool = True,
        device: str | torch.device | None = None,
    ):
        self.policy = policy
        self.vocab = vocabulary if isinstance(vocabulary, Vocabulary) else Vocabulary(vocabulary)
        self.frames = frames
        self.image_size = image_size
        self.greedy = greedy
        self.device = torch.device(device) if device is not None else next(policy.parameters()).device

    @classmethod
    def from_checkpoint(cls, path: str, device: str | None = None, **options: Any) -> PolicyAgent:
        """Agent of any learner's checkpoint (the hyperparameters inside rebuild the network)."""
        from pathlib import Path

        from blocks.learn.base import load_learner

        if not path:
            raise ValueError("agent=policy needs a checkpoint: add ckpt_path=<file>.ckpt")
        if not Path(path).is_file():
            raise FileNotFoundError(f"ckpt_path={path}: no such checkpoint file")

        learner = load_learner(path, map_location=device or "cpu")
        return cls(
            learner.policy,
            learner.hparams.vocabulary,
            frames=learner.hparams.network.get("frames", 5),
            image_size=learner.hparams.network.get("image_size", 120),
            **options,
        )

    def begin(
        self, tasks: Sequence[Task], seed: int | None = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks)
        if instructions is None:
            raise ValueError("PolicyAgent needs the instructions")
        self.generator = torch.Generator().manual_seed(0 if seed is None else seed)
        self.history = FrameHistory(len(tasks), self.frames, (3, self.image_size, self.image_size))
        tokens, lengths = encode_tokens(self.vocab, instructions)
        with torch.no_grad():
            self.text = self.policy.encode_instruction(tokens.to(self.device), lengths.to(self.device))

    @torch.no_grad()
    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        self.history.push(observation["image"])
        images = torch.from_numpy(self.history.stack()).to(self.device)
        previous = torch.from_numpy(observation["previous_action"]).to(self.device)
        distribution = self.policy(images, self.text, previous)
        if self.greedy:
            return distribution.greedy().cpu().numpy()
        return distribution.sample(self.generator)[0].cpu().numpy()
