"""Draw the 120 x 120 RGB view of a batch of boards with numpy slicing.

Every block is drawn as its top face (height L), a green square carrying its logo or digit. At that height the
perspective scale is the same everywhere, so a face is always 7 or 8 pixels wide: each decoration is resized
once per face size (area averaging of a large, sharp glyph keeps most of its identity), and drawing is a
slice copy per block.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from blocks.corpus.download import CorpusError, ensure_file
from blocks.render.camera import Camera, face_boxes
from blocks.world.geometry import BLOCK_SIDE, BOARD_HALF, LOGO_BRANDS, MAX_BLOCKS

BOARD_COLOR = (255, 255, 178)
BACKGROUND_COLOR = (105, 97, 92)
BLOCK_COLOR = (90, 245, 110)
GLYPH_RESOLUTION = 96  # decorations are composed at this size, then shrunk to the face
DIGIT_GLYPHS = Path(__file__).with_name("digits.png")


def _digit_glyphs() -> list[np.ndarray]:
    """The faces of blocks 1-20, RGB ``(96, 96, 3)`` each, read from ``digits.png``: drawn once with OpenCV
    5.0's Hershey font, since each OpenCV release draws those digits differently (scripts/draw_digit_glyphs.py)."""
    strip = cv2.imread(str(DIGIT_GLYPHS), cv2.IMREAD_COLOR)
    if strip is None or strip.shape != (GLYPH_RESOLUTION, MAX_BLOCKS * GLYPH_RESOLUTION, 3):
        raise FileNotFoundError(f"{DIGIT_GLYPHS}: missing or not the 20 digit faces; reinstall the package")
    return [
        np.ascontiguousarray(strip[:, i * GLYPH_RESOLUTION : (i + 1) * GLYPH_RESOLUTION, ::-1])
        for i in range(MAX_BLOCKS)
    ]


def _logo_glyph(path: Path, size: int = GLYPH_RESOLUTION) -> np.ndarray:
    """A logo (RGBA, transparent background) stretched over a green square, RGB ``(size, size, 3)``."""
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise CorpusError(f"{path}: not a readable image; delete it so that it is fetched again")
    if image.ndim == 2:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGRA)
    if image.shape[2] == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2BGRA)
    image = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32)
    rgb = image[..., 2::-1]
    alpha = image[..., 3:] / 255.0
    face = rgb * alpha + np.array(BLOCK_COLOR, np.float32) * (1.0 - alpha)
    return np.clip(face + 0.5, 0, 255).astype(np.uint8)


class Renderer:
    """Renders padded batches of boards ``(N, 20, 2)`` to ``(N, 3, size, size)`` uint8 images."""

    def __init__(self, data_root: Path | str | None = None, size: int = 120, logos: bool = True):
        """``logos=False`` draws logo boards with plain faces, for tests that run without the textures."""
        self.size = size
        self.camera = Camera(size)
        self.background = self._draw_background()
        glyphs = {"digit": _digit_glyphs()}
        if logos:
            glyphs["logo"] = [_logo_glyph(ensure_file(f"textures/{b}.png", data_root)) for b in LOGO_BRANDS]
        else:
            glyphs["logo"] = [
                np.full((GLYPH_RESOLUTION, GLYPH_RESOLUTION, 3), BLOCK_COLOR, np.uint8)
            ] * MAX_BLOCKS
        self._glyphs = glyphs
        self._faces: dict[tuple[str, int, int], np.ndarray] = {}
        face = self.camera.pixels_per_unit(BLOCK_SIDE) * BLOCK_SIDE
        for height in range(math.floor(face), math.ceil(face) + 1):
            for width in range(math.floor(face), math.ceil(face) + 1):
                for decoration in glyphs:
                    self._face_stack(decoration, height, width)

    def glyph(self, decoration: str, block: int) -> np.ndarray:
        """The face of block ``block`` on a ``decoration`` ("digit" or "logo") board, RGB at 96 pixels: a legend's
        tile (the demo's list of logos by name)."""
        return self._glyphs[decoration][block].copy()

    def _draw_background(self) -> np.ndarray:
        image = np.empty((3, self.size, self.size), np.uint8)
        image[:] = np.array(BACKGROUND_COLOR, np.uint8)[:, None, None]
        (top, bottom), (left, right) = self.camera.project(
            np.array([-BOARD_HALF, BOARD_HALF]), np.array([BOARD_HALF, -BOARD_HALF])
        )
        r0, r1 = max(0, round(top)), min(self.size, round(bottom))
        c0, c1 = max(0, round(left)), min(self.size, round(right))
        image[:, r0:r1, c0:c1] = np.array(BOARD_COLOR, np.uint8)[:, None, None]
        return image

    def _face_stack(self, decoration: str, height: int, width: int) -> np.ndarray:
        """All 20 decorations of one kind resized to ``height x width``, as ``(20, 3, height, width)``."""
        key = (decoration, height, width)
        if key not in self._faces:
            faces = [
                cv2.resize(g, (width, height), interpolation=cv2.INTER_AREA).transpose(2, 0, 1)
                for g in self._glyphs[decoration]
            ]
            self._faces[key] = np.ascontiguousarray(np.stack(faces))
        return self._faces[key]

    @staticmethod
    def top_face_height() -> float:
        """Height of the faces this picture shows: a block's side (``Camera`` projects them there)."""
        return BLOCK_SIDE

    def face_boxes(self, positions: np.ndarray) -> np.ndarray:
        """Integer pixel boxes ``(..., 4)`` = (row0, row1, col0, col1) of block top faces, before clipping."""
        return face_boxes(self.camera.project, positions, BLOCK_SIDE)

    def render(
        self,
        positions: np.ndarray,
        present: np.ndarray,
        logo: Sequence[bool] | np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Images of boards ``positions (N, 20, 2)``; ``logo[i]`` picks logos over digits for board i."""
        n = positions.shape[0]
        if out is None:
            out = np.empty((n, 3, self.size, self.size), np.uint8)
        out[:] = self.background
        boxes = self.face_boxes(positions).tolist()
        present = present.tolist()
        size = self.size
        for i in range(n):
            decoration = "logo" if logo[i] else "digit"
            image = out[i]
            for b, (r0, r1, c0, c1) in enumerate(boxes[i]):
                if not present[i][b]:
                    continue
                faces = self._faces.get((decoration, r1 - r0, c1 - c0))
                if faces is None:
                    faces = self._face_stack(decoration, r1 - r0, c1 - c0)
                if r0 >= 0 and c0 >= 0 and r1 <= size and c1 <= size:
                    image[:, r0:r1, c0:c1] = faces[b]
                else:  # partly outside the picture: clip both sides
                    rr0, cc0 = max(r0, 0), max(c0, 0)
                    rr1, cc1 = min(r1, size), min(c1, size)
                    if rr0 < rr1 and cc0 < cc1:
                        image[:, rr0:rr1, cc0:cc1] = faces[b][:, rr0 - r0 : rr1 - r0, cc0 - c0 : cc1 - c0]
        return out

    def render_board(self, board: np.ndarray, logo: bool) -> np.ndarray:
        """One board ``(n, 2)`` as an ``(H, W, 3)`` RGB image, for people and Gymnasium."""
        positions = np.zeros((1, MAX_BLOCKS, 2))
        positions[0, : len(board)] = board
        present = np.zeros((1, MAX_BLOCKS), bool)
        present[0, : len(board)] = True
        return self.render(positions, present, [logo])[0].transpose(1, 2, 0).copy()
