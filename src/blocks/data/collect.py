"""On-policy rollouts: step a batch of boards with the current policy, sampling block and direction, into a
:class:`~blocks.data.rollout_tensors.Rollout` (NumPy worlds on the CPU, or the torch world on the policy's device)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from blocks.data.rollout_tensors import Rollout
from blocks.model.distribution import to_action
from blocks.model.policy import PolicyNetwork, goal_targets
from blocks.render.history import FrameHistory
from blocks.tensor_world import TensorBlocksEnv
from blocks.world.planner import Oracle, moved_block
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv


@torch.no_grad()
def collect_rollout(
    policy: PolicyNetwork,
    env: VectorBlocksEnv,
    tasks: Sequence[Task],
    tokens: torch.Tensor,
    lengths: torch.Tensor,
    generator: torch.Generator,
    history: int = 5,
    oracle: Oracle | None = None,
    oracle_rollin: float = 0.0,
) -> Rollout:
    """Run one episode per task with the sampling policy; only boards still acting go through the network.

    With an ``oracle``, every visited state is also labelled with the directions that lead best to the goal, and
    at each step each board takes the oracle's action instead of the policy's with probability ``oracle_rollin``
    (one of its good directions at random): DAgger's mixture, which brings the learner to the goal more often.
    """
    device = next(policy.parameters()).device
    observation, _ = env.reset(tasks)
    n = len(tasks)
    frame_history = FrameHistory(n, history, observation["image"].shape[1:])
    text = policy.encode_instruction(tokens.to(device), lengths.to(device))
    steps: dict[str, list[np.ndarray]] = {
        k: [] for k in ("frames", "previous", "block", "direction", "reward", "active", "goal")
    }
    moved = np.array([moved_block(task) for task in tasks])
    board = np.arange(n)
    oracle_directions, oracle_block = [], None
    wants_goal = policy.has_goal_head  # the goal targets cost a gather per step: only for a goal head
    kept_block = None  # a network that picks its block once per episode (SPO) keeps the first draw
    while not env.all_done:
        frames = observation["image"]
        frame_history.push(frames)
        active = ~env.done
        rows = np.flatnonzero(active)
        stacks = frame_history.stack()  # a view; index (a copy) only when some boards have finished
        images = torch.from_numpy(stacks if len(rows) == n else stacks[rows]).to(device)
        previous = observation["previous_action"]
        goal = goal_targets(env.goals[board, moved], env.positions[board, moved]) if wants_goal else None
        rows_t = torch.from_numpy(rows).to(device)
        distribution = policy(images, text[rows_t], torch.from_numpy(previous[rows]).to(device))
        _, block_rows, direction_rows = distribution.sample(generator)
        block = np.zeros(n, np.int64)
        direction = np.full(n, 4, np.int64)
        block[rows] = block_rows.cpu().numpy()
        direction[rows] = direction_rows.cpu().numpy()
        if getattr(policy, "block_per_episode", False):
            kept_block = block.copy() if kept_block is None else kept_block
            block = kept_block.copy()
        if oracle is not None:
            oracle_block, good = oracle(tasks, env.positions)
            oracle_directions.append(good)
            if oracle_rollin > 0:
                take = (torch.rand(n, generator=generator).numpy() < oracle_rollin) & active
                weights = torch.from_numpy(good.astype(np.float32))
                pick = torch.multinomial(weights, 1, generator=generator).squeeze(1).numpy()
                block = np.where(take, oracle_block, block)
                direction = np.where(take, pick, direction)
        actions = to_action(torch.from_numpy(block), torch.from_numpy(direction)).numpy()
        observation, reward, _, _, _ = env.step(actions)
        for key, value in zip(
            steps, (frames, previous, block, direction, reward.astype(np.float32), active, goal), strict=True
        ):
            steps[key].append(value)
    stacked = {k: torch.from_numpy(np.stack(v)) for k, v in steps.items() if k != "goal" or wants_goal}
    return _rollout(
        stacked, tokens, lengths, torch.from_numpy(env.error.astype(np.float32)),
        oracle_block=None if oracle is None else torch.from_numpy(oracle_block),
        oracle_directions=None if oracle is None else torch.from_numpy(np.stack(oracle_directions)),
    )  # fmt: skip


def _rollout(
    stacked: dict[str, torch.Tensor], tokens: torch.Tensor, lengths: torch.Tensor, final_error: torch.Tensor,
    **oracle: torch.Tensor | None,
) -> Rollout:  # fmt: skip
    """The :class:`Rollout` of the per-step tensors a collector stacked (``goal`` only with a goal head)."""
    return Rollout(
        frames=stacked["frames"], previous_action=stacked["previous"], block=stacked["block"],
        direction=stacked["direction"], reward=stacked["reward"], active=stacked["active"], tokens=tokens,
        lengths=lengths, final_error=final_error, goal=stacked.get("goal"), **oracle,
    )  # fmt: skip


@torch.no_grad()
def collect_device_rollout(
    policy: PolicyNetwork,
    env: TensorBlocksEnv,
    tasks: Sequence[Task],
    tokens: torch.Tensor,
    lengths: torch.Tensor,
    generator: torch.Generator,
    history: int = 5,
) -> Rollout:
    """:func:`collect_rollout` with the world on the policy's device (``data.simulator=torch``): boards, pictures,
    the frame history and the sampling never leave it, and the rollout's tensors stay there for the update."""
    device = env.device
    observation, _ = env.reset(tasks)
    n = len(tasks)
    image_shape = observation["image"].shape[1:]
    window = torch.zeros((n, history * image_shape[0], *image_shape[1:]), dtype=torch.uint8, device=device)
    text = policy.encode_instruction(tokens.to(device), lengths.to(device))
    steps: dict[str, list[torch.Tensor]] = {
        k: [] for k in ("frames", "previous", "block", "direction", "reward", "active", "goal")
    }
    board = torch.arange(n, device=device)
    moved = torch.tensor([moved_block(task) for task in tasks], device=device)
    wants_goal = policy.has_goal_head
    kept_block = None
    while not env.all_done:
        frames = observation["image"]
        window = torch.cat([window[:, image_shape[0] :], frames], dim=1)  # the last `history` frames
        active = ~env.done
        rows = active.nonzero().squeeze(1)
        all_active = len(rows) == n
        previous = observation["previous_action"]
        distribution = policy(
            window if all_active else window[rows], text if all_active else text[rows], previous[rows]
        )
        _, block_rows, direction_rows = distribution.sample(generator)
        block = torch.zeros(n, dtype=torch.long, device=device).index_put_((rows,), block_rows)
        direction = torch.full((n,), 4, dtype=torch.long, device=device).index_put_((rows,), direction_rows)
        if getattr(policy, "block_per_episode", False):
            kept_block = block if kept_block is None else kept_block
            block = kept_block
        if wants_goal:
            steps["goal"].append(goal_targets(env.goals[board, moved], env.positions[board, moved]))
        observation, reward, _, _, _ = env.step(to_action(block, direction))
        for key, value in zip(
            ("frames", "previous", "block", "direction", "reward", "active"),
            (frames, previous, block, direction, reward.float(), active),
            strict=True,
        ):
            steps[key].append(value)
    stacked = {k: torch.stack(v) for k, v in steps.items() if v}
    return _rollout(stacked, tokens.to(device), lengths.to(device), env.error.float())
