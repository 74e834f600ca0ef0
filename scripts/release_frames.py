"""Our release renderer against the four frames the release's simulator drew (``shared/data/release-scene``).

    python scripts/release_frames.py                 # the figures: one JSON line per frame, then the worst
    python scripts/release_frames.py --fit           # refit the colours of release_scene.json on the frames first
    python scripts/release_frames.py --pictures docs/experiments/release-pictures  # side-by-side PNGs

Each frame is a training board (its README names them). We render that board at the frame's 422 x 466 with the
release's camera and compare: block centres (the centroid of each block's pixels, a pixel given to the nearest
predicted centre, in the frame and in ours), silhouette size (each block's pixel extent across x and z), and the
mean absolute colour difference on pixels that are block in both pictures and on pixels that are ground in both
(the frame's pink goal marker and a pixel around every edge left out). ``--fit`` sets the colours by least
squares on pixels that one face covers whole: linear in the image position per decoration and face kind (the
ground quadratic), so the figures after a fit are measured on the frames the colours came from.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import cv2
import numpy as np

from blocks.corpus.download import default_data_root
from blocks.render.camera import CAMERA_HEIGHT, CAMERA_X_OFFSET
from blocks.render.release import SCENE_FILE, ReleaseRenderer, View, rasterize
from blocks.world.geometry import BOARD_HALF, MAX_BLOCKS

FRAMES = (  # frame, trainset episode (0-based), state: the README of shared/data/release-scene
    ("example1", 67, 11),
    ("example2", 2, 10),
    ("example3", 2, 18),
    ("example4", 23, 18),
)
VIEW = View(422, 466)


def load(scene_dir: Path, data_root: Path) -> list[dict]:
    raw = json.loads((data_root / "trainset.json").read_text())
    frames = []
    for name, episode, state in FRAMES:
        image = cv2.imread(str(scene_dir / f"{name}.png"), cv2.IMREAD_COLOR)
        if image is None:
            raise SystemExit(f"{scene_dir / name}.png: missing")
        board = np.asarray(raw[episode]["states"][state], np.float64)[:, [0, 2]]
        frames.append({"name": name, "image": image[..., ::-1].astype(np.float64), "board": board,
                       "logo": raw[episode]["decoration"] == "logo"})  # fmt: skip
    return frames


def goal_marker(image: np.ndarray) -> np.ndarray:
    r, g, b = image[..., 0], image[..., 1], image[..., 2]
    return (r > 180) & (g < 170) & (b < 170)


def on_board(margin: float = 0.02) -> np.ndarray:
    """Pixels whose ground point lies on the board, ``margin`` inside its edge."""
    rows, cols = np.mgrid[0 : VIEW.height, 0 : VIEW.width] + 0.5
    x = (cols - VIEW.width / 2) * CAMERA_HEIGHT / VIEW.focal + CAMERA_X_OFFSET
    z = (VIEW.height / 2 - rows) * CAMERA_HEIGHT / VIEW.focal
    return (np.abs(x) < BOARD_HALF - margin) & (np.abs(z) < BOARD_HALF - margin)


def block_pixels(image: np.ndarray) -> np.ndarray:
    """Block (green or ink) pixels on the board: not the pale ground or the pink marker."""
    r, g = image[..., 0], image[..., 1]
    ground = (r > 200) & (g > 200) & (np.abs(r - g) < 25)
    return ~ground & ~goal_marker(image) & on_board()


def maps(renderer: ReleaseRenderer, frame: dict) -> dict[str, np.ndarray]:
    """Per-pixel face shares, ink, and the block each pixel belongs to (later drawn wins), at the frame's size."""
    board, n = frame["board"], len(frame["board"])
    drawn = rasterize(renderer.scene, VIEW, board, np.arange(n), np.full(n, frame["logo"]), renderer.textures,
                      renderer.samples, faces_out=True)  # fmt: skip
    faces = np.zeros((VIEW.height, VIEW.width, 4))
    ink = np.zeros((VIEW.height, VIEW.width))
    light = np.zeros((VIEW.height, VIEW.width))
    owner = np.full((VIEW.height, VIEW.width), -1)
    sign = np.zeros((VIEW.height, VIEW.width, 2))
    distance = np.abs(board[:, 0] + 0.03) + np.abs(board[:, 1])
    for b in np.argsort(-distance, kind="stable"):
        (r0, c0), cover = drawn["origin"][b], drawn["coverage"][b]
        p = cover.shape[0]
        rr, cc = slice(max(r0, 0), min(r0 + p, VIEW.height)), slice(max(c0, 0), min(c0 + p, VIEW.width))
        inner = slice(rr.start - r0, rr.stop - r0), slice(cc.start - c0, cc.stop - c0)
        mine = cover[inner] > 0
        faces[rr, cc][mine] = drawn["faces"][b][inner][mine]
        ink[rr, cc][mine] = drawn["ink"][b][inner][mine]
        light[rr, cc][mine] = drawn["light"][b][inner][mine]
        owner[rr, cc][mine] = b
        sign[rr, cc][mine] = [np.sign(board[b, 0] + 0.03), np.sign(board[b, 1])]
    return {"faces": faces, "ink": ink, "light": light, "owner": owner, "sign": sign}


