"""The overhead perspective camera of the release (section 8 of docs/environment.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from blocks.world.geometry import BLOCK_SIDE

CAMERA_HEIGHT = 2.265
CAMERA_X_OFFSET = -0.03
VERTICAL_FOV_DEG = 60.0


@dataclass(frozen=True)
class Camera:
    """Projects board points (x, z) at height h to pixel (row, column) in a square image of ``size`` pixels."""

    size: int = 120

    @property
    def focal(self) -> float:
        """Focal length in pixels: 103.92 for 120 px."""
        return (self.size / 2) / math.tan(math.radians(VERTICAL_FOV_DEG / 2))

    def project(self, x: np.ndarray, z: np.ndarray, height: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Continuous (row, column) of points; +x goes right, +z goes up in the image."""
        scale = self.focal / (CAMERA_HEIGHT - height)
        column = self.size / 2 + scale * (np.asarray(x) - CAMERA_X_OFFSET)
        row = self.size / 2 - scale * np.asarray(z)
        return row, column

    def pixels_per_unit(self, height: float = 0.0) -> float:
        return self.focal / (CAMERA_HEIGHT - height)

    def unproject(
        self, row: np.ndarray, column: np.ndarray, height: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Board ``(x, z)`` of pixel coordinates at height ``height``: the inverse of :meth:`project`."""
        scale = self.focal / (CAMERA_HEIGHT - height)
        x = (np.asarray(column) - self.size / 2) / scale + CAMERA_X_OFFSET
        z = (self.size / 2 - np.asarray(row)) / scale
        return x, z


def face_boxes(
    project: Callable[[np.ndarray, np.ndarray, float], tuple[np.ndarray, np.ndarray]],
    positions: np.ndarray,
    height: float,
) -> np.ndarray:
    """Integer pixel boxes ``(..., 4)`` = (row0, row1, col0, col1) of block top faces ``height`` above the board,
    before clipping, under a camera's ``project`` (the flat picture's faces and the release's cube tops alike)."""
    half = BLOCK_SIDE / 2
    top, left = project(positions[..., 0] - half, positions[..., 1] + half, height)
    bottom, right = project(positions[..., 0] + half, positions[..., 1] - half, height)
    return np.rint(np.stack([top, bottom, left, right], axis=-1)).astype(np.int64)
