"""Reflecting a board and its instruction together, left for right (ours).

A goal-predictor example reflected about the board's vertical centre line (every x coordinate negated, the goal's
too) is another valid example once its words say left for right: "move the BMW to the left of the Esso" becomes
"... to the right of the Esso". The 66 training board sequences show each arrangement in one handedness only;
reflected copies show both. Only the horizontal reflection: the vertical one would have to rewrite "under",
"beneath" or "line up", which have no one-word mirror image.

"right" stays where it means "directly" ("right next to", "right above": the word after it decides), and an
instruction holding a word whose mirror image is not in the vocabulary ("leftmost" when "rightmost" never occurs in
training) is left unreflected.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

PAIRS: tuple[tuple[str, str], ...] = (
    ("left", "right"),
    ("lefthand", "righthand"),
    ("leftmost", "rightmost"),
    ("east", "west"),
    ("eastern", "western"),
    ("northeast", "northwest"),
    ("southeast", "southwest"),
)
# Words after which "right" means "directly" and is not a side.
DIRECTLY = frozenset(
    ["next", "under", "above", "on", "below", "underneath", "beneath", "beside", "by", "in", "at", "there",
     "behind", "against", "alongside", "into", "onto", "atop", "between", "along", "over", "where", "now", "away"]
)  # fmt: skip


class MirrorWords:
    """Which word ids a left-right reflection exchanges, for one vocabulary (a list of words; id = index)."""

    def __init__(self, words: Sequence[str]):
        index = {w: i for i, w in enumerate(words)}
        self.swap = torch.arange(len(words))
        unpaired = []
        for a, b in PAIRS:
            if a in index and b in index:
                self.swap[index[a]], self.swap[index[b]] = index[b], index[a]
            else:
                unpaired += [index[w] for w in (a, b) if w in index]
        self.unpaired = torch.tensor(unpaired, dtype=torch.long)
        self.right = index.get("right", -1)
        self.directly = torch.tensor([index[w] for w in DIRECTLY if w in index], dtype=torch.long)

    def reflect(self, tokens: torch.Tensor) -> torch.Tensor:
        """Padded word ids ``(B, T)`` with left and right exchanged (padding, id 0, maps to itself)."""
        swap = self.swap.to(tokens.device)
        following = torch.cat([tokens[:, 1:], tokens.new_zeros(len(tokens), 1)], dim=1)
        keep = (tokens == self.right) & torch.isin(following, self.directly.to(tokens.device))
        return torch.where(keep, tokens, swap[tokens])


def mirror(
    batch: dict[str, torch.Tensor],
    words: MirrorWords,
    probability: float,
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """A copy of a goal-predictor batch where each example, with ``probability``, is reflected left for right:
    x coordinates of the blocks and the goal negated (the board is centred on 0), the words rewritten to match.
    ``mirrored`` in the copy marks the examples changed."""
    batch = dict(batch)
    chosen = (torch.rand(len(batch["block"]), generator=generator) < probability).to(batch["tokens"].device)
    chosen &= ~torch.isin(batch["tokens"], words.unpaired.to(chosen.device)).any(dim=1)
    batch["mirrored"] = chosen
    if not chosen.any():
        return batch
    sign = torch.ones(len(chosen), 2, device=chosen.device)
    sign[chosen, 0] = -1
    batch["positions"] = batch["positions"] * sign[:, None, :]
    batch["goal"] = batch["goal"] * sign
    batch["tokens"] = torch.where(chosen[:, None], words.reflect(batch["tokens"]), batch["tokens"])
    return batch
