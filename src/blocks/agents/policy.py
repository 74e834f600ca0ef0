"""The adapter that turns policy networks into an agent: it keeps the frame history and the encoded text.

Given several networks (an ensemble, ours) the agent averages their block and direction log-probabilities, a
product of experts renormalised by :class:`FactoredActionDistribution`; each network reads the same frames
through its own vocabulary. With ``mirror_views`` (ours) each network also reads the reflected pictures with the
reflected instruction ("left" <-> "right", ...), and its directions are reflected back before the average: an
ensemble of views of one network.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from blocks.agents.baselines import Agent
from blocks.corpus.mirror import check_mirrors, direction_permutation, mirror_actions, mirror_words
from blocks.corpus.text import Vocabulary, tokenize
from blocks.model.distribution import FactoredActionDistribution
from blocks.model.policy import PolicyNetwork
from blocks.render.camera import Camera
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


def checkpoint_paths(path: str | Sequence[str] | None) -> list[str]:
    """One checkpoint path or a list of them (``ckpt_path=[a.ckpt,b.ckpt]`` on the command line), checked."""
    paths = [path] if isinstance(path, str) or path is None else list(path)
    if not paths or any(not p for p in paths):
        raise ValueError("a learned agent needs a checkpoint: add ckpt_path=<file>.ckpt (or a list of them)")
    for p in paths:
        if not Path(p).is_file():
            raise FileNotFoundError(f"ckpt_path={p}: no such checkpoint file")
    return [str(p) for p in paths]


class PolicyAgent(Agent):
    """Acts with a policy network, or an ensemble of them: greedy (the evaluation rule) or by sampling.

    ``policy`` is one network with its ``vocabulary``, or a sequence of networks with a sequence of vocabularies.
    ``mirror_views`` names the reflections each network reads (``none``, ``x``, ``z``, ``xz``; default the
    picture as it is).
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
        mirror_views: Sequence[str] = ("none",),
    ):
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
        self.greedy = greedy
        self.mirror_views = check_mirrors(mirror_views, key="agent.mirror_views")
        self.camera = Camera(image_size)
        self.device = (
            torch.device(device) if device is not None else next(self.policies[0].parameters()).device
        )
        # Per reflected view, how to turn its answer back: the direction order, and the signs of the goal head's
        # (goal x, goal z, offset x, offset z), each flipped with its axis. Built once, not at every step.
        self.reflect_back = {
            view: (
                torch.as_tensor(direction_permutation(view), device=self.device),
                torch.tensor([-1.0 if axis in view else 1.0 for axis in "xzxz"], device=self.device),
            )
            for view in self.mirror_views
            if view != "none"
        }

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
        """Agent of any learner's checkpoint, or an ensemble of several (the hyperparameters inside rebuild
        each network)."""
        from blocks.learn.base import load_learner

        learners = [load_learner(p, map_location=device or "cpu") for p in checkpoint_paths(path)]
        shapes = {
            (n.get("frames", 5), n.get("image_size", 120)) for n in (x.hparams.network for x in learners)
        }
        if len(shapes) > 1:
            raise ValueError(
                f"the ensemble's networks read different inputs (frames, image size): {sorted(shapes)}"
            )
        frames, image_size = shapes.pop()
        return cls(
            [x.policy for x in learners],
            [x.hparams.vocabulary for x in learners],
            frames=frames,
            image_size=image_size,
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
        self.texts: dict[str, list[torch.Tensor]] = {}  # per view, per network
        with torch.no_grad():
            for view in self.mirror_views:
                seen = [mirror_words(text, view) for text in instructions] if view != "none" else instructions
                self.texts[view] = []
                for policy, vocab in zip(self.policies, self.vocabularies, strict=True):
                    tokens, lengths = encode_tokens(vocab, seen)
                    text = policy.encode_instruction(tokens.to(self.device), lengths.to(self.device))
                    self.texts[view].append(text)

    def read(
        self, observation: dict[str, np.ndarray], goal: bool = False
    ) -> tuple[FactoredActionDistribution, torch.Tensor | None]:
        """Push the frame; the (ensemble-averaged) action distribution and, with ``goal``, the mean goal
        prediction ``(B, 4)`` of the networks' goal heads, every view reflected back to the real board."""
        self.history.push(observation["image"])
        stack = self.history.stack()
        distributions, goals = [], []
        for view in self.mirror_views:
            images, previous = stack, observation["previous_action"]
            if view != "none":
                images, previous = self.camera.reflect(stack, view), mirror_actions(previous, view)
            images = torch.from_numpy(images).to(self.device)
            previous = torch.from_numpy(previous).to(self.device)
            for policy, text in zip(self.policies, self.texts[view], strict=True):
                features = policy.joint_features(images, text, previous)
                seen = policy.action_distribution(features)
                seen_goal = policy.predict_goal(features, images, text) if goal else None
                if view != "none":
                    directions, signs = self.reflect_back[view]
                    seen = FactoredActionDistribution(
                        seen.block_log_probs, seen.direction_log_probs[:, directions]
                    )
                    seen_goal = seen_goal * signs if goal else None
                distributions.append(seen)
                goals.append(seen_goal)
        mean_goal = (goals[0] if len(goals) == 1 else torch.stack(goals).mean(0)) if goal else None
        return FactoredActionDistribution.mean_of(distributions), mean_goal

    @torch.no_grad()
    def act(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        distribution, _ = self.read(observation)
        if self.greedy:
            return distribution.greedy().cpu().numpy()
        return distribution.sample(self.generator)[0].cpu().numpy()
