"""What the command-line entry points share: a mistake the user can fix is one line and exit status 2.

A :class:`~blocks.errors.UsageError` (also one that ``hydra.utils.instantiate`` wrapped) and a configuration Hydra
cannot compose (an unknown ``agent=``, ``model=`` or ``ablation=``, an override of a key that does not exist)
print ``error: ...`` as one line on stderr, without a traceback, and exit with status 2. ``HYDRA_FULL_ERROR=1``
shows the traceback instead. Anything else is a bug: its traceback, status 1.
"""

from __future__ import annotations

import contextlib
import inspect
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


def accepted_keys(target: str) -> set[str] | None:
    """The keyword arguments the class or function named by ``_target_`` accepts (through ``**kwargs`` up its
    base classes); None when it takes any key."""
    import hydra

    obj = hydra.utils.get_object(target)
    functions = [c.__init__ for c in obj.__mro__] if isinstance(obj, type) else [obj]
    keys: set[str] = set()
    for function in functions:
        parameters = inspect.signature(function).parameters.values()
        keys |= {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            return keys
    return None


def check_keys(node: Any, group: str, choice: str | None = None, given: tuple[str, ...] = ()) -> None:
    """Every key of a config node with a ``_target_`` must be an argument of that target (``given`` are passed
    by the code, not the config): a misspelt override fails here, naming the key, before anything starts."""
    if node is None or "_target_" not in node:
        return
    accepted = accepted_keys(str(node["_target_"]))
    if accepted is None:
        return
    unknown = sorted(k for k in node if k != "_target_" and not k.startswith("_") and k not in accepted)
    if unknown:
        name = str(node["_target_"]).rsplit(".", 1)[-1]
        which = f" ({group}={choice})" if choice else ""
        keys = ", ".join(sorted(accepted - set(given)))
        raise ConfigError(
            f"{', '.join(f'{group}.{k}' for k in unknown)}: not a key of {name}{which}; it takes {keys}"
        )


# Integer settings each command reads: key -> (smallest value, whether null is allowed). A value of another type
# or out of range is one line naming the key, before anything starts (not a traceback, nor a quiet wrong result
# such as ``limit=-1`` leaving out the last example).
TRAIN_INTEGERS: dict[str, tuple[int | None, bool]] = {
    "seed": (None, False),
    "threads": (1, True),
    "trainer.max_epochs": (1, False),
    "data.batch_size": (1, False),
    "data.val_batch_size": (1, False),
    "data.max_train_examples": (1, True),
    "data.max_val_examples": (1, True),
    "data.episodes_per_update": (1, True),
    "data.chunks_per_update": (1, True),
    "pretrain.epochs": (0, False),
    "pretrain.batch_size": (1, False),
    "final_eval.limit": (1, True),
    "data.frames": (1, False),
    "data.horizon": (1, False),
    "data.batches_per_epoch": (1, False),
    "data.generated": (0, False),
    "model.batch_size": (1, False),
    "model.episodes_per_update": (1, False),
    "model.memory_size": (1, False),
    "model.replay_batch": (1, False),
    "model.epsilon_frames": (1, False),
    "model.ppo_epochs": (1, False),
    "model.chunk_frames": (1, False),
    "model.schedule_window": (1, False),
    "model.stop_radius": (0, False),
}
EVAL_INTEGERS: dict[str, tuple[int | None, bool]] = {
    "seed": (None, False),
    "threads": (1, True),
    "batch_size": (1, False),
    "limit": (1, True),
}


# Real-valued settings: key -> (lowest, highest, whether the lowest itself is refused, whether null is allowed).
# nan, inf, a word or a value out of range is one line naming the key: a negative clip norm, an infinite loss
# weight or a nan entropy coefficient would otherwise train quietly into nonsense or fail after the first update.
TRAIN_NUMBERS: dict[str, tuple[float, float | None, bool, bool]] = {
    "model.lr": (0, None, True, False),
    "pretrain.lr": (0, None, True, False),
    "model.gradient_clip": (0, None, False, True),  # 0 or null: no clipping
    "pretrain.gradient_clip": (0, None, False, True),
    "trainer.gradient_clip_val": (0, None, False, True),
    "model.goal_loss_weight": (0, None, False, False),
    "model.entropy_coef": (0, None, False, False),
    "model.distill_weight": (0, None, False, False),
    "model.value_loss_weight": (0, None, False, False),
    "model.block_loss_weight": (0, None, False, False),
    "model.background_weight": (0, None, False, False),
    "model.clip": (0, None, True, False),
    "model.gamma": (0, 1, False, False),
    "model.epsilon_start": (0, 1, False, False),
    "model.epsilon_end": (0, 1, False, False),
    "model.priority_exponent": (0, None, False, False),
    "model.oracle_rollin": (0, 1, False, False),
    "model.position_noise": (0, None, False, False),
    "model.translate": (0, None, False, False),
    "model.relabel": (0, 1, False, False),
    "model.dropout": (0, 1, False, False),
    "data.demonstration_fraction": (0, 1, False, False),
    "data.corpus_share": (0, 1, False, False),
}


def check_numbers(cfg: Any, rules: dict[str, tuple[float, float | None, bool, bool]]) -> None:
    """Each key of ``rules`` present in ``cfg`` holds a finite number in its range (or null where allowed)."""
    import math

    from omegaconf import OmegaConf

    for key, (lowest, highest, above, nullable) in rules.items():
        value = OmegaConf.select(cfg, key, default="<absent>")
        if value == "<absent>" or (value is None and nullable):
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if (
            not number
            or value < lowest
            or (above and value == lowest)
            or (highest is not None and value > highest)
        ):
            wanted = f"a finite number {'above' if above else 'at least'} {lowest:g}"
            wanted += f" and at most {highest:g}" if highest is not None else ""
            raise ConfigError(f"{key}={value!r}: must be {wanted}" + (" (or null: none)" if nullable else ""))


def check_integers(cfg: Any, rules: dict[str, tuple[int | None, bool]]) -> None:
    """Each key of ``rules`` present in ``cfg`` holds an integer at least its minimum (or null where allowed)."""
    from omegaconf import OmegaConf

    for key, (minimum, nullable) in rules.items():
        if OmegaConf.select(cfg, key, default="<absent>") == "<absent>":
            continue
        value = OmegaConf.select(cfg, key)
        if value is None and nullable:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
            wanted = (
                "an integer" + (f" >= {minimum}" if minimum is not None else "") + (" or null" * nullable)
            )
            raise ConfigError(f"{key}={value!r}: must be {wanted}")
