"""What ``train.py`` does: check the config, compose the objects it names, pretrain if asked, fit, evaluate."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import hydra
import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

from blocks import set_torch_threads
from blocks.cli import TRAIN_INTEGERS, accepted_keys, check_integers, check_keys
from blocks.errors import CheckpointError, ConfigError, positive_number
from blocks.model.checkpoint import load_file, network_options
from blocks.render.factory import check_render, render_of
from blocks.runs.record import RunRecord, make_record, restore_hydra_record, resumed_config

log = logging.getLogger(__name__)


def _instantiate_all(group: DictConfig | None) -> list[Any]:
    return [hydra.utils.instantiate(c) for c in (group or {}).values() if c is not None and "_target_" in c]


def _choice(group: str) -> str | None:
    """The option picked for a config group (``model=bandit`` -> ``bandit``), when Hydra composed the config."""
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get().runtime.choices.get(group) if HydraConfig.initialized() else None


def check_config(cfg: DictConfig) -> None:
    """Fail fast, naming the key, before anything slow starts."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(f"{', '.join(missing)}: required, no value given (see the config's comment)")
    check_integers(cfg, TRAIN_INTEGERS)
    for key in cfg.get("requires") or []:  # an experiment's stage needs the one before it
        if OmegaConf.select(cfg, key) in (None, ""):
            experiment = _choice("experiment") or "this experiment"
            raise ConfigError(f"{key}: required by experiment={experiment}, no value given (see its comment)")
    check_devices(cfg)
    if "render" in cfg.data:
        check_render(cfg.data.render)
    for key in ("model.lr", "pretrain.lr"):  # nan, inf or a word: one line now, not a crash after an update
        if OmegaConf.select(cfg, key) is not None:
            positive_number(OmegaConf.select(cfg, key), key)
    check_keys(cfg.model, "model", _choice("model"), given=("vocabulary",))
    check_keys(cfg.data, "data", _choice("data"))
    if "network" in cfg.model:
        network_options(OmegaConf.to_container(cfg.model.network, resolve=True), source="config")
    learner = hydra.utils.get_class(cfg.model._target_)
    if not getattr(learner, "supervised_start", True) and cfg.pretrain.epochs > 0:
        raise ConfigError(
            f"model={_choice('model') or learner.__name__} learns from scratch (it imitates the demonstrations "
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
            raise CheckpointError(f"{key}={path}: no such checkpoint file")
        if (
            path
            and key in ("model.init_checkpoint", "pretrain.checkpoint", "ckpt_path")
            and "render" in cfg.data
        ):
            check_picture(key, path, cfg.data.render)


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
    if str(OmegaConf.select(cfg, "trainer.accelerator")) in ("gpu", "cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(
                "trainer.accelerator=gpu (trainer=gpu): this machine has no GPU that torch can use; "
                "train on the CPU with trainer=cpu"
            )


def pretraining(cfg: DictConfig, vocabulary: list[str]) -> tuple[Any, Any, pl.Trainer, Any]:
    """The supervised initialisation of a rollout learner, as (model, data, trainer, checkpoint callback):
    ``pretrain.epochs`` of SUPERVISED on the demonstrated training examples (``data.demonstration_fraction``),
    clipped at ``pretrain.gradient_clip``, saved under ``pretrain/`` of the run."""
    from blocks.data.base import init_keys
    from blocks.data.demonstrations import DemonstrationDataModule
    from blocks.learn.supervised import SupervisedLearner
    from blocks.runs.callbacks import GracefulStop, ProgressBar

    out = Path(cfg.paths.output_dir) / "pretrain"
    # the corpus, picture and split settings the rollout learner's data shares with the demonstrations
    shared = (init_keys(DemonstrationDataModule) - {"batch_size"}).intersection(cfg.data)
    data = DemonstrationDataModule(
        batch_size=cfg.pretrain.batch_size, **{k: cfg.data[k] for k in sorted(shared)}
    )
    model = SupervisedLearner(
        vocabulary,
        OmegaConf.to_container(cfg.model.network, resolve=True),
        lr=cfg.pretrain.lr,
        goal_loss_weight=cfg.model.goal_loss_weight,
    )
    model.hparams["render"] = cfg.data.render  # the record names the picture it learnt from
    trainer_cfg = OmegaConf.merge(
        cfg.trainer,
        {
            "max_epochs": cfg.pretrain.epochs,
            "default_root_dir": str(out),
            "gradient_clip_val": cfg.pretrain.gradient_clip,
            "check_val_every_n_epoch": cfg.pretrain.epochs,
        },
    )
    checkpoint = pl.callbacks.ModelCheckpoint(
        dirpath=out / "checkpoints", filename="pretrain", save_last=True
    )  # last.ckpt: where an interrupted pretraining resumes
    trainer = hydra.utils.instantiate(
        trainer_cfg,
        callbacks=[
            checkpoint, ProgressBar(refresh_rate=10), GracefulStop(), RunRecord(make_record(cfg))
        ],
        logger=pl.loggers.CSVLogger(str(out), name="csv"),
    )  # fmt: skip
    return model, data, trainer, checkpoint


def pretrain_supervised(cfg: DictConfig, vocabulary: list[str]) -> str | None:
    """Run :func:`pretraining`; the path of the checkpoint it wrote. With ``ckpt_path=last`` or ``auto`` (a sweep job run
    again) an interrupted pretraining goes on from its own ``last.ckpt``, and a finished one is used as it is."""
    model, data, trainer, checkpoint = pretraining(cfg, vocabulary)
    log.info("supervised initialisation: %d epochs", cfg.pretrain.epochs)
    resume = resume_path(
        cfg, Path(checkpoint.dirpath).parent, required=False
    )  # a run's first start: none yet
    trainer.fit(model, data, ckpt_path=resume, weights_only=True)
    trainer.strategy.barrier()
    # Lightning names the file pretrain-v1.ckpt when the folder already holds one (a rerun in the same run
    # directory): take the file this run wrote, not an older one with perhaps another network.
    return checkpoint.best_model_path or resume  # resumed after its end: nothing new written


def final_evaluation(
    cfg: DictConfig, trainer: pl.Trainer, model: pl.LightningModule
) -> dict[str, Any] | None:
    """Evaluate the checkpoint the tuning split selected on ``final_eval.split`` (dev by default) and print
    its row beside the paper's; also written to ``final_eval.json`` and ``episodes.csv`` in the run folder."""
    from blocks.corpus.loader import load_split
    from blocks.evaluate import run_episodes, write_episodes
    from blocks.paper import comparison_row
    from blocks.render.factory import make_renderer
    from blocks.world.metrics import summarize

    split = OmegaConf.select(cfg, "final_eval.split")
    if not split or not trainer.is_global_zero or not hasattr(model, "agent"):  # a board reader does not act
        return None
    selected = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    agent = (
        type(model.agent()).from_checkpoint(selected) if selected else model.agent()
    )  # the learner's agent
    examples = load_split(split, cfg.data.root)
    if cfg.final_eval.limit is not None:
        examples = examples[: cfg.final_eval.limit]
    renderer = make_renderer(getattr(agent, "render", "flat"), cfg.data.root, agent.image_size)
    results = run_episodes(agent, examples, render_frames=renderer.render, progress=True)
    name = _choice("model") or model.kind
    record = {
        "split": split,
        "limit": cfg.final_eval.limit,
        "checkpoint": selected or "(last weights)",
        "model": name,
        "global_step": trainer.global_step,  # with max_epochs: what a rerun compares to skip a finished run
        "max_epochs": trainer.max_epochs,
        **summarize(results),
    }
    output = Path(cfg.paths.output_dir)
    (output / "final_eval.json").write_text(json.dumps(record, indent=2) + "\n")
    write_episodes(output / "episodes.csv", examples, results)
    print(f"\n{split} figures of {record['checkpoint']} (selected on the tuning split):", flush=True)
    print(comparison_row(name, record), flush=True)
    return record


def name_checkpoints_by_step(cfg: DictConfig) -> None:
    """Put the step in the checkpoint file name when the run validates more than once an epoch: with one name
    per epoch every validation would overwrite the one before (no version counter), the tune-best among them."""
    checkpoint = OmegaConf.select(cfg, "callbacks.model_checkpoint")
    interval = OmegaConf.select(cfg, "trainer.val_check_interval")
    if checkpoint is None or interval is None or (isinstance(interval, float) and interval == 1.0):
        return
    if "{step" not in checkpoint.filename:
        checkpoint.filename = f"{checkpoint.filename}_step_{{step:06d}}"
        log.info("trainer.val_check_interval=%s: checkpoints named %s", interval, checkpoint.filename)


def resume_path(cfg: DictConfig, folder: Path | None = None, required: bool = True) -> str | None:
    """The checkpoint to resume from, checked readable before anything starts.

    ``ckpt_path=<file>`` is that file. ``last`` is ``folder``'s ``checkpoints/last.ckpt`` (the run folder's, or
    its pretraining's), which must exist when ``required`` (each run gets a new folder: resuming needs the old
    one named). ``auto`` takes it if there is one and starts afresh otherwise: what a sweep job run again after
    an interruption needs (its folder does not change). A damaged ``last.ckpt`` (cut short by a kill) gives way
    to the newest readable checkpoint of the run, said in the log.
    """
    wanted = cfg.get("ckpt_path")
    if wanted not in ("last", "auto"):
        if wanted:
            load_file(wanted, mmap=True)  # missing, damaged or unsafe: one line naming it
        return wanted
    checkpoints = Path(folder or cfg.paths.output_dir) / "checkpoints"
    last = checkpoints / "last.ckpt"
    if not last.is_file():
        if wanted == "last" and required and not stopped_pretraining(cfg):
            raise CheckpointError(
                f"ckpt_path=last: no {last} to resume (every run starts in a new folder): name the run's folder, "
                f"hydra.run.dir=<run folder> ckpt_path=last, or its file, ckpt_path=<run folder>/checkpoints/"
                f"last.ckpt; ckpt_path=auto resumes when there is one and starts afresh otherwise"
            )
        return None
    try:
        load_file(last, mmap=True)
    except CheckpointError as damaged:
        others = sorted((p for p in checkpoints.glob("*.ckpt") if p != last), key=lambda p: p.stat().st_mtime)
        for candidate in reversed(others):
            try:
                load_file(candidate, mmap=True)
            except CheckpointError:
                continue
            log.warning("%s is damaged (%s); resuming from %s, the newest readable checkpoint of the run",
                        last, damaged, candidate)  # fmt: skip
            return str(candidate)
        raise CheckpointError(f"{damaged}; no other checkpoint in {checkpoints} is readable either") from None
    log.info("resuming %s", last)
    return str(last)


def stopped_pretraining(cfg: DictConfig) -> str | None:
    """The ``last.ckpt`` of a supervised start that was stopped before its run's first checkpoint, when resuming."""
    last = Path(cfg.paths.output_dir) / "pretrain" / "checkpoints" / "last.ckpt"
    return str(last) if cfg.get("ckpt_path") in ("last", "auto") and last.is_file() else None


def finished_record(cfg: DictConfig, ckpt_path: str | None) -> dict[str, Any] | None:
    """The run folder's ``final_eval.json`` when ``ckpt_path=last`` or ``auto`` resumes a run that already ended and was
    evaluated (same step, epochs, split and limit): a sweep run again after an interruption skips its finished
    jobs instead of evaluating them a second time."""
    record_file = Path(cfg.paths.output_dir) / "final_eval.json"
    if cfg.get("ckpt_path") not in ("last", "auto") or not ckpt_path or not record_file.is_file():
        return None
    record = json.loads(record_file.read_text())
    step = load_file(ckpt_path, mmap=True)["global_step"]
    wanted = {
        "global_step": step,
        "max_epochs": cfg.trainer.max_epochs,
        "split": OmegaConf.select(cfg, "final_eval.split"),
        "limit": OmegaConf.select(cfg, "final_eval.limit"),
    }
    return record if all(record.get(k, "absent") == v for k, v in wanted.items()) else None


def supervised_start(cfg: DictConfig, vocabulary: list[str]) -> str | None:
    """Where a rollout learner starts: ``pretrain.checkpoint`` (one start shared by a sweep's runs, unless
    ``pretrain.shared=false``: a run whose network differs from it), else ``pretrain.epochs`` of SUPERVISED trained
    here; None without epochs or demonstrations (the paper's 0 %)."""
    if cfg.pretrain.epochs <= 0 or cfg.data.get("demonstration_fraction", 1.0) == 0:
        return None
    shared = cfg.pretrain.get("checkpoint") if cfg.pretrain.get("shared", True) else None
    return shared or pretrain_supervised(cfg, vocabulary)


def train(cfg: DictConfig) -> dict[str, float]:
    """Fit the configured learner, then evaluate its selected checkpoint; returns the last logged metrics."""
    check_config(cfg)
    ckpt_path = resume_path(cfg)
    recorded = ckpt_path or stopped_pretraining(cfg)
    if recorded:  # go on with the run's own configuration, not with what this command line alone composes
        cfg = resumed_config(cfg, recorded)
        restore_hydra_record(cfg)
        check_config(cfg)
    name_checkpoints_by_step(cfg)
    set_torch_threads(cfg.get("threads"))
    finished = finished_record(cfg, ckpt_path)
    if finished is not None:
        log.info("%s: finished and evaluated already (final_eval.json); nothing to do", cfg.paths.output_dir)
        return {k: float(v) for k, v in finished.items() if isinstance(v, (int, float))}
    pl.seed_everything(cfg.seed, workers=True)

    datamodule = hydra.utils.instantiate(cfg.data)
    extra: dict[str, Any] = {}
    if "vocabulary" in (accepted_keys(cfg.model._target_) or ()):  # the learners that read instructions
        extra["vocabulary"] = datamodule.vocabulary.to_list()
    if (
        "init_checkpoint" in cfg.model and not cfg.model.init_checkpoint and not ckpt_path
    ):  # a rollout learner
        extra["init_checkpoint"] = supervised_start(cfg, extra["vocabulary"])
        pl.seed_everything(cfg.seed, workers=True)
    model = hydra.utils.instantiate(cfg.model, **extra, _convert_="all")
    if "render" in cfg.data:
        model.hparams["render"] = cfg.data.render  # the record names the picture it learnt from

    trainer: pl.Trainer = hydra.utils.instantiate(
        cfg.trainer,
        callbacks=[*_instantiate_all(cfg.get("callbacks")), RunRecord(make_record(cfg))],
        logger=_instantiate_all(cfg.get("logger")),
    )
    trainer.fit(model, datamodule, ckpt_path=ckpt_path, weights_only=True)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    log.info("final metrics: %s", metrics)
    final_evaluation(cfg, trainer, model)
    return metrics
