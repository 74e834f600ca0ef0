"""What the command-line entry points share: a mistake the user can fix is one line and exit status 2.

A :class:`~blocks.errors.UsageError` (also one that ``hydra.utils.instantiate`` wrapped) and a configuration Hydra
cannot compose (an unknown ``agent=``, ``model=`` or ``ablation=``, an override of a key that does not exist)
print ``error: ...`` as one line on stderr, without a traceback, and exit with status 2. ``HYDRA_FULL_ERROR=1``
shows the traceback instead. Anything else is a bug: its traceback, status 1.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from blocks.errors import ConfigError, UsageError

_SHOW = "BLOCKS_SHOW_TRACEBACK"  # the user's own HYDRA_FULL_ERROR, kept while Hydra's is set to re-raise
_task = {"started": False}  # whether Hydra got as far as calling the task function


def usage_error(error: BaseException | None) -> BaseException | None:
    """The user's mistake behind ``error``: a :class:`UsageError` among its causes, or a Hydra or OmegaConf
    configuration error; None for anything else."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    seen: set[int] = set()
    first = error
    while error is not None and id(error) not in seen:
        if isinstance(error, UsageError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    if (
        isinstance(first, HydraException | OmegaConfBaseException)
        and type(first).__name__ != "InstantiationException"
    ):
        return first
    return None


def file_error(error: BaseException | None) -> OSError | None:
    """The operating system's refusal (a file's permission, a folder in the way) among ``error``'s causes."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError) and error.errno is not None:
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def one_line(error: BaseException) -> str:
    """Hydra's several-line messages (options listed one per line, the search path) folded into one line."""
    text = str(error).split("\nConfig search path")[0]
    text = re.sub(r"\n\t", ", ", text).replace(":, ", ": ")
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def quoting_hint(error: BaseException) -> BaseException:
    """Hydra's override grammar reads a second ``=`` in a value as a syntax error ("mismatched input '='"), which
    names no override; a path under a sweep's folder (``seed=2/``) has one. Name the override and its quoting."""
    from hydra.errors import OverrideParseException

    if isinstance(error, OverrideParseException):
        for arg in sys.argv[1:]:
            key, _, value = arg.partition("=")
            if "=" in value and value[0] not in "'\"":
                return ConfigError(
                    f"{arg}: a value holding '=' must be quoted, as in '{key}=\"{value}\"' ({one_line(error)})"
                )
    return error


def run_key_value(main: Callable[[list[str]], Any], doc: str) -> None:
    """Call a key=value command's ``main`` on the command line's arguments: ``-h`` or ``--help`` prints its usage
    (``doc``) and exits 0, as a newcomer expects; a user's mistake is one line (:func:`user_errors`)."""
    argv = sys.argv[1:]
    if "-h" in argv or "--help" in argv:
        print(doc.strip())
        raise SystemExit(0)
    with user_errors():
        main(argv)


def exit_with(error: BaseException) -> NoReturn:
    print(f"error: {one_line(error)}", file=sys.stderr, flush=True)
    raise SystemExit(2) from None


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Around the body of a Hydra task function: a user's mistake exits there, before Hydra adds its own line."""
    _task["started"] = True
    try:
        yield
    except Exception as error:
        usage = usage_error(error)
        if usage is None or os.environ.get(_SHOW) == "1":
            raise
        exit_with(usage)


def run(main: Callable[[], Any]) -> None:
    """Call a ``@hydra.main`` function with the error handling of the module docstring."""
    os.environ.setdefault(_SHOW, os.environ.get("HYDRA_FULL_ERROR", "0"))
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises what it cannot compose, so it can be judged here
    try:
        main()
    except BrokenPipeError:
        # The reader went away (``python eval.py --help | head``): end quietly as other command-line tools do,
        # with stdout pointed at nothing so that the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None
    except Exception as error:
        if os.environ.get(_SHOW) == "1":
            raise
        usage = usage_error(error)
        denied = None if _task["started"] else file_error(error)
        if usage is None and denied is not None:
            # Hydra creates the run's folder and its log file before the task starts (the log file's failure comes
            # wrapped in logging's "Unable to configure handler"): a path that cannot be written is the user's to
            # change, not a 50-line traceback. (Hydra's own "config not found" is an OSError without an errno;
            # usage_error words it.)
            usage = ConfigError(
                f"cannot write the run's folder: {denied.strerror} ({denied.filename}); choose a writable one with "
                f"hydra.run.dir=<folder> (sweeps: hydra.sweep.dir=<folder>) or paths.log_dir=<folder>"
            )
        if usage is None:
            raise
        exit_with(quoting_hint(usage))
