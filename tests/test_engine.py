"""How the networks run (blocks.engine and the options it serves): the same numbers, faster, and options that load
and fall back as documented."""

from __future__ import annotations

import logging

import pytest
import torch

from blocks import engine
from blocks.errors import ConfigError
from blocks.learn.supervised import SupervisedLearner
from blocks.model.checkpoint import network_options
from blocks.model.policy import PolicyNetwork, standardize
from blocks.render.history import standardize as standardize_numpy

SMALL = {"image_size": 32, "frames": 2}


def test_the_allocator_keeps_freed_memory_on_linux():
    import sys

    kept = engine.keep_freed_memory()
    assert kept == sys.platform.startswith("linux")
    assert engine.keep_freed_memory() == kept  # idempotent


def test_standardize_writes_a_fresh_channels_last_tensor_and_leaves_its_input_alone():
    images = torch.randint(0, 256, (3, 15, 20, 20), dtype=torch.uint8)
    before = images.clone()
    out = standardize(images)
    assert out.dtype == torch.float32 and out.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(images, before)
    assert torch.allclose(out, torch.from_numpy(standardize_numpy(images.numpy())), atol=1e-5)
    assert torch.allclose(out.mean(dim=(1, 2, 3)), torch.zeros(3), atol=1e-5)


def test_the_instruction_is_read_in_float32_under_bf16_autocast():
    torch.manual_seed(0)
    network = PolicyNetwork(50, **SMALL)
    tokens, lengths = torch.randint(2, 50, (4, 7)), torch.tensor([7, 3, 1, 5])
    plain = network.encode_instruction(tokens, lengths)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = network.encode_instruction(tokens, lengths)
        distribution = network(
            torch.randint(0, 256, (4, 6, 32, 32), dtype=torch.uint8), mixed, torch.tensor([-1, 3, 80, 7])
        )
    assert mixed.dtype == torch.float32 and torch.equal(mixed, plain)
    assert torch.isfinite(distribution.block_log_probs).all()


def test_network_compile_is_how_it_runs_not_what_it_is():
    assert network_options({"compile": True, **SMALL}) == SMALL
    with pytest.raises(ConfigError, match="network.compile must be true or false"):
        network_options({"compile": "yes"})


def test_a_compiled_network_computes_the_eager_numbers_under_the_eager_keys():
    if engine.c_compiler() is None:
        pytest.skip("no C++ compiler for torch.compile here")
    torch.manual_seed(0)
    learner = SupervisedLearner(["<pad>", "<unk>", "a", "b"], {"compile": True, **SMALL})
    eager = PolicyNetwork(4, **SMALL)
    eager.load_state_dict(learner.policy.state_dict())  # the keys are the eager network's: no _orig_mod.
    learner.setup("fit")
    assert learner.policy.image_encoder._compiled_call_impl is not None
    assert "compile" not in learner.hparams.network
    images = torch.randint(0, 256, (3, 6, 32, 32), dtype=torch.uint8)
    text, previous = torch.randn(3, 250), torch.tensor([-1, 0, 80])
    compiled_out = learner.policy(images, text, previous).block_log_probs
    assert torch.allclose(compiled_out, eager(images, text, previous).block_log_probs, atol=1e-4)


def test_without_a_c_compiler_compile_says_so_once_and_stays_eager(monkeypatch, caplog):
    monkeypatch.setattr(engine, "c_compiler", lambda: None)
    learner = SupervisedLearner(["<pad>", "<unk>", "a"], {"compile": True, **SMALL})
    with caplog.at_level(logging.WARNING, logger="blocks.engine"):
        learner.setup("fit")
        learner.setup("validate")
    assert [r.getMessage() for r in caplog.records if "C++ compiler" in r.getMessage()] and len(
        caplog.records
    ) == 1
    assert learner.policy.image_encoder._compiled_call_impl is None


def test_a_batch_read_in_length_groups_gives_the_padded_batchs_vectors_and_gradients():
    from blocks.model.policy import LENGTH_GROUPS

    torch.manual_seed(0)
    network = PolicyNetwork(60, **SMALL)
    lengths = torch.tensor([3, 17, 1, 9, 9, 30, 2, 5, 12, 4, 0, 7])  # 0: an empty instruction reads as 1 word
    assert len(lengths) >= 2 * LENGTH_GROUPS
    tokens = torch.randint(2, 60, (len(lengths), 30)) * (torch.arange(30) < lengths.clamp_min(1)[:, None])
    grouped = network.encode_instruction(tokens, lengths)
    grouped.square().sum().backward()
    grouped_grad = network.lstm.weight_hh_l0.grad.clone()
    network.zero_grad()
    padded = network._encode_padded(tokens, lengths.clamp_min(1))
    padded.square().sum().backward()
    assert torch.allclose(grouped, padded, atol=1e-6)
    assert torch.allclose(grouped_grad, network.lstm.weight_hh_l0.grad, atol=1e-6)
    # the order of the batch is kept: each row is its own instruction's
    single = network.encode_instruction(tokens[5:6], lengths[5:6])
    assert torch.allclose(single[0], grouped[5], atol=1e-6)
