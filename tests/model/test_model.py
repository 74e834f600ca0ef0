import math

import numpy as np
import pytest
import torch

from blocks.corpus.text import Vocabulary
from blocks.errors import CheckpointError, ConfigError
from blocks.model.checkpoint import load_policy, network_options, read_checkpoint
from blocks.model.distribution import FactoredActionDistribution, from_action, to_action
from blocks.model.policy import UNKNOWN_WORD, PolicyNetwork, goal_targets, same_padding, standardize
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


def test_the_appendix_initialisation_reads_its_numbers_as_variances():
    torch.manual_seed(0)
    net = PolicyNetwork(vocab_size=2000)  # the default
    assert abs(net.image_encoder.convs[0].weight.std().item() - 0.88 * math.sqrt(0.005)) < 0.003
    assert abs(net.image_encoder.project.weight.std().item() - 0.88 * math.sqrt(0.004)) < 0.003
    assert abs(net.lstm.weight_hh_l0.std().item() - 0.01) < 0.001 and net.lstm.bias_ih_l0.abs().max() == 0
    with pytest.raises(ConfigError, match="network.init='tf'"):
        PolicyNetwork(vocab_size=20, init="tf")
    from blocks.model.spo import SPONetwork

    with pytest.raises(ConfigError, match="network.init='tf'"):  # its own constructor, the same check
        SPONetwork(vocab_size=20, init="tf")


def test_the_release_initialisation_follows_the_release_code():
    torch.manual_seed(0)
    net = PolicyNetwork(vocab_size=2000, init="release")
    # Standard deviations 0.005 and 0.004 as the release's code passes them (the appendix's "variance" would be
    # 0.07 and 0.063), truncated at two of them as TensorFlow's truncated_normal.
    for conv in net.image_encoder.convs:
        # A normal truncated at 2 std keeps 0.88 of its standard deviation.
        assert abs(conv.weight.std().item() - 0.88 * 0.005) < 0.0003
        assert conv.weight.abs().max() <= 2 * 0.005
    assert abs(net.image_encoder.project.weight.std().item() - 0.88 * 0.004) < 0.0003
    # Words N(0, 1), padding and the unknown word zero, and the vocabulary agrees which id that is.
    assert abs(net.word_embedding.weight[2:].std().item() - 1.0) < 0.05
    assert net.word_embedding.weight[:2].abs().max() == 0
    assert Vocabulary(["toyota"]).unk_id == UNKNOWN_WORD
    # BasicLSTMCell: Glorot uniform over the (150 + 250, 1000) kernel, zero biases plus a forget bias of 1.
    limit = math.sqrt(6 / (150 + 250 + 1000))
    assert 0.95 * limit < net.lstm.weight_hh_l0.abs().max() <= limit
    bias = net.lstm.bias_ih_l0 + net.lstm.bias_hh_l0
    assert bias[250:500].eq(1).all() and bias[:250].eq(0).all() and bias[500:].eq(0).all()
    assert net.block_embedding.weight.abs().max() < 0.01 and net.hidden.bias.abs().max() == 0
    before = net.direction_head.weight.clone()
    net.reset_direction_head()
    assert not torch.equal(before, net.direction_head.weight) and net.direction_head.bias.abs().max() == 0


def test_from_the_release_initialisation_the_network_hears_the_words_louder_than_it_sees(renderer):
    # With the release's scales the image embedding starts orders of magnitude smaller than the instruction's.
    torch.manual_seed(0)
    net = PolicyNetwork(vocab_size=50, init="release")
    rng = np.random.default_rng(0)
    boards = [rng.uniform(-1, 1, (8, 2)) for _ in range(8)]
    pictures = np.stack([renderer.render_board(b, False) for b in boards])
    stacks = torch.from_numpy(np.concatenate([pictures] * 5, axis=-1)).permute(0, 3, 1, 2).contiguous()
    with torch.no_grad():
        image = net.image_encoder(standardize(stacks)).abs().mean().item()
        text = net.encode_instruction(torch.randint(2, 50, (8, 10)), torch.full((8,), 10)).abs().mean().item()
    assert image < 0.01 * text


def test_a_checkpoint_rebuilds_its_network_without_lightning(tmp_path):
    """The record beside the weights rebuilds the network; options that left the package load at their neutral
    values (older checkpoints) and are refused otherwise; an unknown key is named."""
    torch.manual_seed(0)
    net = PolicyNetwork(4, goal_head=True)
    options = {"goal_head": True, "dropout": 0.0, "fusion": "concat", "coordinates": False}
    state = {f"policy.{k}": v for k, v in net.state_dict().items()}
    path = tmp_path / "net.ckpt"
    torch.save(
        {"state_dict": state, "hyper_parameters": {"network": options, "vocabulary": list("abcd")}}, path
    )
    loaded, vocabulary = load_policy(path)
    assert vocabulary == list("abcd") and loaded.has_goal_head and not loaded.training
    for name, tensor in net.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor)
    assert read_checkpoint(path).network == {"goal_head": True}
    with pytest.raises(ConfigError, match="network.fusion='film' was removed"):
        network_options({"fusion": "film"})
    with pytest.raises(ConfigError, match="network.widht"):
        network_options({"widht": 3})
    torch.save({"weights": 1}, path)
    with pytest.raises(CheckpointError, match="not a blocks learner checkpoint"):
        read_checkpoint(path)
    # the read-and-plan agent's parts are named, with where they go
    torch.save({"hyper_parameters": {"kind": "perception"}, "state_dict": {}}, path)
    with pytest.raises(
        CheckpointError, match="a 'perception' checkpoint, not a policy; .*agent=read_and_plan"
    ):
        read_checkpoint(path)
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        read_checkpoint(tmp_path / "missing.ckpt")
    # what is not a torch file at all is named as such, not as a file that might run code when opened
    (tmp_path / "random.ckpt").write_bytes(np.random.default_rng(0).bytes(4000))
    (tmp_path / "notes.ckpt").write_text("hello\n")
    for name in ("random.ckpt", "notes.ckpt"):
        with pytest.raises(
            CheckpointError, match=r"not a checkpoint \(torch writes a zip archive or a pickle"
        ):
            read_checkpoint(tmp_path / name)
    with pytest.raises(CheckpointError, match="a folder, not a checkpoint file"):
        read_checkpoint(tmp_path)


