"""The agent's view of the recent past: the last K+1 frames stacked on channels, and their standardisation."""

from __future__ import annotations

import numpy as np


class FrameHistory:
    """Ring buffer of the last ``frames`` images of each board, oldest first, zeros before the start.

    Every frame is written twice (slots ``h`` and ``h + frames``), so the window of the latest ``frames`` images
    is always one contiguous slice: :meth:`stack` returns a view, no copy.
    """

    def __init__(self, batch_size: int, frames: int = 5, image_shape: tuple[int, int, int] = (3, 120, 120)):
        self.frames = frames
        self.image_shape = image_shape
        self.buffer = np.zeros((batch_size, 2 * frames, *image_shape), np.uint8)
        self.head = 0  # slot of the next write, in [0, frames)

    @property
    def batch_size(self) -> int:
        return self.buffer.shape[0]

    def clear(self, rows: np.ndarray | slice | None = None) -> None:
        """Forget the past of ``rows`` (all boards by default): they restart from zero frames."""
        self.buffer[slice(None) if rows is None else rows] = 0

    def push(self, images: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Append the current images ``(N, C, H, W)``; ``rows`` (bool mask) limits the update to some boards.

        All boards share the write position, so boards left out repeat their latest frame.
        """
        slot, twin = self.head, self.head + self.frames
        if rows is None:
            self.buffer[:, slot] = images
        else:
            latest = (self.head - 1) % self.frames
            self.buffer[:, slot] = self.buffer[:, latest]
            self.buffer[rows, slot] = images[rows]
        self.buffer[:, twin] = self.buffer[:, slot]
        self.head = (self.head + 1) % self.frames

    def stack(self) -> np.ndarray:
        """``(N, frames * C, H, W)`` uint8 view: the last ``frames`` images, oldest first."""
        window = self.buffer[:, self.head : self.head + self.frames]
        return window.reshape(self.batch_size, self.frames * self.image_shape[0], *self.image_shape[1:])


def standardize(stack: np.ndarray) -> np.ndarray:
    """Per-stack standardisation: (x - mean) / max(std, 1 / sqrt(number of values)), as float32."""
    x = stack.astype(np.float32)
    axes = tuple(range(1, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    std = x.std(axis=axes, keepdims=True)
    count = np.prod([x.shape[a] for a in axes])
    return (x - mean) / np.maximum(std, np.float32(1.0 / np.sqrt(count)))
