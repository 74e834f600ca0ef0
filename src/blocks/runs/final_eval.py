"""The end of a run: its tune-selected checkpoint evaluated on dev, printed beside the paper's row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

from blocks.checks import chosen_option
from blocks.runs.record import RunRecord, environment


def final_evaluation(
    cfg: DictConfig, trainer: pl.Trainer, model: pl.LightningModule
) -> dict[str, Any] | None:
    """Evaluate the checkpoint the tuning split selected on ``final_eval.split`` (dev by default) and print
    its row beside the paper's; also written to ``final_eval.json`` and ``episodes.csv`` in the run folder."""
    from blocks.corpus.loader import load_split
    from blocks.evaluate import run_episodes, write_atomically, write_episodes
    from blocks.render.factory import make_renderer
    from blocks.report.paper import comparison_row
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
    name = chosen_option("model") or model.kind
    record = {
        "split": split,
        "limit": cfg.final_eval.limit,
        "checkpoint": selected or "(last weights)",
        "model": name,
        "global_step": trainer.global_step,  # with max_epochs: what a rerun compares to skip a finished run
        "max_epochs": trainer.max_epochs,
        **summarize(results),
        "environment": environment(),  # the versions a rerun of the seed needs to repeat it
    }
    installs = [
        i for c in trainer.callbacks if isinstance(c, RunRecord) for i in c.record.get("installs", [])
    ]
    if len(installs) > 1:  # resumed under other versions: from which step each install trained
        record["installs"] = installs
    output = Path(cfg.paths.output_dir)
    write_episodes(output / "episodes.csv", examples, results)
    write_atomically(
        output / "final_eval.json", json.dumps(record, indent=2) + "\n"
    )  # last: a rerun skips on it
    print(f"\n{split} figures of {record['checkpoint']} (selected on the tuning split):", flush=True)
    print(comparison_row(name, record), flush=True)
    return record
