"""How a process runs the networks fast: torch's threads, the memory allocator, compiled modules.

Nothing here changes what is computed; docs/experiments/engine.md has the measurements behind each default.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import sys
import time

log = logging.getLogger(__name__)

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_kept = False


def set_torch_threads(threads: int | None = None) -> None:
    """Cap torch's threads at ``threads`` (else ``BLOCKS_TORCH_THREADS`` when it is set): runs side by side share
    a few cores."""
    threads = threads or int(os.environ.get("BLOCKS_TORCH_THREADS") or 0)
    if threads:
        import torch

        torch.set_num_threads(threads)


def tune_process(threads: int | None = None) -> None:
    """What every command that trains or evaluates does first: cap the threads, keep freed memory."""
    set_torch_threads(threads)
    keep_freed_memory()


def keep_freed_memory() -> bool:
    """Keep freed memory in the process instead of handing it back to the system at once (Linux, glibc).

    A training step allocates and frees tens of MB a batch (the uint8 stacks as floats are 28 MB at batch 32, a
    bandit chunk's about 60 MB). glibc serves such blocks with mmap and unmaps them on free, so every step faults
    every page in again: a third of the standardisation's time and a fifth of a step's on 2 CPU cores
    (docs/experiments/engine.md). Here every block comes from the heap (mmap only where the heap cannot grow), and
    the heap keeps up to 1 GiB of freed memory. Returns whether the allocator took the setting; elsewhere (macOS,
    musl, Windows) it does nothing.
    """
    global _kept
    if _kept:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    _kept = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 1 << 30))
    return _kept


def c_compiler() -> str | None:
    """The C++ compiler torch.compile's CPU code generation would call, if there is one."""
    for name in (os.environ.get("CXX"), "g++", "c++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def compile_module(module, device: str = "cpu") -> bool:
    """Compile ``module`` in place with ``torch.compile`` (its ``state_dict`` keys unchanged, so checkpoints
    load both ways). On the CPU without a C++ compiler it logs one line and stays eager. Returns whether it
    compiled; the compilation itself happens at the first call (its time is logged by :func:`timed_first_call`).
    """
    if device == "cpu" and c_compiler() is None:
        log.warning(
            "network.compile=true: no C++ compiler (g++, clang++ or $CXX) here, so the network runs eager"
        )
        return False
    module.compile()
    timed_first_call(module)
    return True


def timed_first_call(module) -> None:
    """Log how long ``module``'s first compiled call took (torch.compile compiles there, on the first batch)."""
    compiled = getattr(module, "_compiled_call_impl", None)
    if compiled is None:
        return

    def first_call(*args, **kwargs):
        start = time.perf_counter()
        output = compiled(*args, **kwargs)
        log.info("%s compiled in %.1f s (its first call)", type(module).__name__, time.perf_counter() - start)
        module._compiled_call_impl = compiled
        return output

    module._compiled_call_impl = first_call
