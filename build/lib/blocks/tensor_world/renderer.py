"""Draw a batch of boards on the device with one scatter and one gather (the numpy ``Renderer``'s pictures).

Every block's top face is a 7 or 8 pixel square (``blocks.render.renderer``). For each board, block and pixel of
its face we compute the picture pixel it lands on and a key ``(block + 1) * K + face pixel``; a scatter keeps the
largest key per picture pixel (the later block wins where faces meet, as in the numpy loop) and a gather reads
its colour from a table of all faces, padded to the largest size; only the winners are written over the
background, so the work grows with the faces, not the picture.
"""

from __future__ import annotations

import math

import torch

from blocks.render.camera import CAMERA_X_OFFSET
from blocks.render.release import ReleaseRenderer
from blocks.render.renderer import Renderer
from blocks.world.geometry import BLOCK_SIDE, MAX_BLOCKS

DECORATIONS = ("digit", "logo")  # index 1 = logo boards, as ``logo`` is True


class TensorRenderer:
    """``render(positions (N, 20, 2) float64, present (N, 20), logo (N,))`` -> ``(N, 3, size, size)`` uint8."""

    def __init__(self, renderer: Renderer, device: torch.device | str = "cpu"):
        self.size = renderer.size
        self.camera = renderer.camera
        self.device = torch.device(device)
        face = self.camera.pixels_per_unit(BLOCK_SIDE) * BLOCK_SIDE
        self.smallest, largest = math.floor(face), math.ceil(face)
        self.sizes = largest - self.smallest + 1
        self.patch = largest
        # table[decoration, height - smallest, width - smallest, block, dy, dx] = RGB, zero where dy/dx >= size
        table = torch.zeros(
            (len(DECORATIONS), self.sizes, self.sizes, MAX_BLOCKS, largest, largest, 3), dtype=torch.uint8
        )
        for d, decoration in enumerate(DECORATIONS):
            for h in range(self.sizes):
                for w in range(self.sizes):
                    faces = renderer._face_stack(decoration, self.smallest + h, self.smallest + w)
                    table[d, h, w, :, : self.smallest + h, : self.smallest + w] = torch.from_numpy(
                        faces.transpose(0, 2, 3, 1)
                    )
        self.colors = table.reshape(-1, 3).to(self.device)
        self.entries = len(self.colors)  # K: keys (block + 1) * K + entry never collide
        self.background = torch.from_numpy(renderer.background).reshape(3, -1).to(self.device)
        self.offsets = torch.arange(largest, device=self.device)

    def face_boxes(self, positions: torch.Tensor) -> torch.Tensor:
        """(row0, row1, col0, col1) ``(..., 4)`` of block faces: ``Renderer.face_boxes`` in torch, same rounding."""
        half = BLOCK_SIDE / 2
        scale = self.camera.pixels_per_unit(BLOCK_SIDE)
        centre = self.size / 2
        x, z = positions[..., 0], positions[..., 1]
        top = centre - scale * (z + half)
        bottom = centre - scale * (z - half)
        left = centre + scale * ((x - half) - CAMERA_X_OFFSET)
        right = centre + scale * ((x + half) - CAMERA_X_OFFSET)
        return torch.round(torch.stack([top, bottom, left, right], dim=-1)).long()

    def render(self, positions: torch.Tensor, present: torch.Tensor, logo: torch.Tensor) -> torch.Tensor:
        n, size, p = positions.shape[0], self.size, self.patch
        boxes = self.face_boxes(positions)  # (N, 20, 4)
        r0, c0 = boxes[..., 0], boxes[..., 2]
        # Every face is floor or ceil of the face size wide (its edges are rounded one face apart), so the table
        # covers them all and no check (a host sync on a GPU) is needed here.
        height, width = boxes[..., 1] - r0, boxes[..., 3] - c0
        dy = self.offsets.view(1, 1, p, 1)
        dx = self.offsets.view(1, 1, 1, p)
        rows = r0[..., None, None] + dy  # (N, 20, p, 1)
        cols = c0[..., None, None] + dx  # (N, 20, 1, p)
        valid = (
            present[..., None, None]
            & (dy < height[..., None, None]) & (dx < width[..., None, None])
            & (rows >= 0) & (rows < size) & (cols >= 0) & (cols < size)
        )  # fmt: skip
        pixel = torch.where(valid, rows * size + cols, size * size)  # invalid: a spare slot past the picture
        block = torch.arange(MAX_BLOCKS, device=positions.device).view(1, MAX_BLOCKS, 1, 1)
        table_face = (
            (logo.long().view(n, 1) * self.sizes + (height - self.smallest)) * self.sizes
            + (width - self.smallest)
        ) * MAX_BLOCKS + block[..., 0, 0]  # (N, 20): which face in the table
        entry = (table_face[..., None, None] * p + dy) * p + dx
        key = torch.where(valid, (block + 1) * self.entries + entry, 0)
        pixel, key = pixel.reshape(n, -1), key.reshape(n, -1)
        owner = torch.zeros((n, size * size + 1), dtype=torch.long, device=positions.device)
        owner.scatter_reduce_(1, pixel, key, reduce="amax")
        # Only each picture pixel's winning face pixel is written; the rest go to the spare slot.
        pixel = torch.where(valid.reshape(n, -1) & (owner.gather(1, pixel) == key), pixel, size * size)
        colors = self.colors[key % self.entries].transpose(1, 2)  # (N, 3, faces' pixels)
        image = torch.empty((n, 3, size * size + 1), dtype=torch.uint8, device=positions.device)
        image[:, :, : size * size] = self.background
        image.scatter_(2, pixel[:, None, :].expand(-1, 3, -1), colors)
        return image[:, :, : size * size].reshape(n, 3, size, size)


class HostRenderer:
    """The release's pictures for the torch world: drawn by ``ReleaseRenderer`` on the host, then moved to the
    device, so both worlds see the same pixels (a host round trip per step: slower than the flat picture's
    scatter on a GPU)."""

    def __init__(self, renderer: ReleaseRenderer, device: torch.device | str = "cpu"):
        self.renderer = renderer
        self.size = renderer.size
        self.camera = renderer.camera
        self.device = torch.device(device)

    def render(self, positions: torch.Tensor, present: torch.Tensor, logo: torch.Tensor) -> torch.Tensor:
        images = self.renderer.render(
            positions.detach().cpu().numpy(), present.detach().cpu().numpy(), logo.detach().cpu().numpy()
        )
        return torch.from_numpy(images).to(self.device)


def device_renderer(
    renderer: Renderer | ReleaseRenderer, device: torch.device | str
) -> TensorRenderer | HostRenderer:
    """The torch world's renderer drawing ``renderer``'s pictures on ``device``."""
    if isinstance(renderer, ReleaseRenderer):
        return HostRenderer(renderer, device)
    return TensorRenderer(renderer, device)
