"""The release's picture (``data.render=release``): its projection, its cubes, its cache, its calibration."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from blocks.errors import ConfigError
from blocks.render import Camera, ReleaseRenderer, make_renderer
from blocks.render.release import View
from blocks.tensor_world import HostRenderer, device_renderer
from blocks.world.geometry import MAX_BLOCKS

REPO = Path(__file__).resolve().parents[2]
SCENE = REPO.parent / "shared" / "data" / "release-scene"


@pytest.fixture(scope="module")
def release() -> ReleaseRenderer:
    return ReleaseRenderer(logos=False)


def _board(*blocks: tuple[float, float], logo: bool = False):
    positions = np.zeros((1, MAX_BLOCKS, 2))
    positions[0, : len(blocks)] = blocks
    present = np.zeros((1, MAX_BLOCKS), bool)
    present[0, : len(blocks)] = True
    return positions, present, [logo]


def _block_mask(image: np.ndarray) -> np.ndarray:
    """Green block pixels of a ``(3, H, W)`` picture: green well above red (the ground is pale yellow)."""
    red, green = image[0].astype(int), image[1].astype(int)
    return green - red > 60


def test_projection_is_the_release_camera():
    """Pinned numbers: the 120 px view is the package's camera, and the release's 422 x 466 window has the
    focal length its 60 degree vertical field of view gives (403.57 px)."""
    view, camera = View(120, 120), Camera(120)
    x, z = np.array([0.5, -1.0, 0.0]), np.array([-0.5, 0.25, 1.0])
    for h in (0.0, 0.1762):
        assert np.allclose(view.project(x, z, h), camera.project(x, z, h))
    frame = View(422, 466)
    assert frame.focal == pytest.approx(403.5677, abs=1e-3)
    row, col = frame.project(np.array([0.974884]), np.array([-0.803592]), 0.1762)
    assert (float(row[0]), float(col[0])) == pytest.approx((388.26, 405.15), abs=0.01)


def test_block_centre_lands_where_its_top_face_projects(release):
    for x, z in ((0.0, 0.0), (0.6, -0.4), (-0.9, 0.8)):
        image = release.render(*_board((x, z)))[0]
        rows, cols = np.nonzero(_block_mask(image))
        top_row, top_col = release.camera.project(np.array(x), np.array(z), release.scene.top)
        # the silhouette holds the top face and, toward the centre, the sides: the top's centre lies within it,
        # and the silhouette's far edge is the top face's far edge
        assert rows.min() <= top_row <= rows.max() + 1 and cols.min() <= top_col <= cols.max() + 1
        if x > 0.1:
            assert cols.max() + 1 == pytest.approx(
                top_col + release.camera.pixels_per_unit(0.1762) * 0.0762, abs=1
            )


def test_sides_show_toward_the_centre_and_grow_to_the_corners(release):
    centre = _block_mask(release.render(*_board((-0.03, 0.0)))[0])
    corner = _block_mask(release.render(*_board((0.95, -0.95)))[0])
    width = lambda mask: np.ptp(np.nonzero(mask)[1]) + 1  # noqa: E731
    assert width(centre) in (7, 8)  # the top face alone: no side faces the camera there
    assert width(corner) >= width(centre) + 2  # about 3 px of side at 120 px
    image = release.render(*_board((0.95, -0.95)))[0]
    rows, cols = np.nonzero(_block_mask(image))
    left_column = image[:, rows[cols == cols.min()], cols.min()].mean(axis=1)
    top_row = release.camera.project(np.array(0.95), np.array(-0.95), release.scene.top)
    assert cols.min() < top_row[1] - 4  # the extra columns are on the centre's side (left)
    assert not np.allclose(left_column, image[:, int(top_row[0]), int(top_row[1])])  # a second shade


def test_cached_patches_give_the_pictures_drawn_fresh(release):
    rng = np.random.default_rng(0)
    positions = rng.uniform(-1.2, 1.2, (5, MAX_BLOCKS, 2))
    present = rng.random((5, MAX_BLOCKS)) < 0.8
    logo = [False, True, False, True, False]
    first = release.render(positions, present, logo)
    again = release.render(positions, present, logo)
    fresh = ReleaseRenderer(logos=False).render(positions, present, logo)
    one_by_one = np.stack(
        [release.render(positions[i : i + 1], present[i : i + 1], logo[i : i + 1])[0] for i in range(5)]
    )
    assert np.array_equal(first, again) and np.array_equal(first, fresh) and np.array_equal(first, one_by_one)


def test_the_patch_store_stays_bounded_and_the_pictures_the_same(release):
    """A wandering learner meets new positions without end: the store drops its older half when full."""
    rng = np.random.default_rng(1)
    bounded = ReleaseRenderer(logos=False, max_patches=100)
    present = np.ones((4, MAX_BLOCKS), bool)
    first = rng.uniform(-1.2, 1.2, (4, MAX_BLOCKS, 2))
    expected = release.render(first, present, [False, True, False, True])
    assert np.array_equal(bounded.render(first, present, [False, True, False, True]), expected)
    for _ in range(6):
        bounded.render(rng.uniform(-1.2, 1.2, (4, MAX_BLOCKS, 2)), present, [True] * 4)
        assert len(bounded._patches) <= 100
    assert np.array_equal(bounded.render(first, present, [False, True, False, True]), expected)


def test_a_store_whose_squares_grow_gives_the_same_pictures(release):
    """The squares start at the largest drawing on the board; one started too small grows, moving every kept
    patch (squares near the picture's edge sit inside it, their drawings offset within)."""
    from blocks.render.release import PatchStore

    rng = np.random.default_rng(4)
    positions = rng.uniform(-1.25, 1.25, (6, MAX_BLOCKS, 2))
    present = np.ones((6, MAX_BLOCKS), bool)
    logo = [False, True] * 3
    small = ReleaseRenderer(logos=False)
    small._patches = PatchStore(120, 120, side=3, capacity=2)
    expected = release.render(positions, present, logo)
    assert np.array_equal(small.render(positions[:1], present[:1], logo[:1]), expected[:1])
    assert np.array_equal(small.render(positions, present, logo), expected)
    assert 3 < small._patches.side <= release._patches.side


def test_a_full_store_keeps_the_patches_of_the_batch_it_draws(release):
    """The older half dropped to make room may hold blocks of the very batch being drawn: they are drawn again."""
    rng = np.random.default_rng(2)
    bounded = ReleaseRenderer(logos=False, max_patches=100)
    present = np.ones((4, MAX_BLOCKS), bool)
    old = rng.uniform(-1.2, 1.2, (4, MAX_BLOCKS, 2))
    bounded.render(old, present, [False] * 4)  # 80 patches, the oldest in the store
    mixed = np.concatenate([old[:1], rng.uniform(-1.2, 1.2, (3, MAX_BLOCKS, 2))])  # 20 kept, 60 new: full
    expected = release.render(mixed, present, [False] * 4)
    assert np.array_equal(bounded.render(mixed, present, [False] * 4), expected)


def test_digit_labels_are_dark_text_over_green_and_differ(release):
    """Block i carries the number i + 1: the same place drawn as block 0 ("1") and as block 1 ("2")."""
    pictures = []
    for block in (0, 1):
        positions, present, logo = _board((0.3, 0.3), (0.3, 0.3))
        present[0, 1 - block] = False
        pictures.append(release.render(positions, present, logo)[0])
    for picture in pictures:
        assert (picture.astype(int).sum(axis=0) < 250).sum() >= 4  # dark ink on the block
    assert not np.array_equal(pictures[0], pictures[1])


def test_picture_pinned():
    """The pixels every network trained on the release's picture saw; a change here needs new checkpoints."""
    positions = np.random.default_rng(0).uniform(-1.2, 1.2, (4, MAX_BLOCKS, 2))
    images = ReleaseRenderer(logos=False).render(positions, np.ones((4, MAX_BLOCKS), bool), [False] * 4)
    assert hashlib.sha256(images.tobytes()).hexdigest()[:16] == "439d5d24a7015809"


def test_logo_picture_pinned(corpus_root):
    """The same on logo boards (their textures come with the corpus): logos, ink and light as trained on."""
    positions = np.random.default_rng(0).uniform(-1.2, 1.2, (4, MAX_BLOCKS, 2))
    logo = [True, False, True, True]
    images = ReleaseRenderer(corpus_root).render(positions, np.ones((4, MAX_BLOCKS), bool), logo)
    assert hashlib.sha256(images.tobytes()).hexdigest()[:16] == "23fea95b6498c66e"


def test_torch_world_draws_the_same_pictures(release):
    rng = np.random.default_rng(1)
    positions = rng.uniform(-1.0, 1.0, (3, MAX_BLOCKS, 2))
    present = rng.random((3, MAX_BLOCKS)) < 0.7
    logo = np.array([True, False, True])
    host = device_renderer(release, "cpu")
    assert isinstance(host, HostRenderer)
    drawn = host.render(torch.from_numpy(positions), torch.from_numpy(present), torch.from_numpy(logo))
    assert drawn.dtype == torch.uint8 and np.array_equal(
        drawn.numpy(), release.render(positions, present, logo)
    )


def test_renderer_by_name():
    assert isinstance(make_renderer("release", logos=False), ReleaseRenderer)
    with pytest.raises(ConfigError, match="data.render='glossy'.*flat, release"):
        make_renderer("glossy", logos=False)


@pytest.mark.skipif(
    not (SCENE / "example1.png").exists(), reason="the release's frames are not beside the repo"
)
def test_calibration_against_the_release_frames(corpus_root):
    """The figures docs/experiments/release-pictures.md reports, recomputed: geometry within the issue's goals."""
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "release_frames.py"), "--data", str(corpus_root)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    worst = json.loads(out.stdout.strip().splitlines()[-1])
    assert worst["centre_median_px"] <= 2.0 and worst["silhouette_error_px"] <= 1.0
    assert worst["colour_error"] < 25


