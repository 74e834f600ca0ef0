"""The release's picture: perspective cubes under its light, drawn with numpy (section 8 of docs/environment.md).

The release's Unity camera looks straight down, so each block is a cube whose top face is a square and whose
sides facing the image centre show as trapezoids that widen toward the corners of the picture. We cast one ray
per sub-pixel sample through each block's patch and ask which face it meets first: the top (at the block's top
height), the side facing the camera across x or across z, or nothing; digit labels are text at the cube's
mid-height drawn over the cube (the release's text mesh ignores depth). Colours are linear functions of the
image position per face kind (the release's light and glossy materials brighten one corner), fitted on the
release's own frames by ``scripts/release_frames.py`` and stored in ``release_scene.json``.

Rendering a block costs a few thousand samples, so every block's patch is kept, keyed by its decoration, its
identity and its position rounded to a quarter pixel (at that rounding two positions give the same picture to
within the samples' spacing); boards revisit positions, so after warm-up drawing a batch is one indexed
multiply-add per layer of blocks (``PatchStore``, ``ReleaseRenderer.render``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from blocks.corpus.download import CorpusError, ensure_file
from blocks.render.camera import CAMERA_HEIGHT, CAMERA_X_OFFSET, VERTICAL_FOV_DEG, Camera, face_boxes
from blocks.world.geometry import BLOCK_SIDE, BOARD_HALF, LOGO_BRANDS, MAX_BLOCKS

SCENE_FILE = Path(__file__).with_name("release_scene.json")
LABEL_GLYPHS = Path(__file__).with_name("release_labels.png")
TEXTURE_RESOLUTION = 64  # logo alpha and ink maps are sampled from squares of this size
LABEL_SPAN = 1.5  # a digit label's square, in block sides, centred on the block (two-digit labels overflow L)
# the face kinds' colours in release_scene.json: the top, then the sides facing the camera across x (from a
# block right of the camera's axis, "+", or left of it, "-") and across z (above the axis "+", below "-")
FACE_KINDS = ("top", "x/+", "x/-", "z/+", "z/-")
FACE_KEYS = tuple(f"{deco}/{kind}" for deco in ("logo", "digit") for kind in FACE_KINDS)
QUANTUM = 4  # patches are cached per 1/QUANTUM pixel of the block centre's position
MAX_PATCHES = 200_000  # patches kept at most (about 2.5 kB each at 120 px): a learner that wanders the board
# draws new positions without end
# drawings of new patches between two returns of the heap's free pages to the system (_release_free_heap)
TRIM_EVERY = 16


@functools.cache
def _libc_malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl)."""
    name = ctypes.util.find_library("c")
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def _release_free_heap() -> None:
    """Give the heap's free pages back to the system.

    Each drawing of new patches frees a few MB of sample arrays and keeps a few small patches, which glibc places
    in the freed space; the next drawing's arrays then no longer fit there and the heap grows. A bandit on these
    pictures reached 5.7 GB resident after 80 updates (and 12 GB after 300) against 0.66 GB with a fixed mmap
    threshold and 0.80 GB trimming after every drawing (docs/experiments/release-pictures.md, section 4)."""
    trim = _libc_malloc_trim()
    if trim is not None:
        trim(0)


