"""A run's configuration checked before anything loads: each bad value is one line naming its key."""

from __future__ import annotations

from pathlib import Path

import hydra
from omegaconf import DictConfig, ListConfig, OmegaConf

from blocks.cli import TRAIN_INTEGERS, TRAIN_NUMBERS, check_integers, check_keys, check_numbers
from blocks.errors import CheckpointError, ConfigError
from blocks.model.checkpoint import load_file, network_options
from blocks.render.factory import check_render, render_of


def chosen_option(group: str) -> str | None:
    """The option picked for a config group (``model=bandit`` -> ``bandit``), when Hydra composed the config."""
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get().runtime.choices.get(group) if HydraConfig.initialized() else None


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
            f"itself): set pretrain.epochs=0, not {cfg.pretrain.epochs}"
        )
    teachers = OmegaConf.select(cfg, "model.teachers") or []
    for key, path in [
        ("ckpt_path", None if cfg.get("ckpt_path") in ("last", "auto") else cfg.get("ckpt_path")),
        ("model.init_checkpoint", OmegaConf.select(cfg, "model.init_checkpoint")),
        ("pretrain.checkpoint", OmegaConf.select(cfg, "pretrain.checkpoint")),
        *(("model.teachers", t) for t in teachers),
    ]:
        if path and not Path(path).is_file():
            what = "a folder, not a checkpoint file" if Path(path).is_dir() else "no such checkpoint file"
            raise CheckpointError(f"{key}={path}: {what}")
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