def test_a_run_refuses_weights_learnt_from_the_other_picture(tmp_path):
    from blocks.checks import check_picture

    old = tmp_path / "flat.ckpt"  # a checkpoint from before the choice: the flat picture
    torch.save({"hyper_parameters": {"vocabulary": ["a"]}, "state_dict": {}}, old)
    check_picture("pretrain.checkpoint", str(old), "flat")
    with pytest.raises(
        ConfigError, match=r"learnt from data.render=flat pictures, this run draws data.render=release"
    ):
        check_picture("pretrain.checkpoint", str(old), "release")
    new = tmp_path / "release.ckpt"
    torch.save({"hyper_parameters": {"vocabulary": ["a"], "render": "release"}, "state_dict": {}}, new)
    check_picture("model.init_checkpoint", str(new), "release")


def test_the_heap_is_trimmed_every_few_drawings(monkeypatch):
    """New patches leave the heap fragmented (a bandit grew to 12 GB): every TRIM_EVERY drawings its free pages go
    back to the system; boards already drawn cost no trim."""
    import blocks.render.release as release_module

    calls, original = [], release_module._release_free_heap
    monkeypatch.setattr(release_module, "_release_free_heap", lambda: calls.append(1))
    renderer = ReleaseRenderer(logos=False)
    rng = np.random.default_rng(3)
    present = np.ones((1, MAX_BLOCKS), bool)
    boards = [rng.uniform(-1.2, 1.2, (1, MAX_BLOCKS, 2)) for _ in range(2 * release_module.TRIM_EVERY)]
    for board in boards:
        renderer.render(board, present, [False])
    assert len(calls) == 2
    for board in boards:  # every patch kept: nothing drawn, nothing trimmed
        renderer.render(board, present, [False])
    assert len(calls) == 2
    original()  # the real call: glibc's malloc_trim, or nothing where the C library has none


