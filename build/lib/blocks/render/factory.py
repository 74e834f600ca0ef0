"""Pick the picture by name (``data.render``): ``flat`` top faces or the release's ``release`` cubes."""

from __future__ import annotations

from pathlib import Path

from blocks.errors import ConfigError
from blocks.render.release import ReleaseRenderer
from blocks.render.renderer import Renderer

RENDERERS = {"flat": Renderer, "release": ReleaseRenderer}


def check_render(kind: str, key: str = "data.render") -> None:
    """An unknown picture name fails naming the choices and the ``key`` it was given as (checked before a run
    loads anything)."""
    if kind not in RENDERERS:
        raise ConfigError(f"{key}={kind!r}: unknown picture; one of {', '.join(RENDERERS)}")


def make_renderer(
    kind: str = "flat", data_root: Path | str | None = None, size: int = 120, logos: bool = True
) -> Renderer | ReleaseRenderer:
    """The renderer ``kind`` draws with; an unknown name fails naming the choices."""
    check_render(kind)
    return RENDERERS[kind](data_root, size, logos=logos)


def face_height(kind: str = "flat") -> float:
    """Height above the board of the blocks' top faces in picture ``kind``: where a position seen on a face is
    taken back to the board (the release's cubes stand taller than the flat picture's faces)."""
    check_render(kind)
    return RENDERERS[kind].top_face_height()


def render_of(record: dict | None) -> str:
    """The picture a learner's record was trained on: ``flat`` for checkpoints older than the choice."""
    return str((record or {}).get("render", "flat"))
