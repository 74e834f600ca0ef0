"""Evaluate an agent on a split: ``python eval.py agent=<stop|random|demonstrations|policy|goal> split=dev``."""

import hydra
from omegaconf import DictConfig

from blocks.cli import run, user_errors
from blocks.runs.eval import evaluate


@hydra.main(version_base="1.3", config_path="conf", config_name="eval")
def main(cfg: DictConfig) -> None:
    with user_errors():
        evaluate(cfg)


if __name__ == "__main__":
    run(main)
