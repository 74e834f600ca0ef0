import math

import pytest
import torch

from blocks.model.distribution import FactoredActionDistribution, from_action, to_action
from blocks.model.policy import PolicyNetwork, same_padding, standardize
from blocks.render.history import standardize as standardize_numpy
from blocks.world.geometry import STOP


@pytest.fixture
def distribution():
    generator = torch.Generator().manual_seed(0)
    return FactoredActionDistribution(
        torch.randn(6, 20, generator=generator), torch.randn(6, 5, generator=generator)
    )


def test_the_81_probabilities_sum_to_one_and_stop_is_the_direction_stop(distribution):
    probs = distribution.action_log_probs().exp()
    assert probs.shape == (6, 81)
    assert torch.allclose(probs.sum(1), torch.ones(6), atol=1e-6)
    assert torch.allclose(probs[:, STOP], distribution.direction.probs[:, 4])
    assert torch.allclose(
        probs[:, 4 * 7 + 2], distribution.block.probs[:, 7] * distribution.direction.probs[:, 2]
    )


def test_log_prob_greedy_sample_and_entropy(distribution):
    actions = torch.tensor([0, 80, 5, 79, 40, 3])
    assert torch.allclose(
        distribution.log_prob(actions), distribution.action_log_probs()[torch.arange(6), actions]
    )
    greedy = distribution.greedy()
    assert torch.equal(greedy, distribution.action_log_probs().argmax(1))
    ids, block, direction = distribution.sample(torch.Generator().manual_seed(1))
    assert torch.equal(ids, to_action(block, direction)) and ((ids >= 0) & (ids <= 80)).all()
    assert torch.allclose(
        distribution.entropy(), distribution.block.entropy() + distribution.direction.entropy()
    )
    block, direction = from_action(torch.tensor([9, 80]))
    assert block.tolist() == [2, 0] and direction.tolist() == [1, 4]


def test_same_padding_matches_the_release_sizes():
    assert (
        same_padding(120, 8, 4)[0] == 30 and same_padding(30, 8, 4)[0] == 8 and same_padding(8, 4, 2)[0] == 4
    )


def test_standardize_matches_the_numpy_reference():
    images = torch.randint(0, 256, (3, 15, 20, 20), dtype=torch.uint8)
    assert torch.allclose(standardize(images), torch.from_numpy(standardize_numpy(images.numpy())), atol=1e-4)
    assert standardize(torch.full((1, 15, 4, 4), 9, dtype=torch.uint8)).abs().max() < 1e-4


def test_network_shapes_sizes_and_ablation():
    net = PolicyNetwork(vocab_size=1000)  # about the corpus vocabulary
    assert 0.8e6 < sum(p.numel() for p in net.parameters()) < 0.9e6
    assert net.hidden.in_features == 506
    images = torch.randint(0, 256, (4, 15, 120, 120), dtype=torch.uint8)
    text = net.encode_instruction(torch.randint(2, 50, (4, 7)), torch.tensor([7, 3, 1, 5]))
    assert text.shape == (4, 250)
    out = net(images, text, torch.tensor([-1, 80, 0, 79]))
    assert out.block_log_probs.shape == (4, 20) and out.direction_log_probs.shape == (4, 5)
    small = PolicyNetwork(vocab_size=50, image_size=64, use_previous_action=False)
    assert small.hidden.in_features == 450
    small(torch.zeros(2, 15, 64, 64, dtype=torch.uint8), torch.zeros(2, 250), torch.tensor([-1, 3]))


def test_padding_does_not_change_the_instruction_encoding():
    net = PolicyNetwork(vocab_size=30)
    tokens = torch.tensor([[5, 6, 7, 0, 0, 0]])
    assert torch.allclose(
        net.encode_instruction(tokens, torch.tensor([3])),
        net.encode_instruction(tokens[:, :3], torch.tensor([3])),
        atol=1e-6,
    )


def test_initialisation_follows_the_paper():
    net = PolicyNetwork(vocab_size=2000)
    assert abs(net.word_embedding.weight.std().item() - 1.0) < 0.05
    assert abs(net.image_encoder.convs[0].weight.std().item() - math.sqrt(0.005)) < 0.01
    assert net.block_embedding.weight.abs().max() < 0.01 and net.hidden.bias.abs().max() == 0
    before = net.direction_head.weight.clone()
    net.reset_direction_head()
    assert not torch.equal(before, net.direction_head.weight) and net.direction_head.bias.abs().max() == 0


def test_dropout_is_off_by_default_and_only_active_in_training():
    torch.manual_seed(0)
    images = torch.randint(0, 256, (4, 15, 120, 120), dtype=torch.uint8)
    tokens, lengths = torch.tensor([[2, 3, 4]] * 4), torch.tensor([3] * 4)
    previous = torch.full((4,), -1)

    def logits(network):
        return network(images, network.encode_instruction(tokens, lengths), previous).block.logits

    plain = PolicyNetwork(10)
    assert torch.equal(logits(plain), logits(plain))
    noisy = PolicyNetwork(10, dropout=0.5)
    noisy.load_state_dict(plain.state_dict())  # no weights of its own: old checkpoints load
    assert not torch.allclose(logits(noisy), logits(plain))
    noisy.eval()
    assert torch.allclose(logits(noisy), logits(plain))
    with pytest.raises(ValueError, match="network.dropout"):
        PolicyNetwork(10, dropout=1.0)
