"""A spatial goal reader (ours): where on the board the instruction sends the moved block, as a map over the picture.

The paper's network squeezes the picture into 200 numbers before it meets the words, and a linear goal head on
that vector learns the training boards by heart (goal error 0.6 block lengths on training demonstrations, 2.8 on
tuning ones). Here the instruction modulates (FiLM) every convolution over the current frame at a 4-pixel grid,
with coordinate planes and dilated convolutions that widen the view to a few blocks. Two softmax maps over the
grid come out: where the moved block stands now and where it must go. Their expected cell centres, mapped to the
board through the overhead camera, give the same four numbers as the linear goal head (goal x, z and the offset
from the block to the goal, in block lengths), so the goal loss and the goal agent work unchanged. Convolutions
share weights across the picture: "left of the SRI block" is the same pattern wherever that block stands.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from blocks.render.camera import Camera
from blocks.world.geometry import BLOCK_SIDE, MAX_BLOCKS

CELL = 4  # pixels per map cell: 30 x 30 cells for a 120-pixel picture, about half a block each
DILATIONS = (1, 2, 4, 1)  # the goal branch's 3x3 convolutions; together they see about 8 blocks across


def cell_centres(image_size: int) -> torch.Tensor:
    """``(2, cells * cells)``: board x and z, in block lengths, of every cell centre (block top faces' height)."""
    centre = (np.arange(image_size // CELL) + 0.5) * CELL
    rows, columns = np.meshgrid(
        centre, centre, indexing="ij"
    )  # rows go down the picture, z goes up the board
    x, z = Camera(image_size).unproject(rows.ravel(), columns.ravel(), BLOCK_SIDE)
    return torch.from_numpy(np.stack([x, z]) / BLOCK_SIDE).float()


class GoalMap(nn.Module):
    """Convolutions over one frame -> the moved block's place and goal (see the module docstring).

    A shared stem reduces the frame to cells. The goal branch is modulated by the instruction and the block to
    move; the place branch only by the block to move (the block head's choice), so it must learn to find that
    block's face in the picture: modulated by the instruction too, it learnt the training boards' places by heart
    (offset error 0.8 block lengths on training demonstrations, 3.6 on tuning ones, against 0.3 and 1.3 for the
    goal).
    """

    def __init__(self, text_dim: int, image_size: int = 120, channels: int = 32):
        super().__init__()
        if image_size % CELL:
            raise ValueError(f"the goal map needs an image size divisible by {CELL}, got {image_size}")
        self.channels = channels
        self.stem = nn.Sequential(  # 3 colours + 2 coordinate planes -> cells
            nn.Conv2d(5, channels, 5, stride=2, padding=2),
            nn.ReLU(),
            nn.Conv2d(channels, channels, 5, stride=2, padding=2),
        )
        self.goal_convs = nn.ModuleList(
            nn.Conv2d(channels, channels, 3, padding=d, dilation=d) for d in DILATIONS
        )
        self.place_convs = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=1) for _ in range(2))
        # A scale and a shift per channel, after the stem and after each convolution.
        goal_modulations = (len(self.goal_convs) + 1) * 2 * channels
        place_modulations = (len(self.place_convs) + 1) * 2 * channels
        self.text_film = nn.Linear(text_dim, goal_modulations)
        self.block_film = nn.Embedding(MAX_BLOCKS, goal_modulations + place_modulations)
        self.goal_out, self.place_out = nn.Conv2d(channels, 1, 1), nn.Conv2d(channels, 1, 1)
        self.log_temperature = nn.Parameter(torch.zeros(2))
        axis = torch.linspace(-1.0, 1.0, image_size)
        planes = torch.stack([axis[None, :].expand(image_size, -1), axis[:, None].expand(-1, image_size)])
        self.register_buffer("planes", planes[None], persistent=False)
        self.register_buffer("centres", cell_centres(image_size), persistent=False)
        nn.init.zeros_(self.text_film.weight)
        nn.init.zeros_(self.text_film.bias)
        nn.init.zeros_(self.block_film.weight)

    def forward(self, frame: torch.Tensor, text: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
        """``(B, 4)`` goal x, z and offset x, z in block lengths, from standardised frames ``(B, 3, H, W)``, the
        encoded instruction and the moved block's id ``(B,)``."""
        return self.read(self.logits(frame, text, block))

    def read(self, logits: torch.Tensor) -> torch.Tensor:
        """The four numbers of ``forward`` from the maps' logits ``(B, 2, cells)``: expected cell centres."""
        place, goal = (F.softmax(logits, dim=2) @ self.centres.T).unbind(1)  # (B, 2) each, x and z
        return torch.cat([goal, goal - place], dim=1)

    def loss(
        self, frame: torch.Tensor, text: torch.Tensor, block: torch.Tensor, target: torch.Tensor
    ) -> torch.Tensor:
        """Smooth L1 on the four numbers plus cross-entropy of each map against the cell that holds the truth:
        the regression alone learns slowly from diffuse maps, whose expectation sits near the board's centre."""
        logits = self.logits(frame, text, block)
        goal, offset = target[:, :2], target[:, 2:]
        cells = torch.stack([self.nearest_cell(goal - offset), self.nearest_cell(goal)], dim=1)  # (B, 2)
        cross_entropy = F.cross_entropy(logits.flatten(0, 1), cells.flatten())
        return F.smooth_l1_loss(self.read(logits), target) + cross_entropy

    def nearest_cell(self, points: torch.Tensor) -> torch.Tensor:
        """Index of the cell whose centre lies nearest each board point ``(B, 2)`` (block lengths)."""
        return torch.cdist(points, self.centres.T).argmin(dim=1)

    def logits(self, frame: torch.Tensor, text: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
        """``(B, 2, cells)``: where the block stands, where it must go."""
        cells = self.stem(
            torch.cat([frame, self.planes.expand(len(frame), -1, -1, -1).to(frame.dtype)], dim=1)
        )
        by_block = self.block_film(block)
        goal_film = self.text_film(text) + by_block[:, : self.text_film.out_features]
        place_film = by_block[:, self.text_film.out_features :]
        place = self.place_out(self.modulated(cells, self.place_convs, place_film))
        goal = self.goal_out(self.modulated(cells, self.goal_convs, goal_film))
        return torch.cat([place, goal], dim=1).flatten(2) / self.log_temperature.exp()[:, None]

    def modulated(self, x: torch.Tensor, convs: nn.ModuleList, film: torch.Tensor) -> torch.Tensor:
        """``relu((1 + scale) * x + shift)`` after the stem and after each convolution (FiLM)."""
        modulations = film.view(len(x), -1, 2, self.channels, 1, 1).unbind(1)
        for layer, conv in enumerate((None, *convs)):
            if conv is not None:
                x = conv(x)
            scale, shift = modulations[layer].unbind(1)
            x = F.relu(x * (1.0 + scale) + shift)
        return x
