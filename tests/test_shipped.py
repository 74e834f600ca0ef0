"""The shipped networks (checkpoints/) and the notebooks that load them: each loads with one call, records what it
needs, and acts better than STOP on real dev boards."""

from __future__ import annotations

import os

import pytest

from .conftest import REPO

slow = pytest.mark.slow


SHIPPED = REPO / "checkpoints"


@slow
def test_a_trained_checkpoint_loads_with_one_call_and_follows_an_instruction(checkpoint, corpus_root):
    from blocks.corpus import load_split
    from blocks.episode import run_episode
    from blocks.learn import SupervisedLearner, load_learner
    from blocks.model.checkpoint import load_policy
    from blocks.render import Renderer

    learner = SupervisedLearner.load_from_checkpoint(checkpoint)  # no other argument
    assert load_learner(str(checkpoint)).hparams.vocabulary == learner.hparams.vocabulary
    network, vocabulary = load_policy(checkpoint)  # without Lightning
    assert (
        vocabulary == learner.hparams.vocabulary
        and network.state_dict().keys() == learner.policy.state_dict().keys()
    )
    example = load_split("dev", corpus_root)[0]
    episode = run_episode(learner.agent(), example.task, "move block 6 left", Renderer(corpus_root))
    assert len(episode.frames) == len(episode.actions) + 1 and episode.error >= 0


