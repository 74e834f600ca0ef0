"""blocks.report: the tools for finished runs (paired comparison, curves, sweep tables, seeds, keep, export)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blocks.errors import ConfigError, UsageError

from ..conftest import REPO

slow = pytest.mark.slow


SHIPPED = REPO / "checkpoints"


@slow
def test_exported_checkpoint_is_small_and_acts_the_same(checkpoint, corpus_root, tmp_path):
    from blocks.agents.policy import PolicyAgent
    from blocks.corpus import load_split
    from blocks.evaluate import run_episodes
    from blocks.render import Renderer
    from blocks.report.export import export

    slim = export(checkpoint, tmp_path / "slim.ckpt")
    assert slim.stat().st_size < checkpoint.stat().st_size / 2
    examples = load_split("dev", corpus_root)[:8]
    render = Renderer(corpus_root).render
    full = run_episodes(
        PolicyAgent.from_checkpoint(str(checkpoint)), examples, render_frames=render, progress=False
    )
    small = run_episodes(
        PolicyAgent.from_checkpoint(str(slim)), examples, render_frames=render, progress=False
    )
    assert full == small


def test_paired_comparison_finds_a_known_difference_and_resamples_board_sequences():
    import blocks.report.compare as compare

    rng = np.random.default_rng(0)
    a = {f"u{i}": (i // 20, float(e)) for i, e in enumerate(rng.uniform(0, 8, 400))}  # 20 board sequences
    b = {u: (episode, error - 0.5 + rng.normal(0, 0.3)) for u, (episode, error) in a.items()}
    r = compare.paired_difference(a, b, samples=2000)
    assert r["n"] == 400 and r["episodes"] == 20
    assert r["low"] < r["difference"] < r["high"] < 0 and r["difference"] == pytest.approx(-0.5, abs=0.1)
    assert compare.paired_difference(a, a, samples=200)["difference"] == 0.0
    with pytest.raises(UsageError, match="same examples"):
        compare.paired_difference(a, {"u0": a["u0"]})


def test_the_comparison_names_a_missing_or_wrong_file_in_one_line(tmp_path, monkeypatch, capsys):
    """A newcomer's slips: a path that is not there, or the metrics.json beside the episodes.csv."""
    import blocks.report.compare as compare

    episodes = tmp_path / "episodes.csv"
    episodes.write_text("uid,episode,error\nu0,0,1.5\nu1,1,2.0\n")
    (tmp_path / "metrics.json").write_text('{"mean_error": 1.75}\n')
    for wrong, message in [("nowhere.csv", "no such file"), ("metrics.json", "not an episodes.csv")]:
        monkeypatch.setattr(sys, "argv", ["compare_episodes.py", str(tmp_path / wrong), str(episodes)])
        with pytest.raises(SystemExit) as exit_:
            compare.main()
        assert exit_.value.code == 2
        assert capsys.readouterr().err == (
            f"error: {tmp_path / wrong}: {message}"
            f"{', no uid, episode and error columns' if wrong == 'metrics.json' else ''}"
            " (eval.py writes one beside metrics.json)\n"
        )


