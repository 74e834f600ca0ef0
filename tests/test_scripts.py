"""scripts/: the probes a person runs by hand."""

from __future__ import annotations

from .conftest import load_script


def test_picture_path_tells_a_blind_network_from_a_seeing_one():
    """A third convolution whose biases sit below every input it can get is dead on every map: the probe reads 0
    there and a positive share for the network as initialised."""
    import torch

    from blocks.model.policy import PolicyNetwork

    probe = load_script("picture_path")
    torch.manual_seed(0)
    network = PolicyNetwork(vocab_size=10)
    images = torch.randint(0, 256, (8, 3 * network.frames, 120, 120), dtype=torch.uint8)
    alive = probe.activity(network, images)
    assert len(alive) == 3 and all(0.0 < share <= 1.0 for share in alive)
    with torch.no_grad():
        network.image_encoder.convs[2].bias.fill_(-1e6)
    assert probe.activity(network, images)[:2] == alive[:2] and probe.activity(network, images)[2] == 0.0
