"""blocks.animate: a GIF of an episode, for any agent, any instruction, refused in one line where it cannot be written."""

from __future__ import annotations

import inspect

import pytest

from blocks.errors import ConfigError

from .conftest import REPO

SHIPPED = REPO / "checkpoints"


def test_gif_of_an_episode(corpus_root, tmp_path):
    from PIL import Image

    from blocks.animate import main

    out = main(
        [
            f"ckpt_path={SHIPPED / 'paper' / 'approach.ckpt'}",
            "split=dev",
            "index=2",
            f"out={tmp_path / 'x.gif'}",
            f"data_root={corpus_root}",
        ]
    )
    with Image.open(out) as gif:
        assert gif.n_frames >= 2 and gif.size[0] == 480
    out = main(  # the read-and-plan agent, with what it read drawn on every frame
        [
            "agent=read_and_plan",
            f"reader={SHIPPED / 'ours' / 'board_reader.ckpt'}",
            f"goal={SHIPPED / 'ours' / 'goal_predictor.ckpt'}",
            "index=100",
            f"out={tmp_path / 'read.gif'}",
            f"data_root={corpus_root}",
        ]
    )
    with Image.open(out) as gif:
        assert 2 <= gif.n_frames <= 41


def test_gif_of_the_read_and_plan_agent_loads_the_shipped_networks_as_eval_does(
    corpus_root, tmp_path, capsys
):
    """No reader= or goal= needed: the defaults are conf/agent/read_and_plan.yaml's, whose options are the agent's."""
    from omegaconf import OmegaConf

    from blocks.agents.reader import ReadAndPlanAgent
    from blocks.animate import DEFAULTS, main

    recipe = OmegaConf.load(REPO / "conf" / "agent" / "read_and_plan.yaml")
    assert (DEFAULTS["reader"], DEFAULTS["goal"]) == (recipe.reader, recipe.goal)
    defaults = inspect.signature(ReadAndPlanAgent.__init__).parameters
    assert all(defaults[k].default == v for k, v in recipe.items() if k not in ("_target_", "reader", "goal"))
    out = main(["agent=read_and_plan", "index=3", f"out={tmp_path / 'rp.gif'}", f"data_root={corpus_root}"])
    assert out.is_file() and "final error" in capsys.readouterr().out


def test_gif_to_a_place_that_cannot_be_written_is_one_line_before_the_episode(tmp_path):
    from blocks.animate import main

    # A folder in the way: what a folder without write permission gives a user without root's override. The corpus
    # (data_root) is not reached.
    (tmp_path / "x.gif").mkdir()
    with pytest.raises(ConfigError, match=r"out=.*x.gif: cannot write it \(Is a directory\)"):
        main(["agent=stop", f"out={tmp_path / 'x.gif'}", "data_root=/nonexistent"])


def test_the_readmes_gif_command_writes_under_logs_not_over_the_tracked_gif():
    readme = (REPO / "README.md").read_text()
    command = next(line for line in readme.splitlines() if "python -m blocks.animate" in line)
    assert "out=docs/" not in command


@pytest.mark.parametrize("text", ["?!.,;:", "move ${lower:x} left", "a: {b}, [c]"])
def test_gif_takes_any_instruction_verbatim(text, corpus_root, tmp_path, capsys):
    """YAML would read ``?!.,;:`` as a mapping and ``${...}`` as an interpolation: the caption is the text typed."""
    from blocks.animate import main

    main(["agent=stop", f"instruction={text}", f"out={tmp_path / 'x.gif'}", f"data_root={corpus_root}"])
    assert capsys.readouterr().out.splitlines()[0] == text
