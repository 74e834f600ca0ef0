"""The adapter that turns policy networks into an agent: it keeps the frame history and the encoded text.

Given several networks (an ensemble, ours) the agent averages their block and direction log-probabilities, a
product of experts renormalised by :class:`FactoredActionDistribution`; each network reads the same frames
through its own vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from blocks.agents.baselines import Agent, Seed, episode_seeds
from blocks.corpus.text import Vocabulary, tokenize
from blocks.errors import ConfigError
from blocks.model.checkpoint import read_checkpoint
from blocks.model.distribution import FactoredActionDistribution
from blocks.model.policy import PolicyNetwork, pad_token_ids
from blocks.render.factory import render_of
from blocks.render.history import FrameHistory
from blocks.world.task import Task


def encode_tokens(vocab: Vocabulary, instructions: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded token ids ``(B, T)`` and lengths ``(B,)`` of raw instructions."""
    return pad_token_ids([vocab.encode(tokenize(text)) for text in instructions])


def checkpoint_paths(path: str | Sequence[str] | None) -> list[str]:
    """One checkpoint path or a list of them (``ckpt_path=[a.ckpt,b.ckpt]`` on the command line)."""
    paths = [path] if isinstance(path, str) or path is None else list(path)
    if not paths or any(not p for p in paths):
        raise ConfigError("a learned agent needs a checkpoint: add ckpt_path=<file>.ckpt (or a list of them)")
    return [str(p) for p in paths]


class PolicyAgent(Agent):
    """Acts with a policy network, or an ensemble of them: greedy (the evaluation rule) or by sampling.

    ``policy`` is one network with its ``vocabulary``, or a sequence of networks with a sequence of vocabularies.
    """

    needs_images = True

    def __init__(
        self,
        policy: PolicyNetwork | Sequence[PolicyNetwork],
        vocabulary: Vocabulary | Sequence[str] | Sequence[Vocabulary | Sequence[str]],
        frames: int = 5,
        image_size: int = 120,
        greedy: bool = True,
        device: str | torch.device | None = None,
        render: str = "flat",
    ):
        """``render`` names the picture the networks learnt from (``data.render``); evaluation draws it."""
        single = isinstance(policy, PolicyNetwork)
        self.policies = [policy] if single else list(policy)
        vocabularies = [vocabulary] if single else list(vocabulary)
        if not self.policies or len(vocabularies) != len(self.policies):
            raise ValueError(
                f"an ensemble needs one vocabulary per network: got {len(self.policies)} networks and "
                f"{len(vocabularies)} vocabularies"
            )
        self.vocabularies = [v if isinstance(v, Vocabulary) else Vocabulary(v) for v in vocabularies]
        self.frames = frames
        self.image_size = image_size
        self.render = render
        self.greedy = greedy
        self.device = (
            torch.device(device) if device is not None else next(self.policies[0].parameters()).device
        )

    @property
    def policy(self) -> PolicyNetwork:
        """The first (for one network, the only) network."""
        return self.policies[0]

    @property
    def vocab(self) -> Vocabulary:
        return self.vocabularies[0]

    @classmethod
    def from_checkpoint(
        cls, path: str | Sequence[str], device: str | None = None, **options: Any
    ) -> PolicyAgent:
        """Agent of any learner's checkpoint, or an ensemble of several (the record inside rebuilds each network)."""
        checkpoints = [read_checkpoint(p, map_location=device or "cpu") for p in checkpoint_paths(path)]
        shapes = {(c.frames, c.image_size, render_of(c.hparams)) for c in checkpoints}
        if len(shapes) > 1:
            raise ConfigError(
                f"the ensemble's networks read different inputs (frames, image size, picture): {sorted(shapes)}"
            )
        frames, image_size, render = shapes.pop()
        options.setdefault("render", render)
        return cls(
            [c.build().to(device or "cpu") for c in checkpoints],
            [c.vocabulary for c in checkpoints],
            frames=frames,
            image_size=image_size,
            device=device,
            **options,
        )

    def begin(
        self, tasks: Sequence[Task], seed: Seed = None, instructions: Sequence[str] | None = None
    ) -> None:
        super().begin(tasks)
        if instructions is None:
            raise ValueError("PolicyAgent needs the instructions")
        # A sampling policy draws from one stream per batch: the batch's first episode's seed.
        self.generator = torch.Generator().manual_seed(episode_seeds(seed, len(tasks))[0] % 2**63)
        self.history = FrameHistory(len(tasks), self.frames, (3, self.image_size, self.image_size))
        with torch.no_grad():
            self.texts = []  # per network: the encoded instructions (B, text_dim)
            for policy, vocab in zip(self.policies, self.vocabularies, strict=True):
                tokens, lengths = encode_tokens(vocab, instructions)
                self.texts.append(policy.encode_instruction(tokens.to(self.device), lengths.to(self.device)))

    def read(
        self, observation: dict[str, np.ndarray], goal: bool = False
    ) -> tuple[FactoredActionDistribution, torch.Tensor | None]:
        """Push the frame; the (ensemble-averaged) action distribution and, with ``goal``, the mean goal
        prediction ``(B, 4)`` of the networks' goal heads."""
        self.history.push(observation["image"])
        images = torch.from_numpy(self.history.stack()).to(self.device)
        previous = torch.from_numpy(observation["previous_action"]).to(self.device)
        distributions, goals = [], []
        for policy, text in zip(self.policies, self.texts, strict=True):
            features = policy.joint_features(images, text, previous)
            distributions.append(policy.action_distribution(features))
            if goal:
                goals.append(policy.predict_goal(features, images, text))
        mean_goal = torch.stack(goals).mean(0) if goal else None
        return type(distributions[0]).mean_of(distributions), mean_goal  # factored, or a Q-network's

    @torch.no_grad()
    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        distribution, _ = self.read(observation)
        if self.greedy:
            return distribution.greedy().cpu().numpy()
        return distribution.sample(self.generator)[0].cpu().numpy()
