"""Speed figures, printed (never asserted): ``python -m blocks.bench env``.

The last line of each benchmark is one JSON object, so scripts can read the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import numpy as np


def _rate(work: Callable[[], int], min_seconds: float = 2.0) -> float:
    """Units of work per second: ``work()`` returns how many units it did; repeated for ``min_seconds``."""
    work()  # warm-up
    done, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < min_seconds:
        done += work()
    return done / elapsed


def _random_tasks(n: int, seed: int = 0):
    """Boards of 20 blocks on a grid (no overlaps), each with one block moved: no corpus needed."""
    from blocks.world.task import Task

    rng = np.random.default_rng(seed)
    cells = np.stack(np.meshgrid(np.linspace(-0.9, 0.9, 8), np.linspace(-0.9, 0.9, 8)), -1).reshape(-1, 2)
    tasks = []
    for _ in range(n):
        start = cells[rng.choice(len(cells), 20, replace=False)] + rng.uniform(-0.02, 0.02, (20, 2))
        goal = start.copy()
        goal[rng.integers(20)] = rng.uniform(-0.9, 0.9, 2)
        tasks.append(Task(start, goal, "logo" if rng.random() < 0.5 else "digit"))
    return tasks


def bench_env(batch: int = 4096, render_batch: int = 32, seconds: float = 2.0) -> dict[str, float]:
    from blocks.render.history import FrameHistory
    from blocks.render.release import ReleaseRenderer
    from blocks.render.renderer import Renderer
    from blocks.world.geometry import STOP
    from blocks.world.vector_env import VectorBlocksEnv

    rng = np.random.default_rng(0)
    tasks = _random_tasks(64)
    batch_tasks = [tasks[i % len(tasks)] for i in range(batch)]
    env = VectorBlocksEnv()  # shaped reward: problem + F1 + F2

    def transitions() -> int:
        env.reset(batch_tasks)
        for _ in range(env.horizon):
            env.step(rng.integers(STOP, size=batch))  # moves only: every board stays active for 40 steps
        return batch * env.horizon

    transitions_per_s = _rate(transitions, seconds)

    logos = not _no_textures()
    renderers = {"flat": Renderer(logos=logos), "release": ReleaseRenderer(logos=logos)}
    renderer = renderers["flat"]
    history = FrameHistory(render_batch)
    small = VectorBlocksEnv()
    small.reset(tasks[:render_batch])
    frames = np.empty((render_batch, 3, renderer.size, renderer.size), np.uint8)
    moves = np.random.default_rng(2)

    def rendered_inputs(picture: str = "flat", step: bool = False) -> int:
        if step:  # an episode's next boards: one block moved on each, so some patches are new to the cache
            small.step(moves.integers(STOP, size=render_batch))
            if small.done.all():
                small.reset(tasks[:render_batch])
        renderers[picture].render(small.positions, small.present, small.logo, out=frames)
        history.push(frames)
        history.stack()  # the model reads this view directly
        return render_batch

    def rendered_inputs_materialised() -> int:
        renderer.render(small.positions, small.present, small.logo, out=frames)
        history.push(frames)
        np.ascontiguousarray(history.stack())
        return render_batch

    source = np.random.default_rng(1).integers(0, 255, history.stack().shape, np.uint8)
    target = np.empty_like(source)

    def copy_bound() -> int:
        np.copyto(target, source)
        return render_batch

    figures = bench_tensor_env(tasks, batch, render_batch, seconds)
    figures |= {
        "transitions_per_s": transitions_per_s,
        "rendered_inputs_per_s": _rate(rendered_inputs, seconds),
        "release_rendered_inputs_per_s": _rate(lambda: rendered_inputs("release"), seconds),
        "moving_rendered_inputs_per_s": _rate(lambda: rendered_inputs("flat", step=True), seconds),
        "release_moving_rendered_inputs_per_s": _rate(lambda: rendered_inputs("release", step=True), seconds),
        "rendered_materialised_inputs_per_s": _rate(rendered_inputs_materialised, seconds),
        "copy_bound_inputs_per_s": _rate(copy_bound, seconds),
    }
    print(f"batched transitions (batch {batch}, shaped reward, no rendering): {transitions_per_s:,.0f} /s")
    print(
        f"rendered agent inputs (batch {render_batch}, 15x{renderer.size}x{renderer.size} uint8 history stack): "
        f"{figures['rendered_inputs_per_s']:,.0f} /s "
        f"({figures['rendered_materialised_inputs_per_s']:,.0f} /s when the stack is copied out)"
    )
    flat, release = figures["moving_rendered_inputs_per_s"], figures["release_moving_rendered_inputs_per_s"]
    print(
        f"the release's picture (data.render=release): {figures['release_rendered_inputs_per_s']:,.0f} /s on the "
        f"same boards; boards that move a block each call: {release:,.0f} /s against flat {flat:,.0f} /s "
        f"({release / flat:.0%})"
    )
    print(f"plain numpy copy of the same bytes: {figures['copy_bound_inputs_per_s']:,.0f} inputs/s")
    return figures


def bench_tensor_env(tasks: list, batch: int, render_batch: int, seconds: float) -> dict[str, float]:
    """The torch world (``data.simulator=torch``) on the GPU when there is one: transitions and pictures."""
    import torch

    from blocks.render.renderer import Renderer
    from blocks.tensor_world import TensorBlocksEnv, TensorRenderer
    from blocks.world.geometry import STOP

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    renderer = TensorRenderer(Renderer(logos=False) if _no_textures() else Renderer(), device)
    env = TensorBlocksEnv(device=device)
    batch_tasks = [tasks[i % len(tasks)] for i in range(batch)]
    generator = torch.Generator(device).manual_seed(0)

    def transitions() -> int:
        env.reset(batch_tasks)
        for _ in range(env.horizon):
            env.step(torch.randint(STOP, (batch,), device=device, generator=generator))
        sync()
        return batch * env.horizon

    env.reset(batch_tasks)
    positions, present, logo = env.positions, env.present, env.logo

    def pictures() -> int:
        renderer.render(positions, present, logo)
        sync()
        return batch

    figures = {
        "tensor_transitions_per_s": _rate(transitions, seconds),
        "tensor_pictures_per_s": _rate(pictures, seconds),
    }
    print(
        f"torch world on {device}: {figures['tensor_transitions_per_s']:,.0f} transitions/s (batch {batch}, shaped "
        f"reward), {figures['tensor_pictures_per_s']:,.0f} pictures/s (batch {batch})"
    )
    return figures


def _no_textures() -> bool:
    from blocks.corpus.download import CorpusError, ensure_file

    try:
        ensure_file("textures/sri.png")
    except CorpusError:
        print("(logo textures unavailable: rendering plain faces)")
        return True
    return False


def network_floor(
    batch: int, device: str, seconds: float = 2.0, instructions: list[list[int]] | None = None
) -> dict[str, float]:
    """The paper's network alone on ``batch`` random 15 x 120 x 120 stacks on ``device``: forward frames/s (no
    gradient, as in a rollout) and forward + backward + Adam frames/s (an update). What a training step could
    reach if the data, the world and the trainer cost nothing: the yardstick the training figures are read
    against, measured in the same run on the same device and threads.

    ``instructions``: token ids to draw each batch's instructions from, padded to the batch's longest as the
    learners do (the LSTM's cost follows the longest instruction: the corpus's batches of 32 pad to about 40
    words); without them, 10-word instructions.
    """
    import torch

    from blocks.model.policy import PolicyNetwork, pad_token_ids

    torch.manual_seed(0)
    vocab_size = 1 + max((max(x, default=0) for x in instructions), default=1099) if instructions else 1100
    network = PolicyNetwork(vocab_size=vocab_size).to(device)
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-4)
    images = torch.randint(0, 256, (batch, 15, 120, 120), dtype=torch.uint8, device=device)
    if instructions:  # 16 batches drawn once, taken in turn: the padded length varies from batch to batch
        rng = np.random.default_rng(0)
        texts = [
            pad_token_ids([instructions[i] for i in rng.choice(len(instructions), batch)]) for _ in range(16)
        ]
    else:
        texts = [(torch.randint(2, 1100, (batch, 10)), torch.full((batch,), 10))]
    texts = [(tokens.to(device), lengths.to(device)) for tokens, lengths in texts]
    turn = [0]

    def text() -> tuple[torch.Tensor, torch.Tensor]:
        turn[0] += 1
        return texts[turn[0] % len(texts)]

    previous = torch.randint(-1, 81, (batch,), device=device)
    block = torch.randint(0, 20, (batch,), device=device)
    direction = torch.randint(0, 5, (batch,), device=device)

    def synchronise() -> None:
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize(device)

    def forward() -> int:
        with torch.no_grad():
            network(images, network.encode_instruction(*text()), previous)
        synchronise()
        return batch

    def update() -> int:
        distribution = network(images, network.encode_instruction(*text()), previous)
        loss = -distribution.log_prob_parts(block, direction).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        synchronise()
        return batch

    forward_rate, update_rate = _rate(forward, seconds), _rate(update, seconds)
    return {
        "floor_forward_frames_per_s": forward_rate,
        "floor_update_frames_per_s": update_rate,
        # A bandit frame is one forward in its rollout and one forward + backward + Adam in its update.
        "floor_bandit_frames_per_s": 1 / (1 / forward_rate + 1 / update_rate),
    }


def bench_train(
    batch: int = 32,
    seconds: float = 2.0,
    warmup: int = 3,
    episodes_per_update: int | None = None,
    skip_supervised: bool = False,
    simulator: str = "numpy",
    accelerator: str = "auto",
    chunks_per_update: int | None = None,
    spo: bool = False,
) -> dict[str, float | str]:
    """Frames per second of whole training steps, through Lightning's Trainer, for both learners.

    Supervised: rendering the 5-frame contexts of demonstration pairs, forward, backward, Adam. Bandit: rolling
    out ``batch`` episodes with the sampling policy (rendering, history, batched forward; on the model's device
    with ``simulator="torch"``), then the update on every frame of the rollout. With ``spo``, also SPO
    (``model=spo``) at ``batch`` examples per batch: rollout, then its 4 PPO passes (frames counted once; the
    schedule off, so that every example is rolled out). Uses the real corpus's training examples.
    """
    import pytorch_lightning as pl
    import torch

    from blocks.data.demonstrations import DemonstrationDataModule
    from blocks.data.rollouts import RolloutDataModule
    from blocks.learn.bandit import BanditLearner
    from blocks.learn.supervised import SupervisedLearner

    class Clock(pl.Callback):
        """Counts frames and time after ``warmup`` steps; stops the run after ``seconds``."""

        def __init__(self, count_frames):
            self.count_frames, self.frames, self.start, self.steps = count_frames, 0, None, 0

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self.steps += 1
            if self.steps == warmup:
                self.start = time.perf_counter()
            elif self.start is not None:
                self.frames += self.count_frames(batch)
                if time.perf_counter() - self.start >= seconds and getattr(batch, "last", True):
                    self.elapsed = time.perf_counter() - self.start
                    trainer.should_stop = True

    def run(module, datamodule, count_frames) -> float:
        clock = Clock(count_frames)
        trainer = pl.Trainer(
            accelerator=accelerator, devices=1, max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
            enable_model_summary=False, limit_val_batches=0, callbacks=[clock],
            gradient_clip_val=5.0 if module.automatic_optimization else None,
        )  # fmt: skip
        trainer.fit(module, datamodule)
        devices.append(trainer.strategy.root_device)
        return clock.frames / clock.elapsed

    torch.manual_seed(0)
    devices: list[torch.device] = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {batch}, 120x120")
    figures: dict[str, float | str] = {}
    if not skip_supervised:
        supervised_data = DemonstrationDataModule(batch_size=batch, seed=0)
        supervised_rate = run(
            SupervisedLearner(supervised_data.vocabulary.to_list()),
            supervised_data,
            lambda b: len(b["block"]),
        )
        print(f"supervised: {supervised_rate:,.0f} frames/s (batches of {batch} demonstration steps)")
        figures["supervised_frames_per_s"] = supervised_rate

    bandit_data = RolloutDataModule(
        batch_size=batch,
        episodes_per_update=episodes_per_update,
        seed=0,
        simulator=simulator,
        chunks_per_update=chunks_per_update,
    )
    bandit = BanditLearner(bandit_data.vocabulary.to_list())
    with (
        torch.no_grad()
    ):  # a policy that stops about as rarely as a trained one (28.7 steps on dev in the paper)
        bandit.policy.direction_head.bias[4] = -3.0
    lengths = []

    def bandit_frames(piece) -> int:
        chunk = piece.chunk
        if chunk.last:
            lengths.append(float(chunk.rollout.active.sum(0).float().mean()))
        return len(chunk.steps)

    if devices and devices[0].type == "cuda":
        torch.cuda.reset_peak_memory_stats(devices[0])
    bandit_rate = run(bandit, bandit_data, bandit_frames)
    device = devices[-1]
    print(
        f"bandit: {bandit_rate:,.0f} frames/s on {device} with the {simulator} simulator (rollout + update of "
        f"{batch} episodes, {np.mean(lengths):.1f} steps per episode, {batch // bandit_data.episodes_per_update} updates of "
        f"{bandit_data.chunks_per_update} chunks each)"
    )
    figures |= {"bandit_frames_per_s": bandit_rate}
    # The yardstick reads the corpus's own instructions, padded per batch as the learners pad them.
    floor = network_floor(batch, str(device), seconds, bandit_data.token_ids(bandit_data.train_examples))
    figures |= floor | {"device": str(device)}
    print(f"the network alone on {device}: forward {floor['floor_forward_frames_per_s']:,.0f} frames/s, forward + "
          f"backward + Adam {floor['floor_update_frames_per_s']:,.0f}, so a bandit frame (both) at most "
          f"{floor['floor_bandit_frames_per_s']:,.0f}")  # fmt: skip
    if "supervised_frames_per_s" in figures:
        figures["supervised_share_of_floor"] = (
            figures["supervised_frames_per_s"] / floor["floor_update_frames_per_s"]
        )
        print(
            f"supervised at {figures['supervised_share_of_floor']:.0%} of its floor (forward + backward + Adam)"
        )
    figures["bandit_share_of_floor"] = bandit_rate / floor["floor_bandit_frames_per_s"]
    print(
        f"bandit at {figures['bandit_share_of_floor']:.0%} of its floor (one forward and one update a frame)"
    )
    if device.type == "cuda":
        figures["bandit_peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        print(f"peak GPU memory during the bandit: {figures['bandit_peak_gpu_memory_gib']:.2f} GiB")
    if spo:
        from blocks.data.episodes import EpisodeDataModule
        from blocks.learn.spo import SPOLearner

        spo_data = EpisodeDataModule(batch_size=batch, simulator=simulator, seed=0)
        learner = SPOLearner(spo_data.vocabulary.to_list(), {"architecture": "spo"}, schedule=False)
        counted = [0]

        def spo_frames(_) -> int:
            new, counted[0] = learner.frames_seen - counted[0], learner.frames_seen
            return new

        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        spo_rate = run(learner, spo_data, spo_frames)
        print(f"spo: {spo_rate:,.0f} frames/s on {devices[-1]} with the {simulator} simulator ({batch} examples "
              f"a batch, rollout + 4 PPO passes)")  # fmt: skip
        figures["spo_frames_per_s"] = spo_rate
        if device.type == "cuda":
            figures["spo_peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return figures


def bench_demo(seconds: float = 2.0, boards: int = 10) -> dict[str, float]:
    """The demo page's answer to Run, through its HTTP server on this machine, per agent on the first ``boards``
    dev boards: the median and worst seconds per episode, beside the floor, the same episodes run bare
    (``run_episode``: the agent and the world, no drawing, no PNG, no HTTP). Loading an agent is the first
    request's cost and is printed apart. ``seconds`` is unused: each figure is ``boards`` requests."""
    import urllib.request

    from blocks.agents.baselines import episode_seeds
    from blocks.corpus.download import default_data_root
    from blocks.demo.app import DemoApp
    from blocks.demo.server import DemoServer
    from blocks.episode import run_episode

    app = DemoApp(default_data_root(), "checkpoints")
    server = DemoServer(app, "127.0.0.1", 0)
    server.start_in_thread()
    figures: dict[str, float] = {}
    try:
        for listed in app.agents():
            name = listed["name"]
            if not listed["available"]:
                print(f"{name}: not measured ({listed['missing']})")
                continue

            def request(index: int, name: str = name) -> float:
                body = json.dumps({"index": index, "agent": name}).encode()
                start = time.perf_counter()
                with urllib.request.urlopen(
                    urllib.request.Request(server.url + "/api/run", data=body)
                ) as answer:
                    answer.read()
                return time.perf_counter() - start

            load = request(0)
            answers = np.array([request(i) for i in range(boards)])
            agent = app.agent(name)
            renderer = app.renderer(getattr(agent, "render", "flat"), getattr(agent, "image_size", 120))
            bare = []
            for i in range(boards):
                example = app.examples[i]
                start = time.perf_counter()
                run_episode(agent, example.task, example.instruction, renderer, seed=episode_seeds(0, 1, i))
                bare.append(time.perf_counter() - start)
            figures |= {f"{name}_first_s": load, f"{name}_median_s": float(np.median(answers)),
                        f"{name}_max_s": float(answers.max()), f"{name}_bare_median_s": float(np.median(bare))}  # fmt: skip
            print(f"{name}: first request {load:.2f} s (loads the agent); then median {np.median(answers):.3f} s, "
                  f"worst {answers.max():.3f} s per episode; bare episode {np.median(bare):.3f} s")  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    return figures


