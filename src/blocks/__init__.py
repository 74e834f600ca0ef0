"""Following natural-language instructions in the Blocks world from raw images."""

__version__ = "0.2.0"


def _register_environment() -> None:
    from blocks.gym import register

    register()


_register_environment()
