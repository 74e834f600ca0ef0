"""A learner's checkpoint read without Lightning: the network it holds, its vocabulary and its record.

Every learner saves the network's hyperparameters and the vocabulary beside the weights, so one call rebuilds
the network anywhere. Agents, learners that start from another's weights, distillation teachers and notebooks
all load through :func:`load_policy`; nothing here knows the learners, so there is no import circle.
"""

from __future__ import annotations

import inspect
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from blocks.errors import CheckpointError, ConfigError
from blocks.model.dqn import QNetwork
from blocks.model.goal_predictor import GoalPredictor
from blocks.model.perception import BoardReader
from blocks.model.policy import PolicyNetwork
from blocks.model.spo import SPONetwork
from blocks.render.factory import render_of

# network.architecture -> the class every learner, agent and loader builds from the same keys
ARCHITECTURES: dict[str, type[PolicyNetwork]] = {"paper": PolicyNetwork, "spo": SPONetwork, "dqn": QNetwork}

# Network options that left the package after they measured no gain (docs/experiments/network-options.md):
# a checkpoint that used them at these values is the plain network and still loads.
RETIRED_NETWORK_OPTIONS = {"dropout": 0.0, "fusion": "concat", "coordinates": False}


# The shipped files renamed or removed when checkpoints/ became one file per results row (2026-12-07): a command
# or record naming the old path is told where the network went, or how to bring back one the tree no longer has.
SHIPPED_BEFORE = "c6dd7ce"
SHIPPED_MOVES: dict[str, str | None] = {
    # removed first, so that a seed which was renamed (approach_onpolicy_seed42) maps to its new name
    **dict.fromkeys(["bandit.ckpt", "supervised.ckpt", "spo.ckpt", "distill.ckpt", "bandit_ensemble/"]),
    **dict.fromkeys(
        f"paper/{row}_seed{seed}.ckpt"
        for row in (
            "supervised",
            "approach",
            "reinforce",
            "dqn",
            "approach_onpolicy",
            "reinforce_onpolicy",
            "dqn_release_world",
        )
        for seed in (42, 1, 2)
    ),
    "paper/supervised_release_render.ckpt": "paper/supervised_release_pictures.ckpt",
    "paper/supervised_start_release_render.ckpt": "paper/supervised_start_release_pictures.ckpt",
    "paper/approach_onpolicy_seed42.ckpt": "paper/approach.ckpt",
    "paper/approach_release_render.ckpt": "paper/approach_release_pictures.ckpt",
    "paper/reinforce_onpolicy_seed2.ckpt": "paper/reinforce.ckpt",
    "paper/dqn_release_world_seed42.ckpt": "paper/dqn.ckpt",
    "spo_release_world.ckpt": "paper/spo.ckpt",
    "oracle_planner.ckpt": "paper/oracle_planner.ckpt",
    **{
        f"{name}.ckpt": f"ours/{name}.ckpt"
        for name in (
            "board_reader",
            "goal_predictor",
            "goal_predictor_minilm_seed1",
            "goal_predictor_minilm_seed3",
            "goal_predictor_minilm_seed4",
            "goal_predictor_relabel",
            "goal_predictor_seed5",
            "goal_predictor_norelabel",
        )
    },
}


def missing_file(path: str | Path) -> str:
    """Why ``path`` is not a checkpoint file, in a few words, naming the new home of a shipped file that moved."""
    if Path(path).is_dir():
        return "a folder, not a checkpoint file (name the .ckpt inside it)"
    parts = Path(path).as_posix().split("checkpoints/", 1)
    if len(parts) == 2:
        for old, new in SHIPPED_MOVES.items():
            if parts[1] == old or (old.endswith("/") and parts[1].startswith(old)):
                if new is not None:
                    return f"no such checkpoint file: moved to {parts[0]}checkpoints/{new} (checkpoints/README.md)"
                return (
                    "no such checkpoint file: a superseded or square-rule network, no longer shipped (its figures: "
                    f"docs/results-archive.md; the file: git checkout {SHIPPED_BEFORE} -- checkpoints/{parts[1]})"
                )
    return "no such checkpoint file"


