"""The published figures this package is measured against (dev split: mean / median distance error).

Misra, Langford & Artzi (EMNLP 2017), Table 2, and Xiong et al. (IJCAI 2018). One home, read by the summary
that ``train.py`` prints after training and by the results tables.
"""

from __future__ import annotations

# model config name -> (the paper's row, mean error, median error or None)
PAPER_DEV = {
    "stop": ("STOP", 5.95, 5.71),
    "random": ("RANDOM", 15.3, 15.70),
    "demonstrations": ("Demonstrations", 0.35, 0.30),
    "supervised": ("SUPERVISED", 4.65, 4.45),
    "reinforce": ("REINFORCE", 5.57, 5.29),
    "dqn": ("DQN", 6.04, 5.78),
    "bandit": ("Our approach (contextual bandit)", 3.60, 3.09),
    "target": ("SUPERVISED with oracle planner", 2.78, None),  # the paper gives the mean only
}
# Sweeps of the paper's approach: the swept value -> the paper's dev mean error (Table 2's ablations; Figure 4,
# the share of training examples with a demonstration).
PAPER_SWEEPS = {
    "ablation": {"none": 3.60, "no_sup_init": 3.78, "no_prev_action": 3.95, "no_f1": 4.33, "no_f2": 3.74,
                 "distance_reward": 8.36},
    "data.demonstration_fraction": {"0.0": 5.45, "0.125": 3.90, "0.25": 3.76, "0.5": 3.69, "1.0": 3.60},
}  # fmt: skip
BEST_PUBLISHED_DEV = ("Xiong et al. 2018 (scheduled policy optimisation)", 1.72, 1.00)


def comparison_row(model: str, metrics: dict[str, float]) -> str:
    """A Markdown table (header and one row) of ``metrics`` beside the paper's figures for ``model``."""
    paper = PAPER_DEV.get(model)
    median = "-" if paper is None or paper[2] is None else f"{paper[2]:.2f}"
    published = f"{paper[1]:.2f} / {median} ({paper[0]})" if paper else "- (not in the paper)"
    return "\n".join(
        [
            "| model | mean error | median error | mean min. distance | mean steps | horizon rate | paper |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            f"| {model} | {metrics['mean_error']:.2f} | {metrics['median_error']:.2f} | "
            f"{metrics['mean_min_distance']:.2f} | {metrics['mean_steps']:.1f} | "
            f"{100 * metrics['horizon_rate']:.1f} % | {published} |",
        ]
    )