BENCHMARKS = {"env": bench_env, "train": bench_train, "demo": bench_demo}


def main(argv: list[str] | None = None) -> dict[str, float | str]:
    parser = argparse.ArgumentParser(prog="python -m blocks.bench", description=__doc__)
    parser.add_argument("which", choices=sorted(BENCHMARKS))
    parser.add_argument("--seconds", type=float, default=2.0, help="time spent on each figure")
    parser.add_argument(
        "--episodes-per-update",
        type=int,
        default=None,
        help="train: bandit episodes per Adam step (default: the whole rollout; the bandit refuses fewer)",
    )
    parser.add_argument("--skip-supervised", action="store_true", help="train: measure the bandit only")
    parser.add_argument("--batch", type=int, default=32, help="train: episodes per rollout, steps per batch")
    parser.add_argument("--simulator", choices=("numpy", "torch"), default="numpy",
                        help="train: where the bandit's rollouts run (torch: on the model's device)")  # fmt: skip
    parser.add_argument(
        "--accelerator", default="auto", help="train: Lightning's accelerator (cpu, gpu, auto)"
    )
    parser.add_argument("--spo", action="store_true", help="train: also SPO, --batch examples a batch")
    parser.add_argument("--chunks-per-update", type=int, default=None,
                        help="train: backward passes per update (1: the whole update at once, for GPUs)")  # fmt: skip
    args = parser.parse_args(argv)
    options = {}
    if args.which == "train":
        options = {
            "episodes_per_update": args.episodes_per_update, "skip_supervised": args.skip_supervised,
            "batch": args.batch, "simulator": args.simulator, "accelerator": args.accelerator,
            "chunks_per_update": args.chunks_per_update, "spo": args.spo,
        }  # fmt: skip
    from blocks.errors import UsageError

    try:
        figures = BENCHMARKS[args.which](seconds=args.seconds, **options)
    except UsageError as error:  # no corpus, a bad value: one line, as the other commands
        print(f"error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    import torch

    setting = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    print(json.dumps(setting | {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}))
    return figures


if __name__ == "__main__":
    main()
