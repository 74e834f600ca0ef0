"""The demo page's seconds per episode through its HTTP server (``python -m blocks.bench demo``)."""

from __future__ import annotations

import json
import time

import numpy as np


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