@slow
def test_notebook_runs_on_a_short_example(checkpoint, corpus_root, tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(REPO / "notebooks" / "run_agent.ipynb", as_version=4)
    os.environ.update(BLOCKS_DATA=str(corpus_root), BLOCKS_CHECKPOINT=str(checkpoint), BLOCKS_INDEX="0")
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3


def test_load_learner_opens_the_board_readers_and_the_goal_networks_checkpoints_too():
    """The README says any learner's checkpoint: the read-and-plan agent's two networks are learners too."""
    from blocks.learn.goal import GoalLearner
    from blocks.learn.load import load_learner
    from blocks.learn.perception import PerceptionLearner

    assert isinstance(load_learner(str(SHIPPED / "ours" / "board_reader.ckpt")), PerceptionLearner)
    goal = load_learner(str(SHIPPED / "ours" / "goal_predictor.ckpt"))
    assert isinstance(goal, GoalLearner) and not goal.training


def test_the_shipped_spo_network_keeps_its_block_and_beats_stop(corpus_root):
    """Xiong et al.'s recipe as shipped (docs/experiments/spo.md), trained in the release's world: it loads with no
    other argument, names the block from the words once per episode, and ends nearer the goals than STOP on real
    dev boards."""
    from blocks.agents.baselines import StopAgent
    from blocks.agents.policy import PolicyAgent
    from blocks.corpus.loader import load_split
    from blocks.evaluate import evaluate
    from blocks.learn.load import load_learner
    from blocks.learn.spo import SPOLearner
    from blocks.render import Renderer

    learner = load_learner(str(SHIPPED / "paper" / "spo.ckpt"))
    assert isinstance(learner, SPOLearner) and learner.policy.block_per_episode
    examples = load_split("dev", corpus_root)[:64]
    agent = PolicyAgent.from_checkpoint(str(SHIPPED / "paper" / "spo.ckpt"))
    spo = evaluate(agent, examples, render_frames=Renderer(corpus_root).render, progress=False)
    assert spo["mean_error"] < evaluate(StopAgent(), examples, progress=False)["mean_error"] - 0.5


def test_the_shipped_read_and_plan_agent_acts_on_what_it_reads_and_beats_stop(corpus_root):
    """checkpoints/ours/board_reader.ckpt and goal_predictor.ckpt: the agent reads real dev boards, names and moves a
    block, and ends far nearer the goals than STOP (docs/experiments/read-and-plan.md)."""
    from blocks.agents.baselines import StopAgent
    from blocks.agents.reader import ReadAndPlanAgent
    from blocks.corpus import load_split
    from blocks.evaluate import evaluate
    from blocks.render import Renderer

    agent = ReadAndPlanAgent.from_checkpoints(
        str(SHIPPED / "ours" / "board_reader.ckpt"), str(SHIPPED / "ours" / "goal_predictor.ckpt")
    )
    examples = load_split("dev", corpus_root)[:32]
    figures = evaluate(agent, examples, render_frames=Renderer(corpus_root).render, progress=False)
    assert figures["mean_error"] < evaluate(StopAgent(), examples, progress=False)["mean_error"] - 2.0
    assert figures["horizon_rate"] < 0.1


SEVEN_GOAL_NETWORKS = [
    "goal_predictor", "goal_predictor_minilm_seed1", "goal_predictor_minilm_seed3", "goal_predictor_minilm_seed4",
    "goal_predictor_relabel", "goal_predictor_seed5", "goal_predictor_norelabel",
]  # fmt: skip


def test_the_seven_shipped_goal_networks_read_as_one_place_goals_better_than_one(corpus_root):
    """The agent's seven-network goal stage (checkpoints/README.md) shares one vocabulary, and on real dev
    instructions its goals are nearer the true ones than the default network's alone (on the first 128: 0.905
    against 1.036 block lengths, teacher-forced; docs/experiments/read-and-plan.md)."""
    import torch

    from blocks.corpus import load_split
    from blocks.corpus.text import Vocabulary
    from blocks.data.goals import goal_batch
    from blocks.learn.goal import goal_errors
    from blocks.model.checkpoint import load_goal_predictor

    loaded = [load_goal_predictor(str(SHIPPED / "ours" / f"{name}.ckpt")) for name in SEVEN_GOAL_NETWORKS]
    assert all(words == loaded[0][1] for _, words in loaded)
    vocabulary = Vocabulary(loaded[0][1])
    examples = load_split("dev", corpus_root)[:128]
    batch = goal_batch(examples, [vocabulary.encode(x.tokens, mend_unknown=True) for x in examples])
    with torch.no_grad():
        _, one, _, _ = goal_errors(loaded[0][0], batch)
        _, seven, _, _ = goal_errors([p for p, _ in loaded], batch)
    assert seven.mean() < one.mean() - 0.05


@slow
def test_the_read_and_plan_notebook_runs(corpus_root):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(REPO / "notebooks" / "read_and_plan.ipynb", as_version=4)
    os.environ.update(BLOCKS_DATA=str(corpus_root), BLOCKS_INDEX="100")
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/gif" in o.get("data", {}) for o in outputs) >= 2


@pytest.mark.parametrize("name", ["supervised_release_pictures.ckpt", "approach_release_pictures.ckpt"])
def test_the_shipped_networks_on_the_releases_pictures_name_them_and_beat_stop_there(corpus_root, name):
    """checkpoints/paper/*_release_pictures.ckpt (docs/experiments/release-pictures.md): each records the picture it
    learnt from, so evaluation draws the release's pictures without being told; there it ends nearer the goals than
    STOP and than on the flat picture, on real dev boards."""
    from blocks.agents.baselines import StopAgent
    from blocks.agents.policy import PolicyAgent
    from blocks.corpus import load_split
    from blocks.evaluate import evaluate
    from blocks.render.factory import make_renderer

    agent = PolicyAgent.from_checkpoint(str(SHIPPED / "paper" / name))
    assert agent.render == "release"
    examples = load_split("dev", corpus_root)[:32]
    error = {
        picture: evaluate(
            agent, examples, render_frames=make_renderer(picture, corpus_root).render, progress=False
        )["mean_error"]
        for picture in ("release", "flat")
    }
    assert error["release"] < evaluate(StopAgent(), examples, progress=False)["mean_error"] - 0.3
    assert error["release"] < error["flat"] - 0.3  # the picture matters, so the recorded one must be drawn


def test_every_shipped_file_loads_is_a_row_of_the_checkpoints_readme_and_the_tree_stays_small():
    """checkpoints/: one file per results row (at most 25), each loading with no other argument, each named on
    one short row of checkpoints/README.md; a command naming a file that moved is told where it went."""
    from blocks.errors import CheckpointError
    from blocks.learn.load import load_learner
    from blocks.model.checkpoint import load_file

    files = sorted(p.relative_to(SHIPPED).as_posix() for p in SHIPPED.rglob("*.ckpt"))
    assert 0 < len(files) <= 25 and {f.split("/")[0] for f in files} == {"paper", "ours"}
    readme = (SHIPPED / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| `")]
    assert all(len(line) <= 200 for line in readme.splitlines() if line.startswith("|"))
    assert sorted(line.split("`")[1] for line in rows) == files  # one row per file, and no row without one
    for name in files:
        learner = load_learner(str(SHIPPED / name))
        assert not learner.training and load_file(SHIPPED / name)["state_dict"]
    with pytest.raises(CheckpointError, match="moved to checkpoints/paper/approach.ckpt"):
        load_file("checkpoints/paper/approach_onpolicy_seed42.ckpt")
    with pytest.raises(CheckpointError, match="git checkout c6dd7ce -- checkpoints/bandit_ensemble/a.ckpt"):
        load_file("checkpoints/bandit_ensemble/a.ckpt")
