"""Marks drawn on board pictures of any size: the moved block, the corpus's goal, where an agent aimed (the demo's
frames, the generated instructions' grids)."""

from __future__ import annotations

import math

import cv2
import numpy as np

from blocks.render.camera import Camera
from blocks.world.geometry import BLOCK_SIDE, NUM_DIRECTIONS, STOP

BLUE, PINK, ORANGE = (40, 90, 235), (230, 40, 160), (245, 140, 20)  # RGB: moved block, gold goal, agent's aim


def draw_frames(
    frames: list[np.ndarray],
    positions: list[np.ndarray],
    actions: list[int],
    gold_goal: np.ndarray | None = None,
    aim: np.ndarray | None = None,
    gold_start: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Frames of a board drawn at any size with marks: a blue ring round the block the last action moved, a pink
    ring where the corpus says it should end (``gold_goal``; with ``gold_start`` a line from where it starts), an
    orange cross where a read-and-plan agent aimed (``aim``)."""
    size = frames[0].shape[0]
    camera = Camera(size)
    radius = int(round(camera.pixels_per_unit(BLOCK_SIDE) * BLOCK_SIDE * 0.75))
    thick = max(1, size // 160)

    def pixel(point: np.ndarray) -> tuple[int, int]:
        row, column = camera.project(np.float64(point[0]), np.float64(point[1]), BLOCK_SIDE)
        return int(round(float(column))), int(round(float(row)))

    drawn = []
    for t, frame in enumerate(frames):
        out = np.ascontiguousarray(frame.copy())
        if gold_goal is not None:
            if gold_start is not None:
                cv2.arrowedLine(
                    out, pixel(gold_start), pixel(gold_goal), PINK, thick, cv2.LINE_AA, tipLength=0.08
                )
            cv2.circle(out, pixel(gold_goal), radius, PINK, thick, cv2.LINE_AA)
        if aim is not None and math.isfinite(float(aim.sum())):
            cv2.drawMarker(out, pixel(aim), ORANGE, cv2.MARKER_CROSS, radius, thick, cv2.LINE_AA)
        block = actions[t - 1] // NUM_DIRECTIONS if t > 0 and actions[t - 1] != STOP else None
        if block is not None and block < len(positions[t]):  # an agent may name a block not on the board
            cv2.circle(out, pixel(positions[t][block]), radius, BLUE, thick, cv2.LINE_AA)
        drawn.append(out)
    return drawn
