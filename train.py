"""Train a learner: ``python train.py model=<supervised|bandit|reinforce|oracle|distill> [experiment=...]``."""

import hydra
from omegaconf import DictConfig

from blocks.cli import run, user_errors
from blocks.runs.train import train


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    with user_errors():
        metrics = train(cfg)
    return metrics.get("val/mean_error")  # the value a Hydra sweeper would optimise


if __name__ == "__main__":
    run(main)