def test_the_board_reader_learns_and_reads_the_release_cubes_at_their_top_faces(release, tmp_path):
    """Cells are labelled under the cubes' top faces (taller than the flat picture's), and a reader of these
    pictures takes positions back at that height: cells labelled as taught decode to blocks near the board's edge
    with no outward bias, where the flat picture's height pushes them out by about 0.05 block length."""
    from blocks.agents.reader import ReadAndPlanAgent
    from blocks.data.boards import cell_targets, random_boards
    from blocks.learn.perception import PerceptionLearner
    from blocks.model.checkpoint import load_reader
    from blocks.model.goal_predictor import GoalPredictor
    from blocks.model.perception import NUM_CLASSES, BoardReader, board_positions, cell_centres
    from blocks.world.geometry import BLOCK_SIDE

    positions, present, _ = random_boards(np.random.default_rng(3), 64)
    targets = cell_targets(release, positions, present)
    for i in range(4):
        assert set(np.unique(targets[i])) - {0} == {b + 1 for b in np.flatnonzero(present[i])}
    logits = 30.0 * torch.nn.functional.one_hot(torch.from_numpy(targets), NUM_CLASSES).permute(0, 3, 1, 2)
    rows, columns, _ = cell_centres(logits.float())
    reader = BoardReader(render="release")
    assert reader.face_height == pytest.approx(release.scene.top)
    outward = {}
    far = present & (np.abs(positions).max(-1) > 0.9)
    for name, height in (("release", reader.face_height), ("flat", BLOCK_SIDE)):
        found = board_positions(rows, columns, reader.camera, height).numpy()
        outward[name] = ((found - positions) * np.sign(positions))[far].mean() / BLOCK_SIDE
    assert abs(outward["release"]) < 0.02 and outward["flat"] > 0.035

    learner = PerceptionLearner(channels=8)  # the run names its picture after construction, as train.py does
    learner.hparams["render"] = "release"
    learner.setup("fit")
    assert learner.reader.face_height == pytest.approx(release.scene.top)
    path = tmp_path / "reader.ckpt"
    torch.save({"hyper_parameters": dict(learner.hparams), "state_dict": learner.state_dict()}, path)
    loaded = load_reader(path)
    assert (loaded.render, loaded.face_height) == ("release", pytest.approx(release.scene.top))
    agent = ReadAndPlanAgent(loaded, GoalPredictor(3, dim=16, heads=2, layers=1), ["a", "b", "c"])
    assert agent.render == "release"  # the evaluator draws the picture the reader learnt