def test_the_protocols_script_path_runs_the_reports_comparison(tmp_path):
    """``scripts/compare_episodes.py``, the path the protocol names, prints what ``blocks.report.compare`` does."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("uid,episode,error\n" + "".join(f"u{i},{i // 2},{i % 3}.0\n" for i in range(8)))
    b.write_text("uid,episode,error\n" + "".join(f"u{i},{i // 2},{i % 2}.5\n" for i in range(8)))
    printed = [
        subprocess.run(
            [sys.executable, *how, str(a), str(b)], cwd=REPO, capture_output=True, text=True, check=True
        )
        for how in (["scripts/compare_episodes.py"], ["-m", "blocks.report.compare"])
    ]
    assert printed[0].stdout == printed[1].stdout and "8 examples on 4 board sequences" in printed[0].stdout


def test_learning_curves_join_a_resumed_runs_logs_and_count_frames(tmp_path, monkeypatch):
    """A run resumed in its folder and then into a new folder: the curves read all CSV versions in order (folders
    joined by colons), the steps logged again after a resume replacing the interrupted ones, and place
    validations at their frames, the training error beside them."""
    import blocks.report.curves as plot

    run, resumed = tmp_path / "run", tmp_path / "resumed"
    header = "epoch,step,train/entropy,train/frames,train/rollout_error,val/horizon_rate,val/mean_error\n"
    for folder, rows in [
        (run / "csv" / "version_0", ["0,10,1.5,100.0,6.0,,", "0,20,1.4,200.0,5.0,,", "0,20,,,,1.0,5.5"]),
        (run / "csv" / "version_1", ["1,30,1.2,300.0,4.0,,", "1,40,1.1,400.0,3.0,,", "1,40,,,,0.9,4.5"]),
        (
            run / "csv" / "version_2",
            ["2,55,1.0,550.0,9.0,,", "2,60,0.9,600.0,9.0,,"],
        ),  # interrupted: resumed from its checkpoint at step 40, whose validation stays
        (
            resumed / "csv" / "version_0",
            ["1,40,,,,,", "2,50,1.0,500.0,2.0,,", "2,60,0.9,600.0,1.0,,", "2,60,,,,0.5,3.5"],
        ),
    ]:
        folder.mkdir(parents=True)
        (folder / "metrics.csv").write_text(header + "\n".join(rows) + "\n")
    from blocks.report.curves import frames_at, read_run, running_mean

    columns = read_run(f"{run}:{resumed}")
    validated = np.flatnonzero(~np.isnan(columns["val/mean_error"]))
    assert columns["val/mean_error"][validated].tolist() == [5.5, 4.5, 3.5]
    assert frames_at(columns, validated).tolist() == [200.0, 400.0, 600.0]
    rows, values = running_mean(columns, "train/rollout_error", 2)
    assert values.tolist() == [5.5, 4.5, 3.5, 2.5, 1.5] and frames_at(columns, rows).tolist()[-1] == 600.0
    out = tmp_path / "curves.png"
    monkeypatch.setattr(sys, "argv", ["plot_curves.py", f"{run}:{resumed}", str(run), "--out", str(out)])
    plot.main()
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_curves_legend_sits_under_the_axis_labels_and_inside_the_figure(tmp_path):
    """Six runs with long names (a sweep's folders): the legend takes rows, not width, and the figure grows."""
    from blocks.report.curves import curves_figure

    header = "epoch,step,train/entropy,train/frames,train/rollout_error,val/horizon_rate,val/mean_error\n"
    runs = []
    for i in range(6):
        run = tmp_path / f"ablation=a_long_ablation_name_{i},seed=42"
        (run / "csv" / "version_0").mkdir(parents=True)
        rows = ["0,10,1.5,100.0,6.0,,", "0,20,1.4,200.0,5.0,,", f"0,20,,,,1.0,{5 + i}"]
        (run / "csv" / "version_0" / "metrics.csv").write_text(header + "\n".join(rows) + "\n")
        runs.append(run)
    figure = curves_figure(runs, [r.name for r in runs], title="sweep")
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    legend = figure.legends[0].get_window_extent(renderer)
    page = figure.bbox
    assert page.x0 <= legend.x0 and legend.x1 <= page.x1 and legend.y0 >= page.y0
    for axis in figure.axes:
        assert legend.y1 <= axis.xaxis.label.get_window_extent(renderer).y0  # no label hidden by the legend
    assert (
        len(figure.legends[0].get_texts()) == 12
    )  # each run's tuning line and its training-instruction line


def test_the_curves_say_what_a_run_has_not_logged_yet(tmp_path, monkeypatch, capsys):
    """A supervised run before its first validation has nothing to draw: one line says so, no empty figure.
    After it, the panels it does not log (entropy) say so, and the legend still names the run."""
    import blocks.report.curves as plot
    from blocks.report.curves import curves_figure

    run = tmp_path / "supervised"
    (run / "csv" / "version_0").mkdir(parents=True)
    metrics = run / "csv" / "version_0" / "metrics.csv"
    metrics.write_text("epoch,step,train/loss\n0,19,4.5\n0,39,4.4\n")
    monkeypatch.setattr(sys, "argv", ["plot_curves.py", str(run), "--out", str(tmp_path / "c.png")])
    with pytest.raises(SystemExit) as exit_:
        plot.main()
    assert exit_.value.code == 2 and "nothing to plot yet" in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()
    metrics.write_text("epoch,step,train/loss,val/horizon_rate,val/mean_error\n0,19,4.5,,\n0,39,,0.6,5.9\n")
    figure = curves_figure([run])
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["supervised"]
    assert [t.get_text() for t in figure.axes[2].texts] == ["no train/entropy logged"]
    assert not figure.axes[0].texts


def test_sweep_summary_pairs_each_run_with_the_reference(tmp_path):
    """The sweep table: the swept value, the paper's figure, the paired difference from the reference run of the
    same seed, and the best of several seeds picked on the tuning split; the plot puts a value's seeds together."""
    from blocks.report.sweep import against_paper_figure, paper_figure, summarize_sweep

    figures = {"mean_error": 0.0, "median_error": 0.0, "mean_min_distance": 0.0, "median_min_distance": 0.0,
               "mean_steps": 10.0, "horizon_rate": 0.0}  # fmt: skip
    jobs = (("none", 1, [1.0, 2.0, 3.0, 4.0], [5.0, 4.0]), ("none", 2, [2.0, 3.0, 4.0, 5.0], [3.0, 3.5]),
            ("no_f1", 1, [2.0, 3.0, 4.0, 5.0], [6.0, 6.5]))  # fmt: skip
    for value, seed, errors, tune in jobs:
        job = tmp_path / f"ablation={value},seed={seed}"
        (job / ".hydra").mkdir(parents=True)
        (job / ".hydra" / "overrides.yaml").write_text(f"- ablation={value}\n- seed={seed}\n")
        (job / "final_eval.json").write_text(json.dumps({**figures, "mean_error": float(np.mean(errors))}))
        rows = [f"dev/{i},{i // 2},{e},{e},10,False,False,0" for i, e in enumerate(errors)]
        header = "uid,episode,error,min_distance,steps,hit_horizon,reached_goal,failed_moves"
        (job / "episodes.csv").write_text("\n".join([header, *rows]) + "\n")
        (job / "csv" / "version_0").mkdir(parents=True)
        logged = [f"{100 * (i + 1)},{t},{1000 * (i + 1)}" for i, t in enumerate(tune)]
        metrics = "\n".join(["step,val/mean_error,train/frames", *logged])
        (job / "csv" / "version_0" / "metrics.csv").write_text(metrics)
    rows = summarize_sweep(tmp_path, "ablation", "none")
    by_job = {(r["value"], r["seed"]): r for r in rows}
    no_f1 = by_job["no_f1", "1"]
    assert no_f1["difference"] == pytest.approx(1.0) and no_f1["paper_mean_error"] == 4.33
    assert by_job["none", "1"].get("difference") is None and by_job["none", "2"].get("difference") is None
    assert by_job["none", "2"]["tune_error"] == 3.0 and by_job["none", "1"]["frames"] == 2000
    summary = (tmp_path / "summary.md").read_text()
    assert "| no_f1 | 1 | 6.00 | 3.50 |" in summary
    assert "none: best of 2 seeds on the tuning split: seed 2 (tune 3.00), dev 3.50" in summary
    assert "mean over the seeds 3.00" in summary and "no_f1: best of" not in summary
    ours = against_paper_figure(rows, "ablation").axes[0].lines[0]
    assert list(ours.get_xdata()) == [0.0, 1.0] and list(ours.get_ydata()) == pytest.approx([3.5, 3.0])
    assert (
        paper_figure("data.demonstration_fraction", "0.50") == 3.69 and paper_figure("ablation", "x") is None
    )


def test_sweep_summary_pairs_with_a_reference_kept_outside_the_sweep(tmp_path, capsys):
    """Figure 4's 100 % in a later world is the approach's run, kept in another folder: ``--also`` lists it with
    its value read from its composed config and pairs the sweep's runs of its seed against it."""
    from blocks.report.sweep import main

    figures = {"mean_error": 0.0, "median_error": 0.0}
    header = "uid,episode,error,min_distance,steps,hit_horizon,reached_goal,failed_moves"
    for folder, errors in (
        (tmp_path / "sweep" / "fraction=0.5,seed=42", [3.0, 4.0]),
        (tmp_path / "kept", [1.0, 2.0]),
    ):
        _finished_run(folder, 42, [5.0], {**figures, "mean_error": float(np.mean(errors))})
        rows = [f"dev/{i},{i},{e},{e},10,False,False,0" for i, e in enumerate(errors)]
        (folder / "episodes.csv").write_text("\n".join([header, *rows]) + "\n")
    (tmp_path / "sweep" / "fraction=0.5,seed=42" / ".hydra" / "overrides.yaml").write_text(
        "- data.demonstration_fraction=0.5\n- seed=42\n"
    )
    (tmp_path / "kept" / ".hydra" / "config.yaml").write_text(
        "seed: 42\ndata:\n  demonstration_fraction: 1.0\n"
    )
    argv = [str(tmp_path / "sweep"), "--key", "data.demonstration_fraction", "--reference", "1.0"]
    main([*argv, "--also", str(tmp_path / "kept")])
    summary = capsys.readouterr().out
    assert "| 0.5 | 42 | 5.00 | 3.50 |" in summary and "+2.00 (+2.00 to +2.00)" in summary
    assert (
        "| 1.0 | 42 |" in summary
        and str(tmp_path / "kept") in (tmp_path / "sweep" / "summary.csv").read_text()
    )
    with pytest.raises(SystemExit):
        main([*argv, "--also", str(tmp_path / "missing")])
    assert "not a finished run" in capsys.readouterr().err


def _finished_run(folder: Path, seed: int, tune: list[float], figures: dict, checkpoint: str | None = None,
                  split: str = "dev", limit: int | None = None) -> Path:  # fmt: skip
    """A run folder as train.py leaves it: final_eval.json, the overrides, the CSV log."""
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text(f"- seed={seed}\n")
    record = {"mean_steps": 40.0, "horizon_rate": 1.0, "mean_min_distance": 0.0, "median_min_distance": 0.0,
              **figures, "split": split, "limit": limit, "checkpoint": checkpoint}  # fmt: skip
    (folder / "final_eval.json").write_text(json.dumps(record))
    (folder / "csv" / "version_0").mkdir(parents=True)
    logged = [f"{100 * (i + 1)},{t},{1000 * (i + 1)}" for i, t in enumerate(tune)]
    (folder / "csv" / "version_0" / "metrics.csv").write_text(
        "\n".join(["step,val/mean_error,train/frames", *logged])
    )
    return folder


def test_seeds_report_picks_the_best_run_on_tune_and_refuses_mixed_splits(tmp_path):
    """The paper's best of three, picked on the tuning split (not on dev, where run a is better)."""
    from blocks.report.seeds import report

    a = _finished_run(tmp_path / "a", 1, [5.0, 4.5], {"mean_error": 4.0, "median_error": 3.5})
    b = _finished_run(tmp_path / "b", 2, [4.8, 4.2], {"mean_error": 4.4, "median_error": 4.1})
    text = report([a, b], tmp_path / "out")
    assert (
        f"best of 2 on the tuning split: {b} (tune 4.20), dev 4.40 / 4.10; dev mean over the runs 4.20."
        in text
    )
    assert (tmp_path / "out" / "seeds.md").read_text() == text and "| 4.50 | 4.00 | 3.50 |" in text
    limited = _finished_run(tmp_path / "c", 3, [4.0], {"mean_error": 1.0, "median_error": 1.0}, limit=8)
    with pytest.raises(ConfigError, match="different splits or limits"):
        report([a, limited])
    with pytest.raises(ConfigError, match="give --out"):
        report([a, b], ensemble=True)
    with pytest.raises(ConfigError, match="no final_eval.json"):
        report([a, tmp_path / "missing"])


def test_a_kept_record_reads_as_its_run_and_points_at_the_exported_checkpoint(tmp_path):
    """``keep``: the sweep table and the seeds report read the kept record as they read the run; with
    ``--checkpoint`` the record names the exported network, which acts as the selected one."""
    import torch

    from blocks.report.keep import keep
    from blocks.report.sweep import run_row

    run = _finished_run(tmp_path / "run", 7, [5.0, 4.5], {"mean_error": 4.0, "median_error": 3.5},
                        str(SHIPPED / "paper" / "approach.ckpt"))  # fmt: skip
    (run / "episodes.csv").write_text("uid,episode,error\ndev/0,0,4.0\n")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "last.ckpt").write_bytes(b"optimizer state")
    kept = keep(run, tmp_path / "kept" / "seed=7", tmp_path / "nets" / "seed7.ckpt")
    assert not (kept / "checkpoints").exists()
    assert (kept / "episodes.csv").read_text() == (run / "episodes.csv").read_text()
    ours, theirs = run_row(run), run_row(kept)
    assert theirs["checkpoint"] == str(tmp_path / "nets" / "seed7.ckpt")
    same = [json.dumps({k: v for k, v in row.items() if k not in ("checkpoint", "folder")}, sort_keys=True)
            for row in (ours, theirs)]  # fmt: skip
    assert same[0] == same[1] and ours["tune_error"] == 4.5  # NaN (no hours logged) equal as text
    exported = torch.load(theirs["checkpoint"], map_location="cpu", weights_only=False)
    shipped = torch.load(SHIPPED / "paper" / "approach.ckpt", map_location="cpu", weights_only=False)
    assert all(torch.equal(v, shipped["state_dict"][k]) for k, v in exported["state_dict"].items())
    (run / "final_eval.json").write_text(json.dumps({"checkpoint": str(tmp_path / "gone.ckpt")}))
    with pytest.raises(ConfigError, match="not there to export"):
        keep(run, tmp_path / "again", tmp_path / "again.ckpt")
    with pytest.raises(ConfigError, match="no final_eval.json or episodes.csv"):
        keep(tmp_path / "nothing", tmp_path / "x")


