"""Following natural-language instructions in the Blocks world from raw images."""

__version__ = "0.2.0"


def set_torch_threads(threads: int | None = None) -> None:
    """Cap torch's threads at ``threads`` (else ``BLOCKS_TORCH_THREADS`` when it is set): runs side by side share
    a few cores."""
    import os

    threads = threads or int(os.environ.get("BLOCKS_TORCH_THREADS") or 0)
    if threads:
        import torch

        torch.set_num_threads(threads)


def _register_environment() -> None:
    from blocks.gym import register

    register()


_register_environment()
