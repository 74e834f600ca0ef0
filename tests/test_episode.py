"""blocks.episode: one episode's record names each block as the picture does."""

from __future__ import annotations


def test_an_episode_names_each_block_as_the_picture_does(corpus_root):
    """Dev example 100 asks for block 13 to move: the caption names the block labelled 13, not index 12."""
    from blocks.agents import DemonstrationAgent
    from blocks.corpus import load_split
    from blocks.episode import run_episode
    from blocks.render import Renderer

    example = load_split("dev", corpus_root)[100]
    assert "block 13" in example.instruction and example.decoration == "digit"
    episode = run_episode(DemonstrationAgent(), example.task, example.instruction, Renderer(corpus_root))
    described = episode.describe()
    assert described[-1] == "STOP" and all(step.startswith("block 13 ") for step in described[:-1])