def test_an_ensemble_of_one_network_twice_acts_as_that_network(corpus_root, tmp_path):
    """``--ensemble``: the runs' selected checkpoints act together on their split and are paired with the best."""
    from blocks.agents.policy import PolicyAgent
    from blocks.corpus.loader import load_split
    from blocks.evaluate import run_episodes, write_episodes
    from blocks.render.renderer import Renderer
    from blocks.report.seeds import report

    checkpoint = str(SHIPPED / "paper" / "approach.ckpt")
    examples = load_split("dev", corpus_root)[:8]
    results = run_episodes(PolicyAgent.from_checkpoint(checkpoint), examples,
                           render_frames=Renderer(corpus_root).render, progress=False)  # fmt: skip
    errors = [r.error for r in results]
    runs = []
    for name, tune in (("a", 5.0), ("b", 4.0)):
        run = _finished_run(tmp_path / name, 1, [tune], {"mean_error": float(np.mean(errors)),
                            "median_error": float(np.median(errors))}, checkpoint, limit=8)  # fmt: skip
        write_episodes(run / "episodes.csv", examples, results)
        runs.append(run)
    text = report(runs, tmp_path / "ensemble", ensemble=True, root=str(corpus_root))
    record = json.loads((tmp_path / "ensemble" / "metrics.json").read_text())
    assert record["n"] == 8 and record["mean_error"] == pytest.approx(np.mean(errors))
    assert "against the best run +0.00 (95 % interval +0.00 to +0.00)" in text