def test_the_goal_head_reads_the_hidden_layer_and_leaves_the_actions_alone():
    torch.manual_seed(0)
    paper, with_goal = PolicyNetwork(30), PolicyNetwork(30, goal_head=True)
    with_goal.load_state_dict(paper.state_dict(), strict=False)
    assert set(with_goal.state_dict()) - set(paper.state_dict()) == {"goal_head.weight", "goal_head.bias"}
    images = torch.randint(0, 256, (3, 15, 120, 120), dtype=torch.uint8)
    text = paper.encode_instruction(torch.tensor([[2, 3, 4]] * 3), torch.tensor([3, 2, 1]))
    previous = torch.tensor([-1, 5, 80])
    features = with_goal.joint_features(images, text, previous)
    assert torch.equal(
        with_goal(images, text, previous).block.logits, paper(images, text, previous).block.logits
    )
    assert with_goal.predict_goal(features).shape == (3, 4)
    with pytest.raises(RuntimeError, match="network.goal_head=true"):
        paper.predict_goal(features)


def test_goal_targets_are_the_goal_and_the_offset_in_block_lengths():
    goal, position = np.array([[0.1524, 0.0]]), np.array([[0.0, 0.3048]])
    assert goal_targets(goal, position).tolist() == [[1.0, 0.0, 1.0, -2.0]]


def test_the_goal_map_cells_sit_where_the_camera_draws_block_tops():
    """A board point's own cell (the pixel the camera projects it to, divided by the cell size) is the cell whose
    centre lies nearest to it on the board: map and picture agree on where things are."""
    from blocks.model.goal_map import CELL, cell_centres
    from blocks.render.camera import Camera
    from blocks.world.geometry import BLOCK_SIDE

    centres = cell_centres(120).numpy() * BLOCK_SIDE  # (2, 900), board units
    points = np.random.default_rng(0).uniform(-1.1, 1.1, size=(200, 2))
    row, column = Camera(120).project(points[:, 0], points[:, 1], BLOCK_SIDE)
    own = (row // CELL).astype(int) * (120 // CELL) + (column // CELL).astype(int)
    nearest = ((centres.T[None] - points[:, None]) ** 2).sum(-1).argmin(1)
    assert (own == nearest).all()


def test_the_goal_map_replaces_the_linear_goal_head_and_leaves_the_actions_alone():
    torch.manual_seed(0)
    paper, with_map = PolicyNetwork(30), PolicyNetwork(30, goal_map=True)
    with_map.load_state_dict(paper.state_dict(), strict=False)
    assert with_map.has_goal_head and with_map.goal_head is None and not paper.has_goal_head
    assert {k.split(".")[0] for k in set(with_map.state_dict()) - set(paper.state_dict())} == {"goal_map"}
    images = torch.randint(0, 256, (3, 15, 120, 120), dtype=torch.uint8)
    text = paper.encode_instruction(torch.tensor([[2, 3, 4]] * 3), torch.tensor([3, 2, 1]))
    previous = torch.tensor([-1, 5, 80])
    features = with_map.joint_features(images, text, previous)
    assert torch.equal(
        with_map(images, text, previous).block.logits, paper(images, text, previous).block.logits
    )
    goal = with_map.predict_goal(features, images, text)
    assert goal.shape == (3, 4) and goal.abs().max() < 9  # expected cell centres lie on the board
    with pytest.raises(ValueError, match="images and the instruction"):
        with_map.predict_goal(features)


def test_the_goal_maps_place_branch_reads_the_block_not_the_instruction():
    """Where the block stands comes from the picture and the block id alone; where it goes depends on the words."""
    torch.manual_seed(0)
    net = PolicyNetwork(30, goal_map=True)
    for parameter in (net.goal_map.text_film.weight, net.goal_map.block_film.weight):
        torch.nn.init.normal_(parameter, std=0.3)
    images = torch.randint(0, 256, (1, 15, 120, 120), dtype=torch.uint8).expand(2, -1, -1, -1)
    text = net.encode_instruction(torch.tensor([[2, 3, 4], [5, 6, 7]]), torch.tensor([3, 3]))
    features = torch.zeros(2, 120)  # the block head then picks the same block for both
    goal = net.predict_goal(features, images, text)
    place = goal[:, :2] - goal[:, 2:]
    assert torch.allclose(place[0], place[1], atol=1e-5) and not torch.allclose(goal[0, :2], goal[1, :2])
