"""Draw the digit labels of the release's picture once, into ``src/blocks/render/release_labels.png`` (ours).

    pip install pillow && python scripts/draw_release_labels.py

The release labels digit blocks with a bold sans-serif text mesh whose digits stand about 62 % of a block side
tall (measured on its frame example4.png, docs/experiments/release-pictures.md). Each label is drawn in
DejaVu Sans Bold, centred on a square of ``LABEL_SPAN`` block sides, as coverage in [0, 255]; the file keeps
the pixels the same whatever fonts or Pillow a machine has.
"""

from __future__ import annotations

import argparse

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from blocks.render.release import LABEL_GLYPHS, LABEL_SPAN, TEXTURE_RESOLUTION
from blocks.world.geometry import MAX_BLOCKS

DIGIT_HEIGHT = 0.69  # digit height in block sides at the label plane (19 px in example4.png)
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansCondensed.ttf"
STROKE = 3  # of the oversampled canvas: thickens the regular face toward the release's ink (best of 0, 3, 6, 10 on example4.png)
OVERSAMPLE = 8


def label(number: int, font_path: str = FONT, stroke: int = STROKE) -> np.ndarray:
    """Coverage ``(R, R)`` uint8 of the label ``number`` over a square of LABEL_SPAN block sides."""
    big = TEXTURE_RESOLUTION * OVERSAMPLE
    digit_px = DIGIT_HEIGHT / LABEL_SPAN * big
    font = ImageFont.truetype(font_path, 100)
    top, bottom = font.getbbox("0")[1], font.getbbox("0")[3]
    font = ImageFont.truetype(font_path, round(100 * digit_px / (bottom - top)))
    image = Image.new("L", (big, big), 0)
    draw = ImageDraw.Draw(image)
    left, top, right, bottom = draw.textbbox((0, 0), str(number), font=font)
    draw.text(
        ((big - (right - left)) / 2 - left, (big - (bottom - top)) / 2 - top),
        str(number),
        fill=255,
        font=font,
        stroke_width=stroke,
        stroke_fill=255,
    )
    return cv2.resize(np.asarray(image), (TEXTURE_RESOLUTION,) * 2, interpolation=cv2.INTER_AREA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--font", default=FONT)
    parser.add_argument("--stroke", type=int, default=STROKE)
    args = parser.parse_args()
    strip = np.concatenate([label(n, args.font, args.stroke) for n in range(1, MAX_BLOCKS + 1)], axis=1)
    cv2.imwrite(str(LABEL_GLYPHS), strip)
    print(f"wrote {LABEL_GLYPHS} {strip.shape}")


if __name__ == "__main__":
    main()