def test_averaging_a_runs_epochs_gives_the_mean_weights(tmp_path):
    """``export --average``: the mean of the epochs' weights, loadable like any exported goal predictor."""
    import torch

    from blocks.learn.goal import GoalLearner
    from blocks.model.checkpoint import load_goal_predictor
    from blocks.report.export import average

    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    learners = []
    for epoch in range(3):
        torch.manual_seed(epoch)
        learner = GoalLearner(["<pad>", "<unk>", "move"], dim=16, heads=2, layers=1)
        learners.append(learner)
        torch.save({"state_dict": learner.state_dict(), "hyper_parameters": dict(learner.hparams), "epoch": epoch},
                   folder / f"epoch_{epoch:03d}.ckpt")  # fmt: skip
    out = average(tmp_path / "run", 1, 2, tmp_path / "mean.ckpt")
    predictor, _ = load_goal_predictor(out)
    weight = predictor.moved.weight
    expected = (learners[1].predictor.moved.weight + learners[2].predictor.moved.weight) / 2
    assert torch.allclose(weight, expected, atol=1e-6)
    with pytest.raises(Exception, match="no such checkpoints"):
        average(tmp_path / "run", 2, 5, tmp_path / "bad.ckpt")


def test_export_names_what_is_missing_in_one_line(tmp_path, capsys):
    """A run that has not validated yet, a checkpoint that is not there: one line and exit 2, not a traceback."""
    from blocks.report.export import main

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for argv, message in [
        (["--best", str(run), str(tmp_path / "a.ckpt")], f"{run / 'checkpoints'}: no last.ckpt"),
        (
            [str(tmp_path / "none.ckpt"), str(tmp_path / "a.ckpt")],
            f"{tmp_path / 'none.ckpt'}: no such checkpoint",
        ),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and capsys.readouterr().err.startswith(f"error: {message}")
    assert not (tmp_path / "a.ckpt").exists()


def test_an_early_stop_replayed_on_a_finished_curve_keeps_the_best_so_far(tmp_path, capsys):
    """``blocks.report.early_stop``: patience 3 stops after three validations without a new best and keeps the
    best before them; a later, better validation is what it loses. A run without tuning errors is one line."""
    from blocks.errors import UsageError
    from blocks.report.early_stop import main, replay, stopped, tuning_curve

    run = tmp_path / "run" / "csv" / "version_0"
    run.mkdir(parents=True)
    errors = [5.0, 4.0, 3.0, 3.5, 3.6, 3.7, 2.9]
    (run / "metrics.csv").write_text("epoch,step,val/mean_error,train/loss\n" + "".join(
        f"0,{10 * i},{e},\n0,{10 * i + 5},,1.0\n" for i, e in enumerate(errors)))  # fmt: skip
    curve = tuning_curve(tmp_path / "run")
    assert curve.tolist() == errors
    assert stopped(curve, 3) == (2, 6) and stopped(curve, 4) == (6, 7)
    r = replay({"run": curve}, 3)
    assert (r["same_pick"], r["validations"], r["of"]) == (0, 6, 7) and r["worst_rise"] == pytest.approx(0.1)
    main([str(tmp_path / "run"), "--patience", "3", "4"])
    out = capsys.readouterr().out
    assert "| 3 | 0 of 1 | 6 of 7 | 0.10 |" in out and "| 4 | 1 of 1 | 7 of 7 | 0.00 |" in out
    (tmp_path / "empty" / "csv" / "version_0").mkdir(parents=True)
    (tmp_path / "empty" / "csv" / "version_0" / "metrics.csv").write_text("epoch,step,train/loss\n0,1,2.0\n")
    with pytest.raises(UsageError, match="no validation on the tuning split"):
        tuning_curve(tmp_path / "empty")
