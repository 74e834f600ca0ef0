"""``gymnasium.make("blocks/Blocks-v0", split="dev")``: a corpus split as a Gymnasium environment.

The corpus is found as everywhere else (``root``, else ``$BLOCKS_DATA``, else ``~/.cache/blocks``, downloading
what is missing), the instructions are encoded with the vocabulary of the 11,196 training examples (the one
every learner of the package uses), and the observation is :class:`~blocks.world.env.BlocksEnv`'s ``Dict``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from blocks.world.env import BlocksEnv

ENV_ID = "blocks/Blocks-v0"


def make_env(
    split: str = "dev",
    root: str | None = None,
    image_size: int = 120,
    reward: str = "shaped",
    max_tokens: int = 80,
    limit: int | None = None,
    render_mode: str | None = "rgb_array",
    picture: str = "flat",
) -> BlocksEnv:
    """The examples of ``split`` (the first ``limit`` of them, if set) with the paper's ``reward`` preset;
    ``picture`` is ``flat`` or ``release`` (``data.render``)."""
    from blocks.corpus.download import default_data_root
    from blocks.corpus.loader import load_split
    from blocks.corpus.text import Vocabulary, tokenize
    from blocks.render.factory import check_render, make_renderer
    from blocks.world.env import BlocksEnv
    from blocks.world.rewards import RewardConfig

    check_render(picture, key="picture")  # before the corpus is read
    root = root or default_data_root()
    examples = load_split(split, root)[:limit]
    vocabulary = Vocabulary.build(x.tokens for x in load_split("train", root, exclude_tune=True))
    return BlocksEnv(
        [x.task for x in examples],
        make_renderer(picture, root, image_size).render,
        image_size=image_size,
        instructions=[x.instruction for x in examples],
        token_ids=[vocabulary.encode(x.tokens) for x in examples],
        vocab_size=len(vocabulary),
        max_tokens=max_tokens,
        reward=RewardConfig.preset(reward),
        render_mode=render_mode,
        encode=lambda text: vocabulary.encode(tokenize(text)),
    )


def register() -> None:
    """Register ``blocks/Blocks-v0`` with Gymnasium (once; ``import blocks`` does it)."""
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="blocks.gym:make_env")
