"""Every check of a configuration, in one home, run once before a fit (:func:`check_config`) or an evaluation
(:func:`check_eval_config`): a key its target does not take, integers and numbers out of range, the devices, the
picture, the checkpoints named. Each bad value is one line naming its key (a :class:`~blocks.errors.ConfigError`);
the domain's own validators (the renderer's name, the network's options) are called from here."""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, ListConfig, OmegaConf

from blocks.errors import CheckpointError, ConfigError
from blocks.model.checkpoint import load_file, missing_file, network_options
from blocks.render.factory import check_render, render_of


def accepted_keys(target: str) -> set[str] | None:
    """The keyword arguments the class or function named by ``_target_`` accepts (through ``**kwargs`` up its
    base classes); None when it takes any key."""
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


def chosen_option(group: str) -> str | None:
    """The option picked for a config group (``model=bandit`` -> ``bandit``), when Hydra composed the config."""
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get().runtime.choices.get(group) if HydraConfig.initialized() else None


def check_eval_config(cfg: DictConfig) -> None:
    """What eval.py is given: its integers (the agent's own keys are checked as it is built)."""
    check_integers(cfg, EVAL_INTEGERS)


def check_config(cfg: DictConfig) -> None:
    """Fail fast, naming the key, before anything slow starts."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(f"{', '.join(missing)}: required, no value given (see the config's comment)")
    check_integers(cfg, TRAIN_INTEGERS)
    check_numbers(cfg, TRAIN_NUMBERS)
    for key in cfg.get("requires") or []:  # an experiment's stage needs the one before it
        if OmegaConf.select(cfg, key) in (None, ""):
            experiment = chosen_option("experiment") or "this experiment"
            raise ConfigError(f"{key}: required by experiment={experiment}, no value given (see its comment)")
    check_devices(cfg)
    if "render" in cfg.data:
        check_render(cfg.data.render)
    check_keys(cfg.model, "model", chosen_option("model"), given=("vocabulary",))
    check_keys(cfg.data, "data", chosen_option("data"))
    check_keys(cfg.trainer, "trainer", chosen_option("trainer"))
    check_added_keys(cfg)
    if "network" in cfg.model:
        network_options(OmegaConf.to_container(cfg.model.network, resolve=True), source="config")
    learner = hydra.utils.get_class(cfg.model._target_)
    if not getattr(learner, "supervised_start", True) and cfg.pretrain.epochs > 0:
        raise ConfigError(
            f"model={chosen_option('model') or learner.__name__} learns from scratch (it imitates the demonstrations "
            f"itself): pretrain=none, not {cfg.pretrain.epochs} supervised epochs"
        )
    teachers = OmegaConf.select(cfg, "model.teachers") or []
    for key, path in [
        ("ckpt_path", None if cfg.get("ckpt_path") in ("last", "auto") else cfg.get("ckpt_path")),
        ("model.init_checkpoint", OmegaConf.select(cfg, "model.init_checkpoint")),
        ("pretrain.checkpoint", OmegaConf.select(cfg, "pretrain.checkpoint")),
        *(("model.teachers", t) for t in teachers),
    ]:
        if path and not Path(path).is_file():
            raise CheckpointError(f"{key}={path}: {missing_file(path)}")
        if (
            path
            and key in ("model.init_checkpoint", "pretrain.checkpoint", "ckpt_path")
            and "render" in cfg.data
        ):
            check_picture(key, path, cfg.data.render)
        if path and key == "ckpt_path":
            check_stage(path, learner)


def check_added_keys(cfg: DictConfig) -> None:
    """A key added at the top (``+foo=1``) is read by nothing: one line, not a run that ignores it. (Keys added
    under a node with a ``_target_`` are judged against its arguments by check_keys.)"""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return
    for override in HydraConfig.get().overrides.task:
        key = override.split("=", 1)[0]
        if key.startswith("+") and not key.startswith("++") and "." not in key and "/" not in key:
            name = key[1:]
            if name in cfg and name not in HydraConfig.get().runtime.choices:
                raise ConfigError(
                    f"{override}: {name} is not a key of this command's config, and nothing reads it "
                    f"(python {HydraConfig.get().job.name}.py --help lists the keys)"
                )


def check_stage(path: str, learner: type) -> None:
    """``ckpt_path`` resumes the learner that wrote it: a supervised start's checkpoint given to a bandit run
    would start a new run with the wrong weights' optimizer state and no warning."""
    kind = (load_file(path, mmap=True).get("hyper_parameters") or {}).get("kind")
    ours = getattr(learner, "kind", None)
    if kind and ours and kind != ours:
        hint = (" (a run's supervised start: resume the whole run with hydra.run.dir=<run folder> ckpt_path=last)"
                if kind == "supervised" else "")  # fmt: skip
        raise ConfigError(
            f"ckpt_path={path}: a {kind} checkpoint{hint}; this run trains {learner.__name__} ({ours}), which "
            f"resumes only from its own checkpoints"
        )


def check_picture(key: str, path: str, render: str) -> None:
    """A run goes on from weights that learnt from the picture it draws: a network trained on one picture reads
    the other as noise (docs/experiments/release-pictures.md)."""
    record = load_file(path, mmap=True).get("hyper_parameters") or {}
    learnt = render_of(record)
    if "vocabulary" in record and learnt != render:
        raise ConfigError(
            f"{key}={path}: its network learnt from data.render={learnt} pictures, this run draws "
            f"data.render={render}; start from a checkpoint trained on {render}, or set data.render={learnt}"
        )


def check_devices(cfg: DictConfig) -> None:
    """``trainer=gpu`` on a machine without one, or ``trainer.devices=0``: one line, not Lightning's traceback."""
    devices = OmegaConf.select(cfg, "trainer.devices")
    if isinstance(devices, int) and not isinstance(devices, bool) and devices < 1:
        raise ConfigError(f"trainer.devices={devices}: at least 1 (or auto)")
    accelerator = str(OmegaConf.select(cfg, "trainer.accelerator"))
    if accelerator == "auto":
        import torch

        accelerator = "gpu" if torch.cuda.is_available() else "cpu"
    if accelerator == "cpu":  # processes: a count only
        fits = devices == "auto" or isinstance(devices, int) or str(devices).strip().isdigit()
        wanted = "a number of processes (1, 2, ...) or auto"
    else:
        indices = devices if isinstance(devices, list | ListConfig) else str(devices).strip(",").split(",")
        fits = devices == "auto" or isinstance(devices, int) or all(str(i).strip().isdigit() for i in indices)
        wanted = "a number of GPUs (1, 2, ...), a list of their indices ([0,1]) or auto"
    if isinstance(devices, bool) or not fits:
        raise ConfigError(f"trainer.devices={devices!r}: {wanted}")
    if str(OmegaConf.select(cfg, "trainer.accelerator")) in ("gpu", "cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(
                "trainer.accelerator=gpu (trainer=gpu): this machine has no GPU that torch can use; "
                "train on the CPU with trainer=cpu"
            )