def fit(renderer: ReleaseRenderer, frames: list[dict]) -> dict:
    """Least-squares colours from pixels one face covers whole (see the module's docstring)."""
    scene = json.loads(SCENE_FILE.read_text())
    rows, cols = np.mgrid[0 : VIEW.height, 0 : VIEW.width]
    u, v = (cols + 0.5) / VIEW.width * 2 - 1, (rows + 0.5) / VIEW.height * 2 - 1
    samples: dict[str, list] = {}
    for frame in frames:
        m = maps(renderer, frame)
        image, deco = frame["image"], "logo" if frame["logo"] else "digit"
        eroded = cv2.erode((m["owner"] >= 0).astype(np.uint8), np.ones((5, 5))) == 0
        ground = eroded & (m["owner"] < 0) & ~goal_marker(image)
        ground &= cv2.erode((~block_pixels(image)).astype(np.uint8), np.ones((5, 5))) > 0
        ground &= on_board()
        samples.setdefault("ground", []).append((u[ground], v[ground], image[ground]))
        clean = m["ink"] < 0.02
        for k, face in enumerate(("top", "x", "z")):
            pure = (m["faces"][..., k] > 0.999) & clean
            if face == "top":
                samples.setdefault(f"{deco}/top", []).append((u[pure], v[pure], image[pure]))
                continue
            for s, name in ((1, "+"), (-1, "-")):
                sel = pure & (m["sign"][..., k - 1] == s)
                samples.setdefault(f"{deco}/{face}/{name}", []).append((u[sel], v[sel], image[sel]))
        inked = (
            (m["ink"] > 0.98) & (m["faces"][..., 0] > 0.999) if frame["logo"] else m["faces"][..., 3] > 0.999
        )
        samples.setdefault(f"ink/{deco}", []).append((m["light"][inked], v[inked], image[inked]))
    for key, parts in samples.items():
        uu, vv, colour = (np.concatenate(p) for p in zip(*parts, strict=True))
        if key == "ink/digit":
            scene["ink"]["digit"] = np.round(np.median(colour, axis=0), 2).tolist()
            continue
        if key == "ink/logo":  # colour = dark + lightness * (white - dark), lightness the texel's (uu here)
            coef = np.linalg.lstsq(np.stack([np.ones_like(uu), uu], axis=1), colour, rcond=None)[0]
            scene["ink"]["logo"] = np.round(np.clip(coef[0], 0, 255), 2).tolist()
            scene["ink_white"] = np.round(np.clip(coef[0] + coef[1], 0, 255), 2).tolist()
            print(f"ink: {len(colour)} pixels, dark {scene['ink']['logo']}, white {scene['ink_white']}")
            continue
        quadratic = key == "ground"
        parts_ = [np.ones_like(uu), uu, vv] + ([uu * uu, vv * vv, uu * vv] if quadratic else [])
        design = np.stack(parts_, axis=1)
        if len(colour) < 3 * design.shape[1]:
            print(f"{key}: {len(colour)} pure pixels, left as it was")
            continue
        coef = np.linalg.lstsq(design, colour, rcond=None)[0].T
        target = scene["ground"] if quadratic else scene["faces"][key]
        target[:] = np.round(coef, 3).tolist()
        print(f"{key}: {len(colour)} pixels, mean {np.round(colour.mean(0), 1).tolist()}")
    SCENE_FILE.write_text(json.dumps(scene, indent=1) + "\n")
    return scene


