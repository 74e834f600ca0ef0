"""The demo page's server: its answers in-process, its refusals, and the command that starts it."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from blocks.agents import RandomAgent, StopAgent
from blocks.corpus.text import Vocabulary
from blocks.demo.app import MAX_CHARACTERS, DemoApp, DemoError, describe_steps, word_notes
from blocks.demo.server import DemoServer
from blocks.episode import Episode
from blocks.evaluate import run_episodes
from blocks.render.renderer import Renderer
from blocks.world.geometry import STOP

REPO = Path(__file__).resolve().parents[2]
CHECKPOINTS = REPO / "checkpoints"


@pytest.fixture(scope="module")
def app(corpus_root) -> DemoApp:
    return DemoApp(corpus_root, CHECKPOINTS)


@pytest.fixture(scope="module")
def server(app):
    served = DemoServer(app, "127.0.0.1", 0)
    served.start_in_thread()
    yield served
    served.shutdown()
    served.server_close()


def call(server: DemoServer, path: str, body: bytes | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        server.url + path, data=body, method="POST" if body is not None else "GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_stop_and_random_score_as_eval_does(app):
    """The page's error is eval.py's for that example: the same world, and a sampling agent the same seed."""
    examples = app.examples[:6]
    for name, agent in (("stop", StopAgent()), ("random", RandomAgent())):
        expected = [r.error for r in run_episodes(agent, examples, batch_size=4, seed=0, progress=False)]
        shown = [app.run({"index": i, "agent": name})["error"] for i in range(len(examples))]
        assert shown == pytest.approx(expected, abs=1e-4), name
    assert len({round(e, 3) for e in expected}) > 1  # random boards differ: the comparison means something


def test_an_episode_comes_as_frames_and_steps_in_words(app):
    result = app.run({"index": 3, "agent": "random"})
    assert result["frames"][0].startswith("data:image/png;base64,")
    assert len(result["frames"]) == len(result["steps"]) and result["steps"][0] == "start"
    assert result["corpus_instruction"] and result["error"] is not None
    own = app.run({"index": 3, "agent": "stop", "instruction": "leave everything where it is"})
    assert not own["corpus_instruction"] and own["error"] is None  # no gold goal for the user's own words
    assert own["steps"] == ["start", "STOP"]


def test_read_and_plan_on_the_page_scores_as_eval_does(app):
    """The default agent, on the first boards: the same errors as run_episodes, which eval.py calls."""
    from blocks.agents.reader import ReadAndPlanAgent

    agent = ReadAndPlanAgent.from_checkpoints(
        str(CHECKPOINTS / "ours" / "board_reader.ckpt"), str(CHECKPOINTS / "ours" / "goal_predictor.ckpt")
    )
    examples = app.examples[:3]
    expected = run_episodes(
        agent, examples, seed=0, progress=False, render_frames=Renderer(app.data_root).render
    )
    shown = [app.run({"index": i})["error"] for i in range(len(examples))]
    assert shown == pytest.approx([r.error for r in expected], abs=1e-4)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"index": 1, "instruction": ""}, "type an instruction"),
        ({"index": 1, "instruction": "   \n"}, "type an instruction"),
        (
            {"index": 1, "instruction": "x" * 10_000},
            f"has 10,000 characters; the agents read at most {MAX_CHARACTERS:,}",
        ),
        ({"index": 1, "instruction": "\U0001f600\U0001f4a5"}, "no words the agents can read"),
        ({"index": 1, "instruction": 7}, "must be text"),
        ({"index": 99_999}, "board index 99999 is out of range: the dev split has 1719 examples, 0 to 1718"),
        ({"index": -1}, "board index -1 is out of range"),
        ({"index": "abc"}, "board index 'abc' is not a whole number"),
        ({"index": 2.5}, "board index must be a whole number"),
        ({"agent": "../../etc/passwd"}, "unknown agent '../../etc/passwd'; choose one of read_and_plan"),
        ({"agent": "stop", "ckpt_path": "/tmp/x.ckpt"}, "unknown field(s) ['ckpt_path']"),
        ({"agent": "random", "seed": -3}, "the seed -3 is out of range"),
        ({"agent": "random", "seed": "x"}, "the seed 'x' is not a whole number"),
        ({"agent": "random", "seed": 1.5}, "the seed must be a whole number"),
    ],
)
def test_bad_input_is_a_message(app, request_, message):
    with pytest.raises(DemoError, match=re.escape(message)):
        app.run(request_)


def test_a_missing_checkpoint_is_named_and_the_rest_still_run(corpus_root, tmp_path):
    app = DemoApp(corpus_root, tmp_path / "nowhere")
    listing = {a["name"]: a for a in app.agents()}
    assert not listing["read_and_plan"]["available"] and listing["stop"]["available"]
    assert "board_reader.ckpt" in listing["read_and_plan"]["missing"]
    with pytest.raises(DemoError, match="agent approach cannot run: .*paper/approach.ckpt not found"):
        app.run({"index": 0, "agent": "approach"})
    assert app.run({"index": 0, "agent": "stop"})["error"] > 0


def test_a_checkpoint_that_is_not_one_is_a_message(corpus_root, tmp_path):
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper" / "supervised_release_pictures.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(DemoError, match="agent supervised cannot run: "):
        DemoApp(corpus_root, tmp_path).run({"index": 0, "agent": "supervised"})


def test_words_the_agent_never_saw_are_listed_with_how_it_reads_them():
    vocab = Vocabulary(["move", "the", "block", "in", "front", "of", "5"])
    notes = word_notes("Move the \U0001f600 block infront of 5 zorp", [vocab], mends=True)
    assert notes[0] == "skipped (not words): \U0001f600"
    assert "infront (read as in front), zorp;" in notes[1]
    assert word_notes("move the block", [vocab]) == []


def test_a_move_that_left_the_board_as_it_was_is_marked_blocked():
    still = np.zeros((1, 2))
    episode = Episode("x", positions=[still, still, still + 0.1, still + 0.1], actions=[2, 3, STOP])
    assert describe_steps(episode) == ["block 1 up (blocked)", "block 1 down", "STOP"]


def test_the_server_answers_refuses_and_keeps_serving(server, monkeypatch):
    status, page = 200, urllib.request.urlopen(server.url + "/", timeout=10).read().decode()
    assert status == 200 and 'id="run"' in page and "<script>" in page
    assert call(server, "/api/agents")[1]["agents"][0]["name"] == "read_and_plan"
    status, board = call(server, "/api/board?index=5")
    assert status == 200 and board["index"] == 5 and board["image"].startswith("data:image/png")
    assert 0 <= call(server, "/api/board?index=random")[1]["index"] < board["count"]
    assert call(server, "/api/board?index=5000") == (400, {"error": "board index 5000 is out of range: the dev "
                                                                   "split has 1719 examples, 0 to 1718"})  # fmt: skip
    assert call(server, "/api/run", b"{not json") == (400, {"error": "the request is not JSON"})
    assert call(server, "/api/run", b"x" * 70_000)[0] == 400
    assert call(server, "/etc/passwd")[0] == 404
    monkeypatch.setattr(server.app, "run", lambda request: 1 / 0)  # a bug inside: one line, then on as before
    status, answer = call(server, "/api/run", b'{"agent": "stop"}')
    assert status == 500 and answer["error"].startswith("the server failed (ZeroDivisionError")
    monkeypatch.undo()
    status, episode = call(server, "/api/run", json.dumps({"index": 2, "agent": "stop"}).encode())
    assert status == 200 and episode["steps"] == ["start", "STOP"]


def demo_command(*args: str, cwd: Path, corpus_root: Path) -> subprocess.Popen:
    env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "blocks.demo", *args], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.slow
def test_the_command_serves_on_localhost_and_writes_only_its_log(corpus_root, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    process = demo_command("port=0", f"checkpoints={CHECKPOINTS}", cwd=work, corpus_root=corpus_root)
    try:
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", line).group(0)
        with urllib.request.urlopen(
            urllib.request.Request(url + "/api/run", data=b'{"index": 4, "agent": "stop"}'), timeout=60
        ) as response:
            assert json.loads(response.read())["steps"] == ["start", "STOP"]
    finally:
        process.terminate()
        process.wait(timeout=30)
    written = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    assert written == ["logs", "logs/demo", "logs/demo/demo.log"]
    assert "POST /api/run" in (work / "logs/demo/demo.log").read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["port=abc"], "error: port=abc: a whole number from 1 to 65535"),
        (["colour=red"], "error: unknown option(s) ['colour']"),
        (["7861"], "error: '7861': options are key=value"),
    ],
)
def test_a_mistake_on_the_command_line_is_one_line(args, message, corpus_root, tmp_path):
    process = demo_command(*args, cwd=tmp_path, corpus_root=corpus_root)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2 and stderr.startswith(message) and len(stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_port_in_use_is_one_line(app, corpus_root, tmp_path):
    taken = DemoServer(app, "127.0.0.1", 0)
    try:
        port = taken.server_address[1]
        process = demo_command(f"demo.port={port}", cwd=tmp_path, corpus_root=corpus_root)
        _, stderr = process.communicate(timeout=60)
    finally:
        taken.server_close()
    assert process.returncode == 2
    assert stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}") and "port=<number>" in stderr


def test_a_move_of_a_block_not_on_the_board_is_drawn_and_described_without_a_ring():
    """RANDOM and the policies may name any of 20 blocks; a board of 3 has no block 19 to ring (it was a 500)."""
    from blocks.render.marks import draw_frames
    from blocks.world.geometry import NUM_DIRECTIONS
    from blocks.world.task import Task

    start = np.array([[0.0, 0.0], [0.5, 0.5], [-0.5, -0.5]])
    task = Task(start, start, "digit")
    renderer = Renderer(size=480, logos=False)
    frame = renderer.render_board(start, False)
    absent, present = 19 * NUM_DIRECTIONS, 1 * NUM_DIRECTIONS  # block 20 left (absent), block 2 left
    episode = Episode("x", frames=[frame] * 4, positions=[task.start] * 4, actions=[absent, present, STOP])
    marks = {"gold_goal": start[1], "aim": np.array([0.2, 0.2])}
    frames = draw_frames(episode.frames, episode.positions, episode.actions, **marks)
    assert len(frames) == 4 and all(f.shape == (480, 480, 3) for f in frames)
    assert np.array_equal(frames[1], draw_frames([frame] * 2, [start] * 2, [STOP], **marks)[1])
    assert not np.array_equal(frames[2], frames[1])  # the block that is there is ringed
    assert describe_steps(episode)[0].endswith("(blocked)")


def test_the_board_is_drawn_for_a_person_with_the_gold_goal_beside_what_the_agent_sees(app):
    """The person's view is drawn at 480 pixels (not the agent's 120 enlarged), with the corpus's goal before any
    run; the agent's own 120-pixel picture comes beside it, and a logo board names its logos."""
    import base64

    import cv2

    def pixels(url: str) -> np.ndarray:
        data = np.frombuffer(base64.b64decode(url.split(",", 1)[1]), np.uint8)
        return cv2.imdecode(data, cv2.IMREAD_COLOR)

    board = app.board(3, "flat", "stop")
    assert pixels(board["image"]).shape == (480, 480, 3) and board["agent_image"] is None  # STOP sees nothing
    assert not np.array_equal(pixels(board["image"]), pixels(board["plain"]))  # the goal is drawn on it
    logos = next(i for i, e in enumerate(app.examples) if e.decoration == "logo")
    board = app.board(logos, "release", "random")
    assert board["view"] == "release" and len(board["legend"]) == len(app.examples[logos].task.start)
    assert board["legend"][0]["name"] == "Adidas" and board["gold"]["block"] in [
        x["name"] for x in board["legend"]
    ]
    with pytest.raises(DemoError, match="unknown view 'crayon'"):
        app.board(3, "crayon")
    presets = app.presets()
    assert len({p["index"] for p in presets}) == len(presets) >= 4


