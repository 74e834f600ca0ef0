"""Train a learner: ``python train.py model=<supervised|bandit|reinforce|oracle> [trainer.devices=2] [experiment=smoke]``."""

import hydra
from omegaconf import DictConfig

from blocks.learn.train import train


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    metrics = train(cfg)
    return metrics.get("val/mean_error")  # the value a Hydra sweeper would optimise


if __name__ == "__main__":
    main()