@dataclass(frozen=True)
class View:
    """A straight-down perspective camera on a ``width x height`` picture, the release's at any window size."""

    width: int
    height: int

    @property
    def focal(self) -> float:
        return (self.height / 2) / math.tan(math.radians(VERTICAL_FOV_DEG / 2))

    def project(self, x: np.ndarray, z: np.ndarray, h: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Continuous (row, column) of board points at height ``h``: ``Camera.project`` for any picture shape."""
        scale = self.focal / (CAMERA_HEIGHT - np.asarray(h))
        return self.height / 2 - scale * np.asarray(z), self.width / 2 + scale * (
            np.asarray(x) - CAMERA_X_OFFSET
        )


@dataclass(frozen=True)
class Scene:
    """The numbers of the release's picture (``release_scene.json``): heights in world units, colours 0-255."""

    top: float  # height of a block's top face
    bottom: float  # height of its bottom face
    label: float  # height of a digit label's plane
    ground: list[list[float]]  # per channel: coefficients of (1, u, v, u*u, v*v, u*v), u and v in [-1, 1]
    floor: list[float]  # outside the board
    faces: dict[str, list[list[float]]]  # "<decoration>/<face>/<sign>": per channel (1, u, v)
    ink: dict[str, list[float]]  # "<decoration>": the colour of a fully inked black texel
    ink_white: list[float]  # the colour of a fully inked white texel of a logo

    @classmethod
    def load(cls, path: Path = SCENE_FILE) -> Scene:
        return cls(**json.loads(Path(path).read_text()))


def _features(u: np.ndarray, v: np.ndarray, quadratic: bool = False) -> np.ndarray:
    parts = [np.ones_like(u), u, v] + ([u * u, v * v, u * v] if quadratic else [])
    return np.stack(parts, axis=-1)


def ground_colour(scene: Scene, view: View, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """RGB float of the bare ground (board and floor) at pixel centres ``rows, cols``."""
    u, v = (cols + 0.5) / view.width * 2 - 1, (rows + 0.5) / view.height * 2 - 1
    colour = _features(u, v, quadratic=True) @ np.asarray(scene.ground).T
    x = (cols + 0.5 - view.width / 2) * CAMERA_HEIGHT / view.focal + CAMERA_X_OFFSET
    z = (view.height / 2 - rows - 0.5) * CAMERA_HEIGHT / view.focal
    outside = (np.abs(x) > BOARD_HALF) | (np.abs(z) > BOARD_HALF)
    colour[outside] = scene.floor
    return np.clip(colour, 0, 255)


def background(scene: Scene, view: View, samples: int = 4) -> np.ndarray:
    """The empty picture ``(3, height, width)`` uint8, the board's edge averaged over sub-pixel samples."""
    offsets = (np.arange(samples) + 0.5) / samples - 0.5
    rows = np.arange(view.height)[:, None, None, None] + offsets[None, None, :, None]
    cols = np.arange(view.width)[None, :, None, None] + offsets[None, None, None, :]
    rows, cols = np.broadcast_arrays(rows, cols)
    colour = ground_colour(scene, view, rows, cols).mean(axis=(2, 3))
    return np.ascontiguousarray(np.rint(colour).astype(np.uint8).transpose(2, 0, 1))


def logo_textures(data_root: Path | str | None, logos: bool) -> tuple[np.ndarray, np.ndarray]:
    """Ink coverage ``(20, R, R)`` in [0, 1] and ink lightness ``(20, R, R)`` in [0, 1] of the logo textures."""
    r = TEXTURE_RESOLUTION
    alpha, light = np.zeros((MAX_BLOCKS, r, r), np.float32), np.zeros((MAX_BLOCKS, r, r), np.float32)
    if not logos:
        return alpha, light
    for b, brand in enumerate(LOGO_BRANDS):
        path = ensure_file(f"textures/{brand}.png", data_root)
        image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if image is None:
            raise CorpusError(f"{path}: not a readable image; delete it so that it is fetched again")
        if image.ndim == 2:
            image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGRA)
        if image.shape[2] == 3:
            image = cv2.cvtColor(image, cv2.COLOR_BGR2BGRA)
        image = cv2.resize(image, (r, r), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
        alpha[b] = image[..., 3]
        light[b] = image[..., :3].mean(axis=-1)
    return alpha, light


def label_glyphs() -> np.ndarray:
    """Coverage ``(20, R, R)`` in [0, 1] of the labels "1" to "20" over a square of LABEL_SPAN block sides."""
    strip = cv2.imread(str(LABEL_GLYPHS), cv2.IMREAD_GRAYSCALE)
    r = TEXTURE_RESOLUTION
    if strip is None or strip.shape != (r, MAX_BLOCKS * r):
        raise FileNotFoundError(f"{LABEL_GLYPHS}: missing or not the 20 labels; reinstall the package")
    return strip.reshape(r, MAX_BLOCKS, r).transpose(1, 0, 2).astype(np.float32) / 255.0


def _texels(resolution: int, s: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where (column s, row t) in [0, 1] falls: inside or not, and the nearest texel's row and column."""
    inside = (s >= 0) & (s < 1) & (t >= 0) & (t < 1)
    col = np.clip((s * resolution).astype(np.int64), 0, resolution - 1)
    row = np.clip((t * resolution).astype(np.int64), 0, resolution - 1)
    return inside, row, col


def _sample(
    texture: np.ndarray,
    which: np.ndarray,
    s: np.ndarray | None = None,
    t: np.ndarray | None = None,
    texels: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Nearest texel of ``texture[which]`` at (column s, row t) in [0, 1] (or at ``texels``, from ``_texels``, when
    several textures are read at the same places); 0 outside."""
    inside, row, col = texels if texels is not None else _texels(texture.shape[-1], s, t)
    return np.where(inside, texture[which, row, col], 0.0)


def rasterize(
    scene: Scene,
    view: View,
    centres: np.ndarray,
    blocks: np.ndarray,
    logo: np.ndarray,
    textures: tuple[np.ndarray, np.ndarray, np.ndarray],
    samples: int = 4,
    faces_out: bool = False,
) -> dict[str, np.ndarray]:
    """Patches of ``M`` blocks at board ``centres (M, 2)``, each ``blocks[m]`` of a logo (or digit) board.

    Returns ``origin (M, 2)`` (row, column of the patch's corner), ``colour (M, P, P, 3)`` premultiplied by
    ``coverage (M, P, P)``; with ``faces_out`` also each face kind's share of the samples ``(M, P, P, 4)``
    (top, x side, z side, label) and the mean ink coverage, for calibration.
    """
    logo_alpha, logo_light, labels = textures
    m = len(centres)
    half = BLOCK_SIDE / 2
    xc, zc = centres[:, 0], centres[:, 1]
    label_half = half * LABEL_SPAN
    # the patch: every corner of the top, the bottom and a label square
    corners_x = (xc[:, None] + np.array([-1, 1, -1, 1])[None] * half)[:, :, None]
    corners_z = (zc[:, None] + np.array([-1, -1, 1, 1])[None] * half)[:, :, None]
    heights = np.array([scene.top, scene.bottom])[None, None, :]
    rows, cols = view.project(corners_x, corners_z, heights)
    lrows, lcols = view.project(xc[:, None] + np.array([-1, 1]) * label_half,
                                zc[:, None] + np.array([1, -1]) * label_half, scene.label)  # fmt: skip
    lrows = np.where(logo[:, None], rows.reshape(m, -1)[:, :2], lrows)
    lcols = np.where(logo[:, None], cols.reshape(m, -1)[:, :2], lcols)
    r0 = np.floor(np.minimum(rows.reshape(m, -1).min(1), lrows.min(1))).astype(np.int64)
    c0 = np.floor(np.minimum(cols.reshape(m, -1).min(1), lcols.min(1))).astype(np.int64)
    r1 = np.ceil(np.maximum(rows.reshape(m, -1).max(1), lrows.max(1))).astype(np.int64)
    c1 = np.ceil(np.maximum(cols.reshape(m, -1).max(1), lcols.max(1))).astype(np.int64)
    p = int(max((r1 - r0).max(), (c1 - c0).max())) if m else 1
    sub = (np.arange(p * samples) + 0.5) / samples
    v = r0[:, None, None] + sub[None, :, None]  # (M, P*S, 1) rows
    u = c0[:, None, None] + sub[None, None, :]  # (M, 1, P*S) columns
    du, dv = (u - view.width / 2) / view.focal, (view.height / 2 - v) / view.focal  # per unit of depth
    xc3, zc3, b3 = xc[:, None, None], zc[:, None, None], blocks[:, None, None]

    def at(h: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        depth = CAMERA_HEIGHT - h
        return du * depth + CAMERA_X_OFFSET, dv * depth

    x_top, z_top = at(scene.top)  # (M, 1, P*S) and (M, P*S, 1): a ray's column fixes x, its row z
    hit_top = (np.abs(x_top - xc3) <= half) & (np.abs(z_top - zc3) <= half)
    # the sides facing the camera's axis: a ray meets the plane x = xs at depth (xs - x0) / du
    xs = xc3 - np.sign(xc3 - CAMERA_X_OFFSET) * half
    zs = zc3 - np.sign(zc3) * half
    with np.errstate(divide="ignore", invalid="ignore"):
        hx = CAMERA_HEIGHT - (xs - CAMERA_X_OFFSET) / du
        hz = CAMERA_HEIGHT - zs / dv
    z_at_hx = dv * (CAMERA_HEIGHT - hx)
    x_at_hz = du * (CAMERA_HEIGHT - hz) + CAMERA_X_OFFSET
    hit_x = (hx >= scene.bottom) & (hx <= scene.top) & (np.abs(z_at_hx - zc3) <= half) & ~hit_top
    hit_z = (hz >= scene.bottom) & (hz <= scene.top) & (np.abs(x_at_hz - xc3) <= half) & ~hit_top
    prefer_x = hit_x & (~hit_z | (hx >= hz))
    hit_z &= ~prefer_x
    hit_x = prefer_x
    hit = hit_top | hit_x | hit_z
    # digit labels: text at the label plane, drawn over everything (logo boards have none)
    x_lab, z_lab = at(scene.label)
    s_lab = (x_lab - xc3) / (2 * label_half) + 0.5
    t_lab = 0.5 - (z_lab - zc3) / (2 * label_half)
    text = np.zeros(hit.shape, labels.dtype)  # in the textures' precision, as the label's blend below
    digits = np.flatnonzero(~logo)
    text[digits] = _sample(labels, b3[digits], s_lab[digits], t_lab[digits])
    # From here on only the samples that meet the block or its label, K of them, in the patches' row-major order.
    drawn = (hit | (text > 0)).reshape(-1)
    flat = np.flatnonzero(drawn)
    k_m, k_row, k_col = np.unravel_index(flat, hit.shape)
    hit_top_k, hit_x_k, hit_z_k = (a.reshape(-1)[flat] for a in (hit_top, hit_x, hit_z))
    hit_k, text_k = hit.reshape(-1)[flat], text.reshape(-1)[flat]
    xc_k, zc_k, block, logo_k = xc[k_m], zc[k_m], blocks[k_m], logo[k_m]
    # texture coordinates (column s, row t) of each face: the top as seen, a side's texture along its top edge
    # a side's depth below its top edge: 0 at the top edge, 1 at the bottom
    depth_x = (scene.top - hx[k_m, 0, k_col]) / (scene.top - scene.bottom)
    depth_z = (scene.top - hz[k_m, k_row, 0]) / (scene.top - scene.bottom)
    s_top = (x_top[k_m, 0, k_col] - xc_k) / BLOCK_SIDE + 0.5
    t_top = 0.5 - (z_top[k_m, k_row, 0] - zc_k) / BLOCK_SIDE
    s_x = np.where(hit_x_k, depth_x, 0.0)
    t_x = np.where(hit_x_k, 0.5 - (z_at_hx.reshape(-1)[flat] - zc_k) / BLOCK_SIDE, 0.0)
    s_z = np.where(hit_z_k, (x_at_hz.reshape(-1)[flat] - xc_k) / BLOCK_SIDE + 0.5, 0.0)
    t_z = np.where(hit_z_k, depth_z, 0.0)
    s = np.where(hit_top_k, s_top, np.where(hit_x_k, s_x, s_z))
    t = np.where(hit_top_k, t_top, np.where(hit_x_k, t_x, t_z))
    # logo ink and its light parts; digit boards' faces have none
    ink, light = np.zeros(len(flat), logo_alpha.dtype), np.zeros(len(flat), logo_light.dtype)
    on_logo = np.flatnonzero(logo_k)
    texels = _texels(logo_alpha.shape[-1], s[on_logo], t[on_logo])
    ink[on_logo] = _sample(logo_alpha, block[on_logo], texels=texels)
    light[on_logo] = _sample(logo_light, block[on_logo], texels=texels)
    nu = (u / view.width * 2 - 1)[k_m, 0, k_col]
    nv = (v / view.height * 2 - 1)[k_m, k_row, 0]
    # each sample's face kind: FACE_KEYS[index], its colour linear in the image position
    sign_x = np.sign(xc_k - CAMERA_X_OFFSET)
    sign_z = np.sign(zc_k)
    side = np.where(hit_x_k, 1 + (sign_x < 0), 3 + (sign_z < 0))  # x+, x-, z+, z-
    index = np.where(hit_top_k, 0, side) + np.where(logo_k, 0, len(FACE_KINDS))
    coef = np.asarray([scene.faces[key] for key in FACE_KEYS])  # (faces, 3 channels, 3 terms)
    base = np.empty((len(flat), 3))
    for c in range(3):  # a channel at a time from tables of ten: cheaper than gathering (K, 3) rows
        constant, along_u, along_v = (np.take(coef[:, c, j], index) for j in range(3))
        base[:, c] = constant + nu * along_u + nv * along_v
    # ink over the face colour, on logo samples only (with no ink a face keeps its colour exactly)
    shade = base
    logo_ink = np.asarray(scene.ink["logo"])
    inked = logo_ink + light[on_logo, None] * (np.asarray(scene.ink_white) - logo_ink)
    shade[on_logo] = base[on_logo] + ink[on_logo, None] * (inked - base[on_logo])
    colour_k = np.where(hit_k[:, None], np.clip(shade, 0, 255), 0.0)
    labelled = np.flatnonzero(text_k > 0)  # the label over the face (elsewhere the colour stays as it is)
    colour_k[labelled] = (colour_k[labelled] * (1 - text_k[labelled, None])
                          + text_k[labelled, None] * np.asarray(scene.ink["digit"]))  # fmt: skip
    coverage_k = np.maximum(hit_k.astype(np.float64), text_k)

    # a pixel's value is the mean of its S x S samples: summed in the samples' row-major order, as a mean over
    # the full sample grid would (a sample not drawn adds 0), so the bytes are those of that mean
    pixel = (k_m * p + k_row // samples) * p + k_col // samples

    def pool_k(values: np.ndarray) -> np.ndarray:
        total = np.bincount(pixel, weights=values, minlength=m * p * p)
        return (total / samples**2).reshape(m, p, p)

    def pool(a: np.ndarray) -> np.ndarray:
        return a.reshape(m, p, samples, p, samples, *a.shape[3:]).mean(axis=(2, 4))

    premultiplied = colour_k * coverage_k[:, None]
    result = {
        "origin": np.stack([r0, c0], axis=1),
        "colour": np.stack([pool_k(premultiplied[:, c]) for c in range(3)], axis=-1),
        "coverage": pool_k(coverage_k),
    }
    if faces_out:
        ink_full, light_full = np.zeros(hit.size), np.zeros(hit.size)
        ink_full[flat], light_full[flat] = ink, light * ink
        result["faces"] = pool(np.stack([hit_top, hit_x, hit_z, text > 0.5], axis=-1).astype(np.float64))
        result["ink"] = pool(np.maximum(ink_full.reshape(hit.shape) * hit, text))
        result["light"] = pool(light_full.reshape(hit.shape) * hit)
    return result


class PatchStore:
    """Drawn patches in one array, each in a square of a common side placed inside the picture, so that a batch's
    blocks are composed with whole-array indexing instead of one slice operation per block. Outside its drawing a
    square keeps the picture (keep 1, colour 0: exact in floating point). Slot 0 is the empty square: absent blocks
    and blocks outside the picture. The side grows if a larger patch arrives."""

    def __init__(self, height: int, width: int, side: int, capacity: int = 1024, limit: int | None = None):
        """``limit``: the most squares the arrays ever hold (the renderer's ``max_patches`` and the empty one)."""
        self.height, self.width, self.limit = height, width, limit
        self.slots: dict[int, int] = {}  # code -> slot, in the order drawn
        self.side = min(side, height, width)
        self._allocate(capacity)
        self.used = 1

    def __len__(self) -> int:
        return len(self.slots)

    def _allocate(self, capacity: int) -> None:
        self.keep = np.ones((capacity, self.side, self.side), np.float32)
        self.colour = np.zeros((capacity, 3, self.side, self.side), np.float32)
        self.corner = np.zeros((capacity, 2), np.int64)  # (row, column) of the square in the picture
        self.place = np.zeros((capacity, 4), np.int64)  # the drawing: row, column, height, width

    def _put(self, slot: int, place: tuple[int, int, int, int], keep: np.ndarray, colour: np.ndarray) -> None:
        r, c, h, w = place
        top, left = min(r, self.height - self.side), min(c, self.width - self.side)
        self.keep[slot, r - top : r - top + h, c - left : c - left + w] = keep
        self.colour[slot, :, r - top : r - top + h, c - left : c - left + w] = colour
        self.corner[slot], self.place[slot] = (top, left), place

    def _rebuild(self, capacity: int, side: int, slots: np.ndarray) -> None:
        """New arrays of ``capacity`` squares of ``side`` holding ``slots`` (renumbered from 1 in their order)."""
        old = (self.keep, self.colour, self.corner, self.place)
        same_side = min(side, self.height, self.width) == self.side
        self.side = min(side, self.height, self.width)
        self._allocate(capacity)
        self.used = len(slots) + 1
        if same_side:  # the squares stay where they were: copy them whole
            for new, array in zip((self.keep, self.colour, self.corner, self.place), old, strict=True):
                new[1 : self.used] = array[slots]
            return
        for new, slot in enumerate(slots.tolist(), start=1):
            r, c, h, w = old[3][slot].tolist()
            top, left = old[2][slot].tolist()
            drawing = (slice(r - top, r - top + h), slice(c - left, c - left + w))
            self._put(new, (r, c, h, w), old[0][slot][drawing], old[1][slot][:, drawing[0], drawing[1]])

    def add(self, code: int, place: tuple[int, int, int, int], keep: np.ndarray, colour: np.ndarray) -> None:
        """Keep one patch: ``keep (h, w)`` and ``colour (3, h, w)``, its drawing at ``place`` (row, column,
        height, width) of the picture."""
        if self.used == len(self.keep) or max(place[2:]) > self.side:
            capacity = len(self.keep)
            if self.used == capacity:
                capacity = min(2 * capacity, self.limit or 2 * capacity)
                if capacity <= self.used:
                    raise ValueError(f"the patch store holds {self.used} squares, its limit")
            # every slot keeps its number
            self._rebuild(capacity, max(self.side, *place[2:]), np.arange(1, self.used))
        self._put(self.used, place, keep, colour)
        self.slots[code] = self.used
        self.used += 1

    def drop_oldest(self, count: int) -> None:
        """Forget the ``count`` patches drawn first (and give their room back)."""
        for code in list(itertools.islice(self.slots, count)):
            del self.slots[code]
        kept = np.array([slot for slot in self.slots.values() if slot > 0], np.int64)
        renumbered = {old: new for new, old in enumerate(kept.tolist(), start=1)}
        self.slots = {code: renumbered.get(slot, 0) for code, slot in self.slots.items()}
        self._rebuild(len(self.keep), self.side, kept)


class ReleaseRenderer:
    """The release's pictures of padded batches ``(N, 20, 2)`` as ``(N, 3, H, W)`` uint8: ``Renderer``'s
    interface, so every learner, agent and environment takes either (``data.render``).

    Blocks are composed in layers: the k-th block of every board (far from the picture's centre first) in one
    indexed multiply-add over the batch, through a sliding-window view of the canvas, instead of a multiply-add
    per block: 2.4 times the pictures a second (docs/experiments/release-pictures.md, section 4).
    """

    kind = "release"

    def __init__(
        self,
        data_root: Path | str | None = None,
        size: int = 120,
        logos: bool = True,
        samples: int = 4,
        view: View | None = None,
        max_patches: int = MAX_PATCHES,
    ):
        """``view`` draws another window shape (the release's frames are 422 x 466) instead of ``size``.
        ``max_patches``: before drawing new patches into a full store its older half is dropped (drawn again
        when met again)."""
        self.view = view or View(size, size)
        self.size = size
        self.camera = Camera(size)
        self.scene = Scene.load()
        self.samples = samples
        self.textures = (*logo_textures(data_root, logos), label_glyphs())
        self.background = background(self.scene, self.view)
        self._scale = self.view.focal / (CAMERA_HEIGHT - self.scene.top) * QUANTUM
        self._float_background = self.background.astype(np.float32)
        self._patches = PatchStore(
            self.view.height, self.view.width, self._largest_patch(), limit=max_patches + 1
        )
        self.max_patches = max_patches
        self._drawings = 0  # since the heap's free pages were last given back

    def _largest_patch(self) -> int:
        """The side of the largest drawing of a block on the board (its corners, digit labels included)."""
        reach = BOARD_HALF - BLOCK_SIDE / 2
        corners = np.array([[x, z] for x in (-reach, reach) for z in (-reach, reach)] * 2)
        logo = np.repeat([True, False], 4)
        coverage = rasterize(self.scene, self.view, corners, np.full(8, MAX_BLOCKS - 1), logo, self.textures)[
            "coverage"
        ]
        extents = [np.ptp(np.nonzero(patch.max(axis=axis))[0]) + 1 for patch in coverage for axis in (0, 1)]
        return int(max(extents)) + 1  # a pixel more for another sub-pixel offset

    @staticmethod
    def top_face_height() -> float:
        """Height of the cubes' top faces in the release's scene (above a block's side)."""
        return Scene.load().top

    def face_boxes(self, positions: np.ndarray) -> np.ndarray:
        """Integer pixel boxes ``(..., 4)`` = (row0, row1, col0, col1) of the cubes' top faces, before clipping:
        ``Renderer.face_boxes`` at the release's top-face height, so the board reader learns where faces are."""
        return face_boxes(self.view.project, positions, self.scene.top)

    def _codes(self, positions: np.ndarray, logo: np.ndarray) -> np.ndarray:
        """One integer per (board, block): its decoration, identity and position in quarter pixels."""
        q = np.rint(positions * self._scale).astype(np.int64) + (1 << 14)
        block = np.arange(MAX_BLOCKS)[None, :] + MAX_BLOCKS * logo[:, None].astype(np.int64)
        return (block << 30) | (q[..., 0] << 15) | q[..., 1]

    def _fill(self, codes: list[int]) -> None:
        """Draw the patches of ``codes`` not yet kept; a patch wholly outside the picture is kept as slot 0."""
        codes_ = np.array(codes, np.int64)
        block, logo = (codes_ >> 30) % MAX_BLOCKS, (codes_ >> 30) >= MAX_BLOCKS
        centres = np.stack([(codes_ >> 15) & 0x7FFF, codes_ & 0x7FFF], axis=1) - (1 << 14)
        centres = centres / self._scale
        height, width = self.view.height, self.view.width
        for start in range(0, len(codes_), 512):
            part = slice(start, start + 512)
            drawn = rasterize(self.scene, self.view, centres[part], block[part], logo[part], self.textures,
                              self.samples)  # fmt: skip
            for code, origin, colour, coverage in zip(
                codes[part], drawn["origin"], drawn["colour"], drawn["coverage"], strict=True
            ):
                h, w = coverage.shape
                r0, c0 = int(origin[0]), int(origin[1])
                rr0, cc0, rr1, cc1 = max(r0, 0), max(c0, 0), min(r0 + h, height), min(c0 + w, width)
                inner = slice(rr0 - r0, rr1 - r0), slice(cc0 - c0, cc1 - c0)
                if rr0 >= rr1 or cc0 >= cc1 or not coverage[inner].any():
                    self._patches.slots[code] = 0
                    continue
                rows, cols = (
                    np.nonzero(coverage[inner].max(axis=1))[0],
                    np.nonzero(coverage[inner].max(axis=0))[0],
                )
                tight = (
                    slice(inner[0].start + rows[0], inner[0].start + rows[-1] + 1),
                    slice(inner[1].start + cols[0], inner[1].start + cols[-1] + 1),
                )
                place = (rr0 + int(rows[0]), cc0 + int(cols[0]), int(rows[-1] - rows[0]) + 1,
                         int(cols[-1] - cols[0]) + 1)  # fmt: skip
                self._patches.add(code, place, 1.0 - coverage[tight], colour[tight].transpose(2, 0, 1))

    def render(
        self,
        positions: np.ndarray,
        present: np.ndarray,
        logo: Sequence[bool] | np.ndarray,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Images of boards ``positions (N, 20, 2)``; ``logo[i]`` picks logos over digits for board i. Blocks far
        from the picture's centre are drawn first: a nearer block's top hides a farther one's facing side."""
        n = positions.shape[0]
        height, width = self.view.height, self.view.width
        if out is None:
            out = np.empty((n, 3, height, width), np.uint8)
        positions = np.asarray(positions, np.float64)
        present = np.asarray(present, bool)
        codes = self._codes(positions, np.asarray(logo, bool))
        distance = np.abs(positions[..., 0] - CAMERA_X_OFFSET) + np.abs(positions[..., 1])
        order = np.argsort(-np.where(present, distance, -1.0), axis=1, kind="stable")
        codes = np.take_along_axis(codes, order, axis=1)
        layers = int(present.sum(axis=1).max()) if n else 0
        # present blocks come first in each row
        drawn = np.take_along_axis(present, order, axis=1)[:, :layers]
        wanted = codes[:, :layers][drawn].tolist()
        store = self._patches
        found = list(map(store.slots.get, wanted, itertools.repeat(-1)))
        if -1 in found:
            missing = sorted({code for code, slot in zip(wanted, found, strict=True) if slot < 0})
            if len(store) + len(missing) > self.max_patches:  # drop the older half (dicts keep their order)
                store.drop_oldest(max(len(store) // 2, len(missing)))
                # this batch's own may have been dropped
                missing = sorted(set(wanted).difference(store.slots))
            self._fill(missing)
            self._drawings += 1
            if self._drawings >= TRIM_EVERY:
                _release_free_heap()
                self._drawings = 0
            found = [store.slots[code] for code in wanted]
        slots = np.zeros((n, layers), np.int64)
        slots[drawn] = found
        canvas = np.empty((n, 3, height, width), np.float32)
        canvas[:] = self._float_background
        side = store.side
        windows = sliding_window_view(canvas, (side, side), axis=(2, 3), writeable=True)
        for k in range(layers):  # the k-th block of every board that has one: one square a board, no clash
            boards = np.flatnonzero(drawn[:, k])
            slot = slots[boards, k]
            corner = store.corner[slot]
            at = (boards, slice(None), corner[:, 0], corner[:, 1])
            under = windows[at]
            under *= store.keep[slot][:, None]
            under += store.colour[slot]
            windows[at] = under
        # colours are premultiplied by coverage, so a pixel stays within [0, 255]: rounding alone makes it a byte
        np.rint(canvas, out=canvas)
        out[:] = canvas
        return out

    def render_board(self, board: np.ndarray, logo: bool) -> np.ndarray:
        """One board ``(n, 2)`` as an ``(H, W, 3)`` RGB image, for people and Gymnasium."""
        positions = np.zeros((1, MAX_BLOCKS, 2))
        positions[0, : len(board)] = board
        present = np.zeros((1, MAX_BLOCKS), bool)
        present[0, : len(board)] = True
        return self.render(positions, present, [logo])[0].transpose(1, 2, 0).copy()