def test_an_episode_carries_the_agents_own_pictures_its_moves_and_downloads_as_gif(app):
    result = app.run({"index": 4, "agent": "random", "seed": 3})
    assert result["agent_frames"] == [] and result["picture"] is None  # RANDOM sees no picture
    assert len(result["positions"]) == len(result["frames"]) == len(result["actions"]) + 1
    assert result["stopped"] != result["hit_step_limit"]
    gif = app.gif({"index": 4, "agent": "random", "seed": 3})
    from PIL import Image

    with Image.open(io.BytesIO(gif)) as image:
        assert image.format == "GIF" and image.n_frames == len(result["frames"])


def test_random_takes_a_seed_and_an_episode_says_when_it_hit_the_step_limit(app):
    """The same seed repeats an episode (eval.py's seed=N for that board), another gives another; a run cut off
    by the 40-step limit says so."""
    first = app.run({"index": 4, "agent": "random", "seed": 7})
    assert (
        first["seed"] == 7 and app.run({"index": 4, "agent": "random", "seed": 7})["steps"] == first["steps"]
    )
    others = {tuple(app.run({"index": 4, "agent": "random", "seed": s})["steps"]) for s in range(8)}
    assert len(others) > 1
    assert app.run({"index": 4, "agent": "random"})["seed"] == 0  # eval.py's default
    stop = app.run({"index": 4, "agent": "stop"})
    assert stop["hit_step_limit"] is False and stop["step_limit"] == 40


def test_the_server_refuses_deep_nesting_and_other_methods_in_json(server):
    deep = b"[" * 30_000 + b"]" * 30_000  # under the 64 KB limit
    assert call(server, "/api/run", deep) == (
        400,
        {"error": "the request nests too deeply: send one flat JSON object"},
    )
    for method in ("PUT", "DELETE", "OPTIONS", "PATCH"):
        request = urllib.request.Request(server.url + "/api/run", data=b"{}", method=method)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 405 and json.loads(refused.value.read())["error"].startswith(method)
    with urllib.request.urlopen(urllib.request.Request(server.url + "/", method="HEAD"), timeout=10) as head:
        assert head.status == 200 and int(head.headers["Content-Length"]) > 1000 and head.read() == b""
    assert call(server, "/api/board?index=")[0] == 400  # an empty board field is not board 0
    request = urllib.request.Request(
        server.url + "/api/gif", data=b'{"index": 2, "agent": "stop"}', method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as gif:
        assert gif.headers["Content-Type"] == "image/gif" and gif.read(6) == b"GIF89a"
    assert call(server, "/api/gif", b'{"index": 99999}')[0] == 400