def torch_file(path: str) -> bool:
    """Whether the file starts as torch.save writes it (a zip archive, or a pickle in the legacy format), so that
    random bytes or a text file are not refused as "holding objects other than plain data". An empty or cut-short
    file passes: torch.load then names it damaged."""
    try:
        with open(path, "rb") as file:
            head = file.read(4)
    except OSError as error:
        raise CheckpointError(f"{path}: cannot be read ({error.strerror})") from None
    return not head or head == b"PK\x03\x04" or (head[0] == 0x80 and len(head) > 1 and 2 <= head[1] <= 5)


def load_file(path: str | Path, map_location: str | torch.device = "cpu", mmap: bool = False) -> Any:
    """A checkpoint file's contents, read as data only (torch's ``weights_only``: tensors, numbers, strings and
    containers; ours and Lightning's checkpoints hold nothing else). Unpickling a file may otherwise run any
    code it carries; such a file, a damaged one and a missing one each fail naming the file."""
    path = str(path)
    if not Path(path).is_file():
        raise CheckpointError(f"{path}: {missing_file(path)}")
    if not torch_file(path):
        raise CheckpointError(
            f"{path}: not a checkpoint (torch writes a zip archive or a pickle; this is neither)"
        )
    try:
        return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as error:
        if "weights_only" in str(error) or "Unsupported" in str(error):
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            what = next((line for line in lines if "GLOBAL" in line), lines[-1] if lines else "")
            raise CheckpointError(
                f"{path}: refused: it holds objects other than plain data (code could run when it is opened)"
                + (f": {what[:160]}" if what else "")
            ) from error
        raise CheckpointError(f"{path}: not a readable checkpoint, damaged or cut short ({error})") from error
    except Exception as error:  # cut short, not a torch file, ...
        raise CheckpointError(
            f"{path}: not a readable checkpoint, damaged or cut short ({type(error).__name__}: {error})"
        ) from error


