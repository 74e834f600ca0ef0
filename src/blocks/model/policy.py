"""The paper's policy network (section 4 and appendix B; section 9 of docs/environment.md).

Image stack (15 x 120 x 120) -> CNN -> 200; instruction -> word embeddings 150 -> LSTM 250 -> mean of hidden
states; previous action -> block (32) + direction (24) embeddings, NONE at the first step. The concatenation
(506) -> 120 + ReLU -> block logits (20) and direction logits (5). The instruction is encoded once per episode.

Ours, off by default: ``goal_head=True`` adds a linear layer that regresses the moved block's goal from the
hidden layer, trained as an auxiliary loss; ``goal_map=True`` reads the same four numbers off
instruction-modulated maps of the current frame instead (``blocks.model.goal_map``). The action heads never read
either; the goal agent (``blocks.agents.goal``) acts on them. Options that measured no gain (FiLM fusion,
dropout, coordinate planes) left the network: docs/experiments/network-options.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from blocks.errors import ConfigError
from blocks.model.distribution import FactoredActionDistribution
from blocks.model.goal_map import GoalMap
from blocks.world.geometry import BLOCK_SIDE, MAX_BLOCKS, NUM_DIRECTIONS, STOP

GOAL_OUTPUTS = 4  # goal x, z and offset x, z of the moved block
# a CPU batch's instructions are read in this many groups of similar length (encode_instruction)
LENGTH_GROUPS = 4
UNKNOWN_WORD = 1  # the vocabulary's ids: 0 pads, 1 is a word never seen in training (blocks.corpus.text)
INITIALISATIONS = (
    "appendix",
    "release",
)  # the paper's numbers read as variances, or as the release's code ran them


def _truncated_normal(weight: torch.Tensor, std: float) -> None:
    """TensorFlow's ``truncated_normal``: normal with ``std``, redrawn beyond two standard deviations."""
    nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std)


def goal_targets(
    goal: np.ndarray | torch.Tensor, position: np.ndarray | torch.Tensor
) -> np.ndarray | torch.Tensor:
    """What the goal head learns to predict, ``(N, 4)`` float32: the moved block's goal ``(N, 2)`` and its offset from
    where the block stands ``(N, 2)``, in block lengths (board coordinates x, z). Numpy in, numpy out; torch too."""
    if isinstance(goal, torch.Tensor):
        return (torch.cat([goal, goal - position], 1) / BLOCK_SIDE).float()
    return (np.concatenate([goal, goal - position], axis=1) / BLOCK_SIDE).astype(np.float32)


