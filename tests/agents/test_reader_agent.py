"""The read-and-plan agent (ours): given a true reading it walks the demonstration's way and stops; a misread
board makes it read again; the board reader and goal predictor learn what they are meant to on small data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from blocks.agents.reader import ReadAndPlanAgent
from blocks.evaluate import evaluate
from blocks.model.goal_predictor import GoalPredictor
from blocks.model.perception import BoardReader
from blocks.world.geometry import BLOCK_SIDE
from blocks.world.planner import moved_block
from blocks.world.task import Task
from blocks.world.transitions import pad_boards
from blocks.world.vector_env import VectorBlocksEnv

from ..conftest import load_script

WORDS = ["<pad>", "<unk>", "move"]


class TruthfulAgent(ReadAndPlanAgent):
    """Reads the simulator instead of the picture: what a perfect reader and goal predictor would give."""

    def begin(self, tasks, seed=None, instructions=None):
        super().begin(tasks, seed, instructions)
        self.tasks = tasks

    def perceive(self, frames, rows):
        for row in rows:
            task = self.tasks[row]
            positions, present = pad_boards([task.start])
            block = moved_block(task)
            self.plans[row] = self.plan_for(positions[0], present[0], block, task.goal[block])
        self.needs_plan[rows] = False


def agent(cls=ReadAndPlanAgent) -> ReadAndPlanAgent:
    return cls(BoardReader(), GoalPredictor(len(WORDS), dim=16, heads=2, layers=1), WORDS)


def test_with_a_true_reading_it_follows_the_shortest_path_and_stops(corpus_root, renderer):
    from blocks.agents.baselines import DemonstrationAgent
    from blocks.corpus.loader import load_split

    examples = load_split("dev", corpus_root)[:24]
    truthful = evaluate(agent(TruthfulAgent), examples, render_frames=renderer.render, progress=False)
    demonstrated = evaluate(DemonstrationAgent(), examples, progress=False)
    assert truthful["mean_error"] == pytest.approx(demonstrated["mean_error"], abs=1e-9)
    assert truthful["horizon_rate"] == 0.0


def test_a_failed_move_makes_it_read_again_and_it_stops_after_too_many(renderer):
    """The perceived board puts block 1 elsewhere: the path runs into it, the picture does not change, the agent
    reads again (the same misreading) and gives up after ``max_replans`` failures."""

    class Misreading(ReadAndPlanAgent):
        reads = 0

        def perceive(self, frames, rows):
            self.reads += 1
            for row in rows:  # block 0 must go right; block 1 is perceived far away but stands in the way
                self.plans[row] = self.plan_for(np.array([[0.0, 0.0], [5.0, 5.0]]), np.array([True, True]), 0,
                                                np.array([0.5, 0.0]))  # fmt: skip
            self.needs_plan[rows] = False

    task = Task(np.array([[0.0, 0.0], [0.2, 0.0]]), np.array([[0.5, 0.0], [0.2, 0.0]]))
    env = VectorBlocksEnv(render_frames=renderer.render)
    reader_agent = agent(Misreading)
    reader_agent.max_replans = 2
    observation, _ = env.reset([task])
    reader_agent.begin([task], instructions=["move"])
    actions = []
    while not env.all_done:
        action = reader_agent.act(observation)
        actions.append(int(action[0]))
        observation, *_ = env.step(action)
    assert reader_agent.reads == 3 and actions[-1] == 80 and len(actions) == 4  # 3 failed moves, then STOP


def test_untrained_networks_give_a_valid_plan_from_pictures(renderer, two_block_task):
    torch.manual_seed(0)
    reader_agent = agent()
    env = VectorBlocksEnv(render_frames=renderer.render)
    observation, _ = env.reset([two_block_task] * 2)
    reader_agent.begin([two_block_task] * 2, instructions=["move", "move"])
    actions = reader_agent.act(observation)
    assert actions.shape == (2,) and ((actions >= 0) & (actions <= 80)).all()
    assert reader_agent.perceived["positions"].shape == (2, 20, 2)


def test_cell_targets_mark_each_block_face_and_random_boards_never_overlap(renderer):
    from blocks.data.boards import cell_targets, random_boards
    from blocks.world.geometry import COLLISION_REACH

    positions, present, logo = random_boards(np.random.default_rng(0), 16)
    for board, seen in zip(positions, present, strict=True):
        points = board[seen]
        gaps = np.abs(points[:, None] - points[None]).max(-1) + np.eye(len(points)) * 9
        assert (gaps > COLLISION_REACH).all()
    targets = cell_targets(renderer, positions, present)
    for i in range(16):
        assert set(np.unique(targets[i])) - {0} == {b + 1 for b in np.flatnonzero(present[i])}
    # a block's cells sit where the camera draws its face
    row, column = renderer.camera.project(
        positions[0, present[0]][:, 0], positions[0, present[0]][:, 1], 0.1524
    )
    for label, r, c in zip(np.flatnonzero(present[0]), row, column, strict=True):
        assert targets[0, int(r) // 4, int(c) // 4] == label + 1


def test_the_reader_learns_a_fixed_batch_and_decodes_positions(renderer):
    from blocks.data.boards import board_batch, random_boards
    from blocks.learn.perception import PerceptionLearner

    torch.manual_seed(0)
    learner = PerceptionLearner(channels=32)
    batch = board_batch(renderer, *random_boards(np.random.default_rng(1), 6))
    optimizer = torch.optim.Adam(learner.parameters(), lr=3e-3)
    for _ in range(140):
        loss = torch.nn.functional.cross_entropy(
            learner.reader(batch["images"])[0], batch["cells"], weight=learner.class_weights
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    found, found_present, _ = learner.reader.read(batch["images"])
    distance = torch.linalg.vector_norm(found - batch["positions"], dim=-1)[batch["present"]] / 0.1524
    assert (found_present[batch["present"]]).float().mean() > 0.8 and distance.median() < 0.5


def test_the_goal_predictor_fits_a_few_instructions(corpus_root):
    from blocks.corpus.loader import load_split
    from blocks.corpus.text import Vocabulary
    from blocks.data.goals import goal_batch
    from blocks.learn.goal import goal_errors
    from blocks.model.goal_predictor import goal_losses

    examples = load_split("dev", corpus_root)[:32]
    vocabulary = Vocabulary.build(x.tokens for x in examples)
    batch = goal_batch(examples, [vocabulary.encode(x.tokens) for x in examples])
    torch.manual_seed(0)
    predictor = GoalPredictor(len(vocabulary), dim=64, heads=2, layers=1)
    optimizer = torch.optim.Adam(predictor.parameters(), lr=5e-3)
    _, before, _, _ = goal_errors(predictor, batch)
    for _ in range(120):
        moved, goals, _ = predictor(
            batch["tokens"], batch["lengths"], batch["positions"], batch["present"], batch["logo"]
        )
        loss = sum(goal_losses(moved, goals, batch["block"], batch["goal"]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    found, after, _, goal = goal_errors(predictor, batch)
    assert found.float().mean() > 0.9 and after.mean() < 0.5 * before.mean()
    assert torch.allclose(torch.linalg.vector_norm(goal - batch["goal"], dim=-1), after)  # the goal it scored
    # Read as one with an untrained copy between two of it, the goals are its own: the median, not the mean.
    untrained = GoalPredictor(len(vocabulary), dim=64, heads=2, layers=1)
    found_three, three, _, _ = goal_errors([predictor, untrained, predictor], batch)
    same = found & found_three
    assert same.float().mean() > 0.8 and torch.allclose(three[same], after[same], atol=1e-5)


def test_two_copies_of_a_goal_predictor_act_as_one(renderer, two_block_task):
    torch.manual_seed(0)
    reader, predictor = BoardReader(), GoalPredictor(len(WORDS), dim=16, heads=2, layers=1).eval()
    env = VectorBlocksEnv(render_frames=renderer.render)
    observation, _ = env.reset([two_block_task])
    seen = []
    for agent_ in (
        ReadAndPlanAgent(reader, predictor, WORDS),
        ReadAndPlanAgent(reader, [predictor, predictor], [WORDS, WORDS]),
    ):
        agent_.begin([two_block_task], instructions=["move"])
        agent_.act(observation)
        seen.append((agent_.perceived["block"].copy(), agent_.perceived["goal"].copy()))
    assert seen[0][0] == seen[1][0] and np.allclose(seen[0][1], seen[1][1], atol=1e-5)
    with pytest.raises(ValueError, match="one vocabulary per goal predictor"):
        ReadAndPlanAgent(reader, [predictor, predictor], [WORDS])


def test_location_accuracy_counts_blocks_within_half_a_block_length(renderer):
    from blocks.data.boards import random_boards
    from blocks.learn.perception import location_accuracy

    positions, present, logo = random_boards(np.random.default_rng(2), 12)
    logo[:6], logo[6:] = True, False
    truth = {}

    class Oracle(BoardReader):
        shift = 0.0

        def read(self, frames):
            found = torch.from_numpy(truth["positions"]).float() + self.shift
            return found, torch.from_numpy(truth["present"]), torch.from_numpy(truth["logo"])

    reader = Oracle()
    truth.update(positions=positions, present=present, logo=logo)
    perfect = location_accuracy(reader, renderer, (positions, present, logo), batch_size=12)
    assert perfect["located_logo"] == perfect["located_digit"] == 1.0 and perfect["boards"] == 12
    assert perfect["position_error_mean"] == pytest.approx(0.0, abs=1e-6)
    reader.shift = 0.6 * BLOCK_SIDE  # more than half a block length off on both axes
    shifted = location_accuracy(reader, renderer, (positions, present, logo), batch_size=12)
    assert shifted["located_logo"] == 0.0
    for key in ("position_error_mean", "position_error_median", "position_error_p90"):
        assert shifted[key] == pytest.approx(0.6 * np.sqrt(2), rel=1e-4)


def test_an_ensemble_takes_the_median_goal(renderer, two_block_task):
    """Three predictors agree on the block; one puts the goal far off: the agent goes to the median goal."""

    class Fixed(GoalPredictor):
        def __init__(self, x: float):
            super().__init__(len(WORDS), dim=16, heads=2, layers=1)
            self.x = x

        def forward(self, tokens, lengths, positions, present, logo):
            moved = torch.full((len(tokens), 20), -10.0)
            moved[:, 0] = 0.0
            goals = torch.zeros(len(tokens), 20, 2)
            goals[:, :, 0] = self.x
            return moved.log_softmax(-1), goals, None

    env = VectorBlocksEnv(render_frames=renderer.render)
    observation, _ = env.reset([two_block_task])
    agent_ = ReadAndPlanAgent(BoardReader(), [Fixed(1.0), Fixed(2.0), Fixed(10.0)], [WORDS] * 3)
    agent_.begin([two_block_task], instructions=["move"])
    agent_.act(observation)
    assert agent_.perceived["goal"][0] == pytest.approx([2.0 * 0.1524, 0.0])


def test_stage_errors_splits_the_agents_error_by_how_each_episode_went(corpus_root, renderer):
    """With a true reading and the goal given exactly, execution adds only the grid: every episode ends on the
    grid point nearest the goal, the parts add up to the agent's mean, and no episode stops at once, fails a move
    or moves another block."""
    from blocks.corpus.loader import load_split

    examples = load_split("dev", corpus_root)[:24]
    script = load_script("stage_errors")
    goals = np.stack([x.task.goal[moved_block(x.task)] for x in examples]) / BLOCK_SIDE
    grid = script.move_grid(goals, np.ones(24, bool), np.zeros(24), examples)
    assert (grid["nearest_point"] == grid["exact_goal"]).all() and (
        grid["best_of_four"] == grid["exact_goal"]
    ).all()
    assert 0.0 < grid["exact_goal"].mean() < 0.47  # at most half a move's diagonal, 0.66 / sqrt(2)
    figures = script.execution_loss(agent(TruthfulAgent), examples, renderer, np.zeros(24), grid)
    assert figures["move_grid"]["execution_loss_beyond_grid"] == pytest.approx(0.0, abs=1e-3)
    assert figures["move_grid"]["as_planned_ended_on_nearest_point"] == 1.0
    parts = figures["parts"]
    assert parts["rest"]["share"] == 1.0 and parts["rest"]["teacher_forced"] == 0.0
    assert (
        figures["execution_loss"] == figures["mean_error"] == pytest.approx(parts["rest"]["agent"], abs=1e-3)
    )
    assert 0.0 < figures["mean_error"] < 0.6  # the demonstrations' own error on dev is 0.35


def test_cell_centres_find_face_centres_without_the_half_pixel_bias(renderer):
    """Cells labelled exactly as the reader is taught (``cell_targets``) decode to the faces' centres: over many
    blocks the mean error is near zero on both axes (without the half-pixel correction it is -0.5 pixel)."""
    from blocks.data.boards import cell_targets, random_boards
    from blocks.model.perception import NUM_CLASSES, cell_centres

    positions, present, _ = random_boards(np.random.default_rng(3), 64)
    targets = torch.from_numpy(cell_targets(renderer, positions, present))
    logits = 30.0 * torch.nn.functional.one_hot(targets, NUM_CLASSES).permute(0, 3, 1, 2).float()
    rows, columns, _ = cell_centres(logits)
    true_rows, true_columns = renderer.camera.project(positions[..., 0], positions[..., 1], BLOCK_SIDE)
    row_bias = (rows.numpy() - true_rows)[present].mean()
    column_bias = (columns.numpy() - true_columns)[present].mean()
    assert abs(row_bias) < 0.2 and abs(column_bias) < 0.2


def test_the_shipped_reader_places_blocks_finer_than_its_cells_when_it_reads_shifted_copies(renderer):
    """One reading is only as fine as the 4-pixel cells (about a quarter block length off); reading the picture
    shifted by 0-3 pixels and taking the median places the blocks of generated boards several times closer."""
    from blocks.data.boards import board_batch, random_boards
    from blocks.model.checkpoint import load_reader

    reader = load_reader("checkpoints/ours/board_reader.ckpt")
    positions, present, logo = random_boards(np.random.default_rng(4), 24)
    digits = np.zeros_like(logo)  # drawn the same with or without the corpus
    batch = board_batch(renderer, positions, present, digits)

    def median_error(shifts: int) -> float:
        found, _, _ = reader.read(batch["images"], shifts=shifts)
        errors = torch.linalg.vector_norm(found - batch["positions"], dim=-1)[batch["present"]] / 0.1524
        return float(errors.median())

    once, shifted = median_error(1), median_error(4)
    assert shifted < 0.08 and shifted < once / 2


def _line_up_batch(n: int, seed: int) -> dict[str, torch.Tensor]:
    """Boards of three blocks; block 0 goes to block 1's column and block 2's row ("in line with both")."""
    g = torch.Generator().manual_seed(seed)
    positions = torch.zeros(n, 20, 2)
    positions[:, :3] = 6 * torch.rand(n, 3, 2, generator=g) - 3
    present = torch.zeros(n, 20, dtype=torch.bool)
    present[:, :3] = True
    return {
        "tokens": torch.full((n, 1), 2),
        "lengths": torch.ones(n, dtype=torch.long),
        "positions": positions,
        "present": present,
        "logo": torch.zeros(n, dtype=torch.bool),
        "block": torch.zeros(n, dtype=torch.long),
        "goal": torch.stack([positions[:, 1, 0], positions[:, 2, 1]], dim=-1),
    }


def _predict(predictor: GoalPredictor, batch: dict[str, torch.Tensor]):
    return predictor(*(batch[k] for k in ("tokens", "lengths", "positions", "present", "logo")))


def test_axis_references_start_as_one_softmax_and_learn_a_column_and_a_row_from_two_blocks():
    from blocks.learn.goal import goal_errors
    from blocks.model.goal_predictor import goal_losses

    torch.manual_seed(0)
    predictor = GoalPredictor(len(WORDS), dim=32, heads=2, layers=1, axis_references=True)
    train, held_out = _line_up_batch(128, 0), _line_up_batch(128, 1)
    _, _, weights = _predict(predictor, train)
    assert weights.shape == (128, 20, 21, 2) and torch.allclose(weights[..., 0], weights[..., 1])
    optimizer = torch.optim.Adam(predictor.parameters(), lr=3e-3)
    for _ in range(150):
        moved, goals, _ = _predict(predictor, train)
        loss = sum(goal_losses(moved, goals, train["block"], train["goal"]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    _, error, _, _ = goal_errors(predictor.eval(), held_out)
    _, _, weights = _predict(predictor, held_out)
    column, row = weights[:, 0, :, 0].argmax(-1), weights[:, 0, :, 1].argmax(-1)
    assert error.mean() < 0.3
    assert (column == 1).float().mean() > 0.9 and (row == 2).float().mean() > 0.9


def test_stage_errors_splits_the_goal_error_by_size_and_by_the_instructions_words():
    texts = ["move it in line with the sri block", "slide the 6 block 2 spaces up", "put it between a and b",
             "move the 6 block to the top left corner"]  # fmt: skip
    error, found = np.array([0.2, 3.0, 1.5, 8.0]), np.array([True, True, True, False])
    record = load_script("stage_errors").error_by_kind(error, found, texts)
    sizes = record["by_size"]
    assert sizes["wrong_block"] == {"share": 0.25, "of_mean": 2.0}
    assert sizes["0-0.5"]["of_mean"] == 0.05 and sizes["2-5"]["of_mean"] == 0.75
    assert sum(part["of_mean"] for part in sizes.values()) == pytest.approx(error.mean())
    assert record["alignment"] == {"share": 0.25, "mean": 0.2, "rest_mean": 4.167, "of_mean": 0.05}
    assert "two_references" not in record and record["compositional"]["share"] <= 1.0  # no counts given
    assert record["counted_steps"]["mean"] == 3.0 and record["between"]["mean"] == 1.5
    assert record["board_edges"]["mean"] == 8.0
    assert record["counted_steps"]["share"] == 0.25  # "the 6 block" alone is a label, not a count


def test_a_pretrained_encoder_reads_the_words_frozen_unsaved_and_once_per_instruction(monkeypatch, capfd):
    """The option's encoder tells left from right (the pruned word-vector table could not), is neither trained
    nor written into the predictor's weights, reads an instruction seen before from its cache, and loads without
    a progress bar on stderr."""
    from transformers.utils import logging as transformers_logging

    from blocks.model.goal_predictor import goal_losses

    words = ["<pad>", "<unk>", "move", "the", "bmw", "left", "right", "of", "toyota"]
    predictor = GoalPredictor(len(words), dim=16, heads=2, layers=1, text_encoder="minilm", vocabulary=words)
    assert "Loading weights" not in capfd.readouterr().err
    assert transformers_logging.is_progress_bar_enabled()  # only while loading
    assert not any("encoder" in key or "bert" in key for key in predictor.state_dict())
    assert sum(p.numel() for p in predictor.parameters()) < 200_000  # the encoder's 22.7 M are not among them
    left, right = [2, 3, 4, 5, 7, 3, 8], [2, 3, 4, 6, 7, 3, 8]
    tokens = torch.tensor([left, right])
    lengths = torch.tensor([7, 7])
    states, padding = predictor.text(tokens, lengths)
    assert states.shape[-1] == 384 and not padding.any()
    assert torch.cosine_similarity(states[0], states[1], dim=-1).min() < 0.95  # "left" and "right" differ

    calls = []
    encode = predictor.text._encode
    monkeypatch.setattr(predictor.text, "_encode", lambda rows: calls.append(rows) or encode(rows))
    again, _ = predictor.text(tokens.flip(0), lengths)
    assert calls == [] and torch.equal(again, states.flip(0))
    predictor.text(torch.tensor([[2, 4, 5, 0]]), torch.tensor([3]))
    assert calls == [[(2, 4, 5)]]

    batch = _line_up_batch(4, 0)
    batch["tokens"], batch["lengths"] = torch.tensor([left] * 4), torch.full((4,), 7)
    moved, goals, _ = _predict(predictor, batch)
    sum(goal_losses(moved, goals, batch["block"], batch["goal"])).backward()
    assert predictor.lstm.weight_ih_l0.grad is not None and predictor.lstm.weight_ih_l0.shape[1] == 384
    assert all(p.grad is None and not p.requires_grad for p in predictor.text._encoder[0].parameters())


def test_a_pretrained_encoder_reads_an_instruction_longer_than_its_window():
    """10,000 characters of instruction: the encoder keeps its first 512 sub-words instead of failing on a
    position table of 512."""
    words = ["<pad>", "<unk>", "move", "the", "bmw", "left"]
    predictor = GoalPredictor(len(words), dim=16, heads=2, layers=1, text_encoder="minilm", vocabulary=words)
    tokens = torch.tensor([[2, 3, 4, 5] * 500])
    states, padding = predictor.text(tokens, torch.tensor([2000]))
    assert states.shape[1] <= 512 and torch.isfinite(states).all()
