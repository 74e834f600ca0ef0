"""Following natural-language instructions in the Blocks world from raw images."""

__version__ = "0.2.0"


def set_torch_threads() -> None:
    """Cap torch's threads at ``BLOCKS_TORCH_THREADS`` when it is set: runs side by side share a few cores."""
    import os

    if os.environ.get("BLOCKS_TORCH_THREADS"):
        import torch

        torch.set_num_threads(int(os.environ["BLOCKS_TORCH_THREADS"]))


def _register_environment() -> None:
    from blocks.gym import register

    register()


_register_environment()
