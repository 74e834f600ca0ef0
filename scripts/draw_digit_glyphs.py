"""Draw the digit faces of the renderer once, into ``src/blocks/render/digits.png`` (ours).

    pip install --target /tmp/cv50 --no-deps opencv-python-headless==5.0.0.93
    PYTHONPATH=/tmp/cv50 python scripts/draw_digit_glyphs.py

Why a file: ``cv2.putText`` draws Hershey digits differently from one OpenCV release to the next (4.14, 5.0 and
5.1 all differ), and a network trained on one release's digits misreads another's: the shipped board reader
found 100 % of the blocks numbered 10-20 with 5.0's digits and 34 % with 5.1's. Every network in the package
saw OpenCV 5.0.0's, so the file keeps them and the renderer reads it, whatever OpenCV is installed. The script
refuses another OpenCV, so that running it again rewrites the same pixels.
"""

from __future__ import annotations

import cv2
import numpy as np

from blocks.render.renderer import BLOCK_COLOR, DIGIT_GLYPHS, GLYPH_RESOLUTION
from blocks.world.geometry import MAX_BLOCKS

OPENCV = "5.0.0"


def digit_glyph(number: int, size: int = GLYPH_RESOLUTION) -> np.ndarray:
    """Black digits filling most of a green square, RGB ``(size, size, 3)``."""
    face = np.empty((size, size, 3), np.uint8)
    face[:] = BLOCK_COLOR
    text = str(number)
    font, thickness = cv2.FONT_HERSHEY_SIMPLEX, max(2, size // 9)
    (width, height), _ = cv2.getTextSize(text, font, 1.0, thickness)
    scale = 0.86 * size / max(width, height)
    thickness = max(2, round(thickness * scale * 0.8))
    (width, height), baseline = cv2.getTextSize(text, font, scale, thickness)
    origin = ((size - width) // 2, (size + height) // 2)
    cv2.putText(face, text, origin, font, scale, (0, 0, 0), thickness, cv2.LINE_AA)
    return face


def main() -> None:
    if cv2.__version__ != OPENCV:
        raise SystemExit(
            f"needs OpenCV {OPENCV} (the digits every shipped network saw); this is {cv2.__version__}"
        )
    strip = np.concatenate([digit_glyph(i + 1) for i in range(MAX_BLOCKS)], axis=1)
    if not cv2.imwrite(str(DIGIT_GLYPHS), strip[..., ::-1]):
        raise SystemExit(f"could not write {DIGIT_GLYPHS}")
    print(f"{DIGIT_GLYPHS}: {MAX_BLOCKS} digits, {DIGIT_GLYPHS.stat().st_size} bytes")


if __name__ == "__main__":
    main()