def pad_token_ids(ids: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """The network's text input: token ids padded with 0 to ``(B, T)`` and the lengths ``(B,)`` (at least 1)."""
    lengths = torch.tensor([max(len(x), 1) for x in ids])
    tokens = torch.zeros(len(ids), int(lengths.max()), dtype=torch.long)
    for i, x in enumerate(ids):
        tokens[i, : len(x)] = torch.as_tensor(x, dtype=torch.long)
    return tokens, lengths


def same_padding(size: int, kernel: int, stride: int) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of TensorFlow's SAME padding along one axis."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return out, total // 2, total - total // 2


class ImageEncoder(nn.Module):
    """Three convolutions with SAME padding (8/4, 8/4, 4/2; 32 filters, ReLU) and a linear map to ``out_dim``."""

    def __init__(self, in_channels: int, image_size: int, channels: int = 32, out_dim: int = 200):
        super().__init__()
        layers, self.pads, size = [], [], image_size
        for kernel, stride in ((8, 4), (8, 4), (4, 2)):
            size, before, after = same_padding(size, kernel, stride)
            # Symmetric padding is done inside the convolution; only an odd total needs an explicit (copying) pad.
            symmetric = before == after
            self.pads.append(None if symmetric else (before, after, before, after))
            layers.append(
                nn.Conv2d(in_channels, channels, kernel, stride, padding=before if symmetric else 0)
            )
            in_channels = channels
        # channels-last convolutions run about 25% faster on the CPU (oneDNN) and suit GPU tensor cores too.
        self.convs = nn.ModuleList(layers).to(memory_format=torch.channels_last)
        self.project = nn.Linear(channels * size * size, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous(memory_format=torch.channels_last)
        for pad, conv in zip(self.pads, self.convs, strict=True):
            x = F.relu(conv(x if pad is None else F.pad(x, pad)))
        return self.project(x.contiguous().flatten(1))


def standardize(images: torch.Tensor) -> torch.Tensor:
    """Per-stack (x - mean) / max(std, 1/sqrt(n)) of uint8 stacks ``(B, C, H, W)``, as float32 (channels last).

    One pass converts and re-lays the uint8 input into a fresh channels-last float tensor, two single-pass
    reductions (sum and norm) give the statistics, and the scaling happens in place on that tensor: no
    intermediate as large as the input is allocated (each such allocation faults its 28 MB in again).
    """
    x = torch.empty(
        images.shape, dtype=torch.float32, device=images.device, memory_format=torch.channels_last
    )
    x.copy_(images)
    dims = tuple(range(1, x.dim()))
    n = x[0].numel()
    mean = x.sum(dim=dims) / n
    variance = (torch.linalg.vector_norm(x, dim=dims).square() / n - mean.square()).clamp_min(0.0)
    scale = 1.0 / variance.sqrt().clamp_min(1.0 / math.sqrt(n))
    shape = (-1,) + (1,) * (x.dim() - 1)
    return x.mul_(scale.view(shape)).sub_((mean * scale).view(shape))


class PolicyNetwork(nn.Module):
    """The shared backbone of every learner; see the module docstring for the shape."""

    def __init__(
        self,
        vocab_size: int,
        image_size: int = 120,
        frames: int = 5,
        word_dim: int = 150,
        text_dim: int = 250,
        image_dim: int = 200,
        conv_channels: int = 32,
        block_embedding_dim: int = 32,
        direction_embedding_dim: int = 24,
        hidden_dim: int = 120,
        use_previous_action: bool = True,
        goal_head: bool = False,
        goal_map: bool = False,
        init: str = "appendix",
    ):
        super().__init__()
        self.init = init
        self.frames = frames
        self.use_previous_action = use_previous_action
        self.word_embedding = nn.Embedding(vocab_size, word_dim, padding_idx=0)
        self.lstm = nn.LSTM(word_dim, text_dim, batch_first=True)
        self.image_encoder = ImageEncoder(3 * frames, image_size, conv_channels, image_dim)
        action_dim = 0
        if use_previous_action:
            self.block_embedding = nn.Embedding(MAX_BLOCKS + 1, block_embedding_dim)  # last row: NONE
            self.direction_embedding = nn.Embedding(
                NUM_DIRECTIONS + 2, direction_embedding_dim
            )  # 4 moves, STOP, NONE
            action_dim = block_embedding_dim + direction_embedding_dim
        self.hidden = nn.Linear(image_dim + text_dim + action_dim, hidden_dim)
        self.block_head = nn.Linear(hidden_dim, MAX_BLOCKS)
        self.direction_head = nn.Linear(hidden_dim, NUM_DIRECTIONS + 1)
        # Ours: an auxiliary regression of where the moved block must go, read off the same joint features, so
        # they must encode the goal that the direction depends on (see blocks.learn.supervised; not used to act).
        self.goal_head = nn.Linear(hidden_dim, GOAL_OUTPUTS) if goal_head and not goal_map else None
        # Ours: the same four numbers read off instruction-modulated maps of the current frame (model.goal_map).
        self.goal_map = GoalMap(text_dim, image_size, conv_channels) if goal_map else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The paper's initialisation, in one of two readings (``init``; docs/environment.md section 9).

        ``appendix`` (the default) reads the appendix's 0.005 and 0.004 as variances of the convolutions and the
        pictures' linear layer, the LSTM N(0, 0.01). ``release`` is what the release's code ran: 0.005 and 0.004
        as standard deviations (14 and 16 times smaller), TensorFlow's ``BasicLSTMCell`` (Glorot-uniform over the
        joint [input, state] kernel, zero biases, a forget bias of 1), padding and the unknown word zero. From
        ``release`` the picture path dies within one epoch of SUPERVISED here (no convolution of the third layer
        ever active again): docs/experiments/release-fidelity.md.
        """
        if self.init not in INITIALISATIONS:  # checked here: every network built on this one calls it
            raise ConfigError(f"network.init={self.init!r}: one of {', '.join(INITIALISATIONS)}")
        release = self.init == "release"
        conv_std, project_std = (0.005, 0.004) if release else (math.sqrt(0.005), math.sqrt(0.004))
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                _truncated_normal(module.weight, conv_std)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.01)
                nn.init.zeros_(module.bias)
        _truncated_normal(self.image_encoder.project.weight, project_std)
        nn.init.normal_(self.word_embedding.weight, std=1.0)
        size = self.lstm.hidden_size
        limit = math.sqrt(
            6.0 / (self.lstm.input_size + size + 4 * size)
        )  # Glorot over the (in + h, 4h) kernel
        for name, parameter in self.lstm.named_parameters():
            if "bias" in name:
                nn.init.zeros_(parameter)
            elif release:
                nn.init.uniform_(parameter, -limit, limit)
            else:
                nn.init.normal_(parameter, std=0.01)
        if release:
            with torch.no_grad():
                self.word_embedding.weight[[0, UNKNOWN_WORD]] = 0.0
                self.lstm.bias_ih_l0[size : 2 * size] = 1.0  # torch's gate order i, f, g, o: the forget gate
        for name in (
            "block_embedding",
            "direction_embedding",
        ):  # the previous action's (absent in an ablation)
            if hasattr(self, name):
                nn.init.normal_(getattr(self, name).weight, std=0.001)

    def reset_direction_head(self) -> None:
        """Re-initialise the direction layer (the bandit starts from a supervised model with a fresh one)."""
        nn.init.normal_(self.direction_head.weight, std=0.01)
        nn.init.zeros_(self.direction_head.bias)

    def encode_instruction(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Mean of the LSTM hidden states over the real tokens: ``(B, T) -> (B, text_dim)``.

        Padding sits after the words and the LSTM reads left to right, so the states of the real tokens do not
        depend on it: running the padded batch and masking is exact, and faster than packing. On the CPU a batch
        is read in ``LENGTH_GROUPS`` groups of similar length, each padded only to its own longest: a batch of
        the corpus's instructions pads to about 2.5x its mean length, and the groups cut the recurrence's time by
        a quarter (docs/experiments/engine.md). The result is the same to float rounding.
        """
        lengths = lengths.clamp_min(1).to(tokens.device)
        if tokens.device.type != "cpu" or len(tokens) < 2 * LENGTH_GROUPS:
            return self._encode_padded(tokens, lengths)
        order = torch.argsort(lengths, stable=True)
        groups = order.chunk(LENGTH_GROUPS)
        parts = [self._encode_padded(tokens[g, : int(lengths[g].max())], lengths[g]) for g in groups]
        return torch.cat(parts)[torch.argsort(order)]

    def _encode_padded(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        # In float32 even under bf16 autocast: oneDNN has no bf16 LSTM on CPUs without bf16 units.
        with torch.autocast(tokens.device.type, enabled=False):
            hidden, _ = self.lstm(self.word_embedding(tokens).float())
        mask = torch.arange(tokens.shape[1], device=tokens.device)[None, :] < lengths[:, None]
        return (hidden * mask[..., None]).sum(dim=1) / lengths[:, None].to(hidden.dtype)

    def embed_previous_action(self, previous: torch.Tensor) -> torch.Tensor:
        """Embeddings of previous action ids ``(B,)``; -1 is NONE. STOP has direction STOP and block NONE."""
        none = previous < 0
        is_stop = previous == STOP
        block = torch.where(none | is_stop, torch.full_like(previous, MAX_BLOCKS), previous // NUM_DIRECTIONS)
        direction = torch.where(is_stop, torch.full_like(previous, NUM_DIRECTIONS), previous % NUM_DIRECTIONS)
        direction = torch.where(none, torch.full_like(previous, NUM_DIRECTIONS + 1), direction)
        return torch.cat([self.block_embedding(block), self.direction_embedding(direction)], dim=1)

    def joint_features(
        self, images: torch.Tensor, instruction: torch.Tensor, previous_action: torch.Tensor
    ) -> torch.Tensor:
        """The hidden layer ``(B, hidden_dim)`` both heads read, from uint8 image stacks ``(B, 15, H, W)``."""
        parts = [self.image_encoder(standardize(images)), instruction]
        if self.use_previous_action:
            parts.append(self.embed_previous_action(previous_action))
        return F.relu(self.hidden(torch.cat(parts, dim=1)))

    def action_distribution(self, features: torch.Tensor) -> FactoredActionDistribution:
        return FactoredActionDistribution(self.block_head(features), self.direction_head(features))

    def goal_loss(
        self, target: torch.Tensor, features: torch.Tensor, images: torch.Tensor, instruction: torch.Tensor
    ) -> torch.Tensor:
        """The goal regression's loss against ``goal_targets``: smooth L1 for the linear head, plus the maps'
        cross-entropy for the goal map (see :meth:`GoalMap.loss`)."""
        if self.goal_map is not None:
            return self.goal_map.loss(*self.goal_map_inputs(features, images, instruction), target)
        return F.smooth_l1_loss(self.predict_goal(features), target)

    def goal_map_inputs(
        self, features: torch.Tensor, images: torch.Tensor | None, instruction: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The current frame (standardised), the instruction and the block the policy would move."""
        if images is None or instruction is None:
            raise ValueError("the goal map reads the images and the instruction: pass both")
        return standardize(images[:, -3:]), instruction, self.block_head(features).argmax(1)

    @property
    def has_goal_head(self) -> bool:
        return self.goal_head is not None or self.goal_map is not None

    def predict_goal(
        self,
        features: torch.Tensor,
        images: torch.Tensor | None = None,
        instruction: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``(B, 4)``: the moved block's goal (x, z) and its offset from the block (x, z), in block lengths.

        The linear goal head reads the hidden layer ``features``; the goal map reads the current frame of the
        uint8 ``images`` stack and the encoded ``instruction``.
        """
        if self.goal_map is not None:
            return self.goal_map(*self.goal_map_inputs(features, images, instruction))
        if self.goal_head is None:
            raise RuntimeError("this network has no goal head: build it with network.goal_head=true")
        return self.goal_head(features)

    def forward(
        self, images: torch.Tensor, instruction: torch.Tensor, previous_action: torch.Tensor
    ) -> FactoredActionDistribution:
        """Action distribution from uint8 image stacks ``(B, 15, H, W)``, encoded instructions and previous actions."""
        return self.action_distribution(self.joint_features(images, instruction, previous_action))
