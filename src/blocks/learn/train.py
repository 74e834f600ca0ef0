"""What ``train.py`` does: compose the objects a config names, pretrain if the bandit needs it, fit."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import hydra
import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

from blocks import set_torch_threads

log = logging.getLogger(__name__)


def _instantiate_all(group: DictConfig | None) -> list[Any]:
    return [hydra.utils.instantiate(c) for c in (group or {}).values() if c is not None and "_target_" in c]


def _check(cfg: DictConfig) -> None:
    """Fail fast, naming the key, before anything slow starts."""
    lr = OmegaConf.select(cfg, "model.lr")
    if lr is None or lr <= 0:
        raise ValueError(f"model.lr must be a positive number, got {lr}")
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ValueError(f"{', '.join(missing)}: required, no value given (see the config's comment)")
    teachers = OmegaConf.select(cfg, "model.teachers") or []
    for key, path in [
        ("ckpt_path", cfg.get("ckpt_path")),
        ("model.init_checkpoint", OmegaConf.select(cfg, "model.init_checkpoint")),
        *(("model.teachers", t) for t in teachers),
    ]:
        if path and not Path(path).is_file():
            raise FileNotFoundError(f"{key}={path}: no such checkpoint file")


def pretrain_supervised(cfg: DictConfig, vocabulary: list[str]) -> str:
    """The bandit's supervised initialisation: ``pretrain.epochs`` of SUPERVISED, saved under ``pretrain/``."""
    from blocks.learn.data import DemonstrationDataModule
    from blocks.learn.supervised import SupervisedLearner

    out = Path(cfg.paths.output_dir) / "pretrain"
    data = DemonstrationDataModule(
        root=cfg.data.root,
        image_size=cfg.data.image_size,
        frames=cfg.data.frames,
        batch_size=cfg.pretrain.batch_size,
        max_train_examples=cfg.data.max_train_examples,
        max_val_examples=cfg.data.max_val_examples,
        val_batch_size=cfg.data.val_batch_size,
        seed=cfg.seed,
        demonstration_route=cfg.data.demonstration_route,
        mirrors=cfg.data.mirrors,
        relabelled_copies=cfg.data.relabelled_copies,
    )
    model = SupervisedLearner(
        vocabulary, OmegaConf.to_container(cfg.model.network, resolve=True), lr=cfg.pretrain.lr
    )
    trainer_cfg = OmegaConf.merge(
        cfg.trainer, {"max_epochs": cfg.pretrain.epochs, "default_root_dir": str(out)}
    )
    checkpoint = pl.callbacks.ModelCheckpoint(
        dirpath=out / "checkpoints", filename="pretrain", save_last=False
    )
    trainer = hydra.utils.instantiate(
        trainer_cfg, callbacks=[checkpoint, pl.callbacks.TQDMProgressBar(refresh_rate=10)],
        logger=pl.loggers.CSVLogger(str(out), name="csv"), check_val_every_n_epoch=cfg.pretrain.epochs,
    )  # fmt: skip
    log.info("supervised initialisation: %d epochs", cfg.pretrain.epochs)
    trainer.fit(model, data)
    trainer.strategy.barrier()
    # Lightning names the file pretrain-v1.ckpt when the folder already holds one (a rerun in the same run
    # directory): take the file this run wrote, not an older one with perhaps another network.
    return checkpoint.best_model_path


def train(cfg: DictConfig) -> dict[str, float]:
    """Fit the configured learner; returns the last logged metrics."""
    _check(cfg)
    set_torch_threads()
    pl.seed_everything(cfg.seed, workers=True)

    datamodule = hydra.utils.instantiate(cfg.data)
    vocabulary = datamodule.vocabulary.to_list()
    extra: dict[str, Any] = {}
    is_bandit = "init_checkpoint" in cfg.model
    if is_bandit and not cfg.model.init_checkpoint and not cfg.ckpt_path and cfg.pretrain.epochs > 0:
        extra["init_checkpoint"] = pretrain_supervised(cfg, vocabulary)
        pl.seed_everything(cfg.seed, workers=True)
    model = hydra.utils.instantiate(cfg.model, vocabulary=vocabulary, **extra, _convert_="all")

    trainer: pl.Trainer = hydra.utils.instantiate(
        cfg.trainer,
        callbacks=_instantiate_all(cfg.get("callbacks")),
        logger=_instantiate_all(cfg.get("logger")),
    )
    trainer.fit(model, datamodule, ckpt_path=cfg.ckpt_path)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    log.info("final metrics: %s", metrics)
    return metrics