def network_options(options: dict[str, Any] | None, source: str = "network") -> dict[str, Any]:
    """``PolicyNetwork`` keyword arguments from a config or a checkpoint's record, checked key by key."""
    options = dict(options or {})
    if not isinstance(options.pop("compile", False), bool):  # how the learner runs it (blocks.learn.base)
        raise ConfigError(f"{source}: network.compile must be true or false")
    for key, neutral in RETIRED_NETWORK_OPTIONS.items():
        if key in options:
            value = options.pop(key)
            if value != neutral:
                raise ConfigError(
                    f"{source}: network.{key}={value!r} was removed from the package (it measured no gain; "
                    f"docs/experiments/network-options.md); load it with blocks 0.1"
                )
    architecture = options.get("architecture", "paper")
    if architecture not in ARCHITECTURES:
        raise ConfigError(
            f"{source}: unknown network.architecture={architecture!r}; one of {', '.join(ARCHITECTURES)}"
        )
    known = set(inspect.signature(ARCHITECTURES[architecture]).parameters) - {"vocab_size"} | {"architecture"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(
            f"{source}: unknown network key(s) {', '.join('network.' + k for k in unknown)}; "
            f"network.architecture={architecture} takes {', '.join(sorted(known))}"
        )
    return options


def build_network(vocab_size: int, options: dict[str, Any]) -> PolicyNetwork:
    """The network that ``options`` (checked by :func:`network_options`) describe, freshly initialised."""
    options = dict(options)
    return ARCHITECTURES[options.pop("architecture", "paper")](vocab_size=vocab_size, **options)


@dataclass
class PolicyCheckpoint:
    """What a checkpoint file holds that acting needs."""

    path: str
    network: dict[str, Any]  # PolicyNetwork's keyword arguments
    vocabulary: list[str]
    hparams: dict[str, Any]  # the learner's whole record (kind, lr, where it started from, ...)
    policy_state: dict[str, torch.Tensor]

    @property
    def frames(self) -> int:
        return int(self.network.get("frames", 5))

    @property
    def image_size(self) -> int:
        return int(self.network.get("image_size", 120))

    def build(self) -> PolicyNetwork:
        """The network with its trained weights, in eval mode."""
        network = build_network(len(self.vocabulary), self.network)
        network.load_state_dict(self.policy_state)
        return network.eval()


# Checkpoints of the read-and-plan agent's parts: where they go instead of a policy's place.
NOT_POLICIES = {
    "perception": "it is the board reader: agent=read_and_plan agent.reader=<it> agent.goal=<goal network>",
    "goal_predictor": "it is a goal network: agent=read_and_plan agent.reader=<reader> agent.goal=<it>",
}


def read_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> PolicyCheckpoint:
    """Any learner's checkpoint; a missing file or a file that is not one fails naming it."""
    path = str(path)
    raw = load_file(path, map_location)
    record = raw.get("hyper_parameters") if isinstance(raw, dict) else None
    if record and record.get("kind") in NOT_POLICIES:
        kind = record["kind"]
        raise CheckpointError(f"{path}: a {kind!r} checkpoint, not a policy; {NOT_POLICIES[kind]}")
    if not record or "vocabulary" not in record or "state_dict" not in raw:
        raise CheckpointError(f"{path}: not a blocks learner checkpoint (no network record or weights)")
    state = {k.removeprefix("policy."): v for k, v in raw["state_dict"].items() if k.startswith("policy.")}
    return PolicyCheckpoint(
        path=path,
        network=network_options(record.get("network"), source=path),
        vocabulary=list(record["vocabulary"]),
        hparams=dict(record),
        policy_state=state,
    )


def load_policy(
    path: str | Path, map_location: str | torch.device = "cpu"
) -> tuple[PolicyNetwork, list[str]]:
    """The trained network of a checkpoint (eval mode, on ``map_location``) and its vocabulary."""
    checkpoint = read_checkpoint(path, map_location)
    return checkpoint.build().to(map_location), checkpoint.vocabulary


def _learner_checkpoint(path: str | Path, kind: str, map_location: str | torch.device) -> dict[str, Any]:
    checkpoint = load_file(path, map_location)
    found = checkpoint.get("hyper_parameters", {}).get("kind") if isinstance(checkpoint, dict) else None
    if found != kind:
        raise CheckpointError(f"{path}: a {found!r} checkpoint where a {kind!r} one is needed")
    return checkpoint


def _weights(checkpoint: dict[str, Any], prefix: str) -> dict[str, torch.Tensor]:
    return {k.removeprefix(prefix): v for k, v in checkpoint["state_dict"].items() if k.startswith(prefix)}


def load_reader(path: str | Path, map_location: str | torch.device = "cpu") -> BoardReader:
    """The board reader of a ``model=perception`` checkpoint, in eval mode."""
    checkpoint = _learner_checkpoint(path, "perception", map_location)
    record = checkpoint["hyper_parameters"]
    reader = BoardReader(record["image_size"], record["channels"], render_of(record))
    reader.load_state_dict(_weights(checkpoint, "reader."))
    return reader.to(map_location).eval()


def load_goal_predictor(
    path: str | Path, map_location: str | torch.device = "cpu"
) -> tuple[GoalPredictor, list[str]]:
    """The goal predictor of a ``model=goal_predictor`` checkpoint and its vocabulary, in eval mode."""
    checkpoint = _learner_checkpoint(path, "goal_predictor", map_location)
    record = checkpoint["hyper_parameters"]
    predictor = GoalPredictor(
        len(record["vocabulary"]),
        record["word_dim"],
        record["dim"],
        record["heads"],
        record["layers"],
        record.get("dropout", 0.0),
        record.get("axis_references", False),
        record.get("text_encoder"),
        record["vocabulary"],
    )
    predictor.load_state_dict(_weights(checkpoint, "predictor."))
    return predictor.to(map_location).eval(), list(record["vocabulary"])