def measure(renderer: ReleaseRenderer, frame: dict) -> tuple[dict, np.ndarray]:
    board, n = frame["board"], len(frame["board"])
    positions = np.zeros((1, MAX_BLOCKS, 2))
    positions[0, :n] = board
    present = np.zeros((1, MAX_BLOCKS), bool)
    present[0, :n] = True
    ours = renderer.render(positions, present, [frame["logo"]])[0].transpose(1, 2, 0).astype(np.float64)
    theirs = frame["image"]
    marker = cv2.dilate(goal_marker(theirs).astype(np.uint8), np.ones((5, 5))) > 0
    block_theirs, block_ours = block_pixels(theirs) & ~marker, block_pixels(ours) & ~marker
    # each pixel to the nearest predicted centre (at the top's height)
    rows, cols = VIEW.project(board[:, 0], board[:, 1], renderer.scene.top)
    grid_r, grid_c = np.mgrid[0 : VIEW.height, 0 : VIEW.width] + 0.5
    nearest = np.argmin((grid_r[..., None] - rows) ** 2 + (grid_c[..., None] - cols) ** 2, axis=-1)
    centre_error, size_error = [], []
    for b in range(n):
        a, o = block_theirs & (nearest == b), block_ours & (nearest == b)
        if a.sum() < 10 or o.sum() < 10:
            continue
        ca = np.array([grid_r[a].mean(), grid_c[a].mean()])
        co = np.array([grid_r[o].mean(), grid_c[o].mean()])
        centre_error.append(float(np.linalg.norm(ca - co)))
        ext = [np.ptp(grid_r[x]) + 1 for x in (a, o)], [np.ptp(grid_c[x]) + 1 for x in (a, o)]
        size_error.append(float(np.mean([abs(e[0] - e[1]) for e in ext])))
    edges = cv2.dilate((block_theirs | block_ours).astype(np.uint8), np.ones((3, 3))) > 0
    edges &= ~(cv2.erode((block_theirs & block_ours).astype(np.uint8), np.ones((3, 3))) > 0)
    both_block = block_theirs & block_ours & ~edges
    both_ground = ~block_theirs & ~block_ours & ~edges & ~marker
    diff = np.abs(ours - theirs).mean(axis=-1)
    result = {
        "frame": frame["name"],
        "blocks": n,
        "centre_median_px": round(float(np.median(centre_error)), 2),
        "centre_max_px": round(float(np.max(centre_error)), 2),
        "silhouette_error_px": round(float(np.median(size_error)), 2),
        "colour_error_blocks": round(float(diff[both_block].mean()), 2),
        "colour_error_ground": round(float(diff[both_ground].mean()), 2),
    }
    return result, ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scene-dir", type=Path, default=Path(__file__).parents[1] / "../shared/data/release-scene"
    )
    parser.add_argument("--data", type=Path, default=None, help="the corpus (default: $BLOCKS_DATA)")
    parser.add_argument("--fit", action="store_true", help="refit release_scene.json's colours first")
    parser.add_argument("--pictures", type=Path, default=None, help="write frame | ours side by side here")
    args = parser.parse_args()
    data_root = args.data or default_data_root()
    frames = load(args.scene_dir, Path(data_root))
    if args.fit:
        fit(ReleaseRenderer(data_root, view=VIEW), frames)
    renderer = ReleaseRenderer(data_root, view=VIEW)
    results = []
    for frame in frames:
        result, ours = measure(renderer, frame)
        results.append(result)
        print(json.dumps(result))
        if args.pictures:
            args.pictures.mkdir(parents=True, exist_ok=True)
            pair = np.concatenate([frame["image"], np.full((VIEW.height, 6, 3), 255.0), ours], axis=1)
            cv2.imwrite(
                str(args.pictures / f"{frame['name']}.jpg"),
                pair[..., ::-1].astype(np.uint8),
                [cv2.IMWRITE_JPEG_QUALITY, 90],
            )
    worst = {
        key: max(r[key] for r in results)
        for key in ("centre_median_px", "centre_max_px", "silhouette_error_px")
    }
    worst["colour_error"] = max(max(r["colour_error_blocks"], r["colour_error_ground"]) for r in results)
    print(json.dumps(worst))


if __name__ == "__main__":
    main()
