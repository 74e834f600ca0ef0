"""Reading the board (ours): where each of the 20 labels stands, from one picture.

The paper's network and our goal maps had to learn to find labelled blocks from a few thousand corpus boards, and
they learnt those boards by heart instead (docs/experiments/goal-map.md). The simulator can draw as many labelled
boards as we like, so this reader is trained on them alone (``blocks.learn.perception``): a fully convolutional
network classifies every cell of a grid over the picture (4 x 4 pixels, about half a block face) as background
or one of the 20 labels. Weights are shared across the picture, so a logo is read the same wherever it stands.
:func:`cell_centres` turns the cell probabilities into one picture position per label (the probability-weighted
centre of the 3 x 3 cells around the most confident one), mapped to the board through the camera;
:meth:`BoardReader.read` also says whether each label is there, and reads a picture several times, shifted by a
pixel each time, to place blocks finer than the grid.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from blocks.render.camera import Camera
from blocks.render.factory import face_height
from blocks.world.geometry import BLOCK_SIDE, MAX_BLOCKS

CELL = 4  # pixels per cell: a 120-pixel picture gives 30 x 30 cells
NUM_CLASSES = MAX_BLOCKS + 1  # 0: background, 1 + b: the block with index b (label b + 1)
SHIFTS = 4  # readings of one picture, shifted 0, 1, 2, 3 pixels: a quarter cell apart
DILATIONS = (1, 2, 1)


class BoardReader(nn.Module):
    """uint8 frames ``(B, 3, H, W)`` -> cell logits ``(B, 21, H / 4, W / 4)`` and a logo logit ``(B,)`` (logo
    boards against digit boards: the labels' meaning depends on it).

    One full-resolution convolution keeps the strokes of two-digit numbers (about 3 pixels wide), two strided
    ones reach the cell grid, and three more (one dilated) see a whole face and its neighbours.
    """

    def __init__(self, image_size: int = 120, channels: int = 48, render: str = "flat"):
        """``render``: the picture it reads (``data.render``); positions are read at that picture's face height."""
        super().__init__()
        if image_size % CELL:
            raise ValueError(f"the board reader needs an image size divisible by {CELL}, got {image_size}")
        self.image_size = image_size
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, channels, 3, stride=2, padding=1),
            nn.ReLU(),
        )
        self.context = nn.ModuleList(
            nn.Conv2d(channels, channels, 3, padding=d, dilation=d) for d in DILATIONS
        )
        self.classify = nn.Conv2d(channels, NUM_CLASSES, 1)
        self.decoration = nn.Linear(channels, 1)
        self.camera = Camera(image_size)
        self.reads(render)
        self.to(memory_format=torch.channels_last)  # about a quarter faster on the CPU (oneDNN)

    def reads(self, render: str) -> None:
        """Read pictures drawn by ``render`` (a name of ``blocks.render.factory``)."""
        self.render, self.face_height = render, face_height(render)

    def forward(self, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.stem((frames.float() / 127.5 - 1.0).contiguous(memory_format=torch.channels_last))
        for conv in self.context:
            x = F.relu(x + conv(x))  # residual: each layer adds context to what the cell already holds
        return self.classify(x), self.decoration(x.mean(dim=(2, 3))).squeeze(1)

    @torch.no_grad()
    def read(
        self, frames: torch.Tensor, shifts: int = SHIFTS
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(positions ``(B, 20, 2)`` on the board, present ``(B, 20)``, logo ``(B,)``) of uint8 frames.

        One reading places a block only to within its cells (a face covers one or two 4-pixel cells each way).
        The picture is also read moved 1 .. ``shifts`` - 1 pixels down and right (edge pixels repeated), the shift
        taken back from each reading, and a label's position is the median of its readings: on the tuning
        split's boards the median error falls from 0.21 to 0.03 block lengths
        (docs/experiments/execution.md). Presence and decoration come from the unshifted picture."""
        size, pixels = frames.shape[-1], frames.float()
        copies = [pixels] + [
            F.pad(pixels, (s, 0, s, 0), mode="replicate")[..., :size, :size] for s in range(1, shifts)
        ]
        cells, logo = self(torch.cat(copies))
        rows, columns, confidence = cell_centres(cells)
        back = torch.arange(shifts, dtype=rows.dtype, device=rows.device).repeat_interleave(len(frames))
        rows = (rows - back[:, None]).view(shifts, len(frames), -1)
        columns = (columns - back[:, None]).view(shifts, len(frames), -1)
        # A shifted reading more than a cell from the unshifted one found another face (a misread number):
        # it does not vote.
        astray = torch.maximum((rows - rows[0]).abs(), (columns - columns[0]).abs()) > CELL
        rows = rows.masked_fill(astray, float("nan")).nanquantile(0.5, dim=0)
        columns = columns.masked_fill(astray, float("nan")).nanquantile(0.5, dim=0)
        positions = board_positions(rows, columns, self.camera, self.face_height)
        return positions, confidence[: len(frames)] > 0.5, logo[: len(frames)] > 0


def cell_centres(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Picture (row, column) ``(B, 20)`` of each label from cell logits ``(B, 21, G, G)``, and its most confident
    cell's probability.

    The probability-weighted centre of the 3 x 3 cells around the most confident one, plus half a pixel: a cell
    is labelled when its centre pixel lies in the face's half-open box of pixels (``cell_targets``), so the
    labelled cells sit half a pixel before the face's centre on average."""
    probs = logits.softmax(dim=1)[:, 1:]  # (B, 20, G, G)
    batch, labels, grid, _ = probs.shape
    flat = probs.flatten(2)
    confidence, best = flat.max(dim=-1)
    offsets = torch.arange(-1, 2, device=logits.device)
    rows = ((best // grid)[..., None] + offsets).clamp(0, grid - 1)  # (B, 20, 3)
    cols = ((best % grid)[..., None] + offsets).clamp(0, grid - 1)
    cells = rows[..., :, None] * grid + cols[..., None, :]  # (B, 20, 3, 3)
    weights = flat.gather(-1, cells.flatten(2)).view(batch, labels, 3, 3)
    total = weights.sum(dim=(-1, -2)).clamp_min(1e-9)
    centre_row = ((rows[..., :, None].float() + 0.5) * CELL * weights).sum(dim=(-1, -2)) / total + 0.5
    centre_col = ((cols[..., None, :].float() + 0.5) * CELL * weights).sum(dim=(-1, -2)) / total + 0.5
    return centre_row, centre_col, confidence


def board_positions(
    rows: torch.Tensor, columns: torch.Tensor, camera: Camera, height: float = BLOCK_SIDE
) -> torch.Tensor:
    """Board ``(x, z)`` ``(..., 2)`` of top-face centres at picture ``(row, column)``, faces ``height`` high."""
    x, z = camera.unproject(rows.cpu().numpy(), columns.cpu().numpy(), height)
    return torch.from_numpy(np.stack([x, z], axis=-1)).float().to(rows.device)
