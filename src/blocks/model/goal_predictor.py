"""Where the instruction sends which block, given where every labelled block stands (ours).

The board is a set of up to 20 labelled blocks (read off the picture by :class:`~blocks.model.perception
.BoardReader`, or the simulator's positions while training) plus one token for the board itself. Each block token
(its label, the decoration, its position in block lengths) reads the instruction's words by attention, then the
tokens read each other (one transformer layer: "between the Toyota and the SRI blocks"). Three heads follow:

- which block moves: a softmax over the present blocks;
- where it goes: ``goal = sum_k a_k (p_k + o_k)``, a softmax ``a`` over the tokens choosing the reference (the
  board token stands at the board's centre, for "the top left corner") and an offset ``o_k`` from each. With
  ``axis_references`` each coordinate has its own softmax, so that the goal may take its column from one block
  and its row from another ("left until it is in line with the SRI block").

Positions and goals are in block lengths. The network never sees a picture, so it trains on the corpus's 11,196
instructions in minutes, and what it learns is about words and layouts, not pixels.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from blocks.model.pretrained_text import STATE_DIM, PretrainedText
from blocks.world.geometry import MAX_BLOCKS

BOARD_TOKEN = MAX_BLOCKS  # the index of the board's own token, after the 20 blocks


class GoalPredictor(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        word_dim: int = 100,
        dim: int = 128,
        heads: int = 4,
        layers: int = 2,
        dropout: float = 0.0,
        axis_references: bool = False,
        text_encoder: str | None = None,
        vocabulary: Sequence[str] | None = None,
    ):
        """``text_encoder``: read the words with a frozen pretrained encoder (:class:`PretrainedText`, which
        needs the ``vocabulary``'s words) instead of word embeddings trained here."""
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.dim = dim
        if text_encoder is None:
            self.text = None
            self.word_embedding = nn.Embedding(vocab_size, word_dim, padding_idx=0)
        else:
            if vocabulary is None or len(vocabulary) != vocab_size:
                raise ValueError("a pretrained text encoder needs the vocabulary's words")
            self.text = PretrainedText(vocabulary, text_encoder)
            word_dim = STATE_DIM
        self.lstm = nn.LSTM(word_dim, dim // 2, batch_first=True, bidirectional=True)
        self.label = nn.Embedding(2 * MAX_BLOCKS + 1, dim)  # digit labels, logo labels, the board
        self.place = nn.Sequential(nn.Linear(2, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.read_words = nn.ModuleList(
            nn.MultiheadAttention(dim, heads, batch_first=True) for _ in range(layers)
        )
        self.relate = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True)
            for _ in range(layers)
        )
        self.moved = nn.Linear(dim, 1)
        self.axis_references = axis_references
        self.reference = nn.Linear(dim, 2 if axis_references else 1)
        if axis_references:
            # Each axis's query is the block's token plus a learnt correction that starts at zero: at
            # initialisation both axes choose the reference as the single softmax does.
            self.axis_query = nn.Linear(dim, 2 * dim)
            nn.init.zeros_(self.axis_query.weight)
            nn.init.zeros_(self.axis_query.bias)
            with torch.no_grad():
                self.reference.weight[1] = self.reference.weight[0]
                self.reference.bias[1] = self.reference.bias[0]
        self.offset = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 2))

    def forward(
        self,
        tokens: torch.Tensor,
        lengths: torch.Tensor,
        positions: torch.Tensor,
        present: torch.Tensor,
        logo: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Word ids ``(B, T)`` and lengths, block positions ``(B, 20, 2)`` in block lengths, ``present (B, 20)``
        and ``logo (B,)`` -> (moved-block log-probs ``(B, 20)``, per-block goals ``(B, 20, 2)`` if that block
        moved, reference weights ``(B, 20, 21, A)``: for each candidate block, over the 21 tokens, one softmax
        (``A = 1``) or one per axis (``A = 2``)). The goal of the block that moves is ``goals[b, moved]``."""
        batch = tokens.shape[0]
        if self.text is None:
            words, _ = self.lstm(self.dropout(self.word_embedding(tokens)))
            padding = (
                torch.arange(tokens.shape[1], device=tokens.device)[None]
                >= lengths.to(tokens.device)[:, None]
            )
        else:
            states, padding = self.text(tokens, lengths)
            words, _ = self.lstm(self.dropout(states))
        labels = torch.arange(MAX_BLOCKS, device=tokens.device)[None] + MAX_BLOCKS * logo.long()[:, None]
        labels = torch.cat([labels, torch.full((batch, 1), 2 * MAX_BLOCKS, device=tokens.device)], dim=1)
        places = torch.cat([positions, positions.new_zeros(batch, 1, 2)], dim=1)  # the board at the centre
        x = self.label(labels) + self.place(places)
        absent = torch.cat([~present, present.new_zeros(batch, 1)], dim=1)
        for read, relate in zip(self.read_words, self.relate, strict=True):
            x = x + read(x, words, words, key_padding_mask=padding, need_weights=False)[0]
            x = relate(x, src_key_padding_mask=absent)
        moved = self.moved(x[:, :MAX_BLOCKS]).squeeze(-1).masked_fill(~present, float("-inf")).log_softmax(-1)
        # The goal of each candidate block: its own reference weights over all tokens (blocks and the board).
        query = x[:, :MAX_BLOCKS, None, :]  # (B, 20, 1, D): one query, or one per axis
        if self.axis_references:
            query = query + self.axis_query(query).view(batch, MAX_BLOCKS, 2, self.dim)
        scores = torch.einsum("bkad,bjd->bkja", query, x) / self.dim**0.5 + self.reference(x)[:, None]
        weights = scores.masked_fill(absent[:, None, :, None], float("-inf")).softmax(2)  # (B, 20, 21, A)
        targets = places[:, None] + self.offset(
            x[:, None, :, :] * x[:, :MAX_BLOCKS, None, :]
        )  # (B, 20, 21, 2)
        goals = (weights * targets).sum(2)
        return moved, goals, weights


def combine_readings(
    readings: Sequence[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Several predictors' readings of the same boards as one (an ensemble): the mean of their block
    log-probabilities, renormalised, and the median of their goals (the mean of two), so that one member reading
    the instruction against another reference block does not drag the goal between the two."""
    moved = torch.stack([m for m, _, _ in readings]).mean(0).log_softmax(-1)
    return moved, torch.stack([g for _, g, _ in readings]).quantile(0.5, dim=0)


def goal_losses(
    moved: torch.Tensor, goals: torch.Tensor, true_block: torch.Tensor, true_goal: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(cross-entropy of the moved block, smooth L1 of the true block's predicted goal, in block lengths).

    The distance itself as the goal loss trained worse (tune 0.97 against 0.71 for the same seed;
    docs/experiments/read-and-plan.md)."""
    rows = torch.arange(len(true_block), device=goals.device)
    return F.nll_loss(moved, true_block), F.smooth_l1_loss(goals[rows, true_block], true_goal)
