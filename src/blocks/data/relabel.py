"""Relabelling a board and its instruction together: which block carries which label is data, not identity (ours).

A training board of the goal predictor is a layout of labelled blocks and an instruction naming some of them.
Swapping the labels of the blocks (the Toyota block becomes the BMW block and the reverse, or block 3 and block 7)
and the same names in the words gives another valid example: the same geometry, other labels. The corpus has 66
training board sequences, so each label is otherwise seen at a few places only; relabelled boards show every
label everywhere. Only labels present on the board are exchanged, so a digit board keeps its numbers 1..n.

Where a name is read in the words:
- digit boards: a number from 1 to 20 is a label unless a count noun follows it ("2 spaces", "3 blocks");
- logo boards: the words of each logo's name as the corpus spells it, including its frequent misspellings and
  possessives; a name's second word ("king" of Burger King) is dropped after its first word is replaced, and the
  replacement is the first word of the new name (the names' first words alone name every logo in the corpus).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from blocks.model.policy import pad_token_ids
from blocks.world.geometry import MAX_BLOCKS

# The corpus's spellings of each logo's name (first words; lower case, as tokenised), in LOGO_NAMES order.
LOGO_WORDS: tuple[tuple[str, ...], ...] = (
    ("adidas", "adidias"),
    ("bmw",),
    ("burger", "burgerking"),
    ("coca", "cocacola", "coke"),
    ("esso",),
    ("heineken", "heinikin", "heinenken"),
    ("hp",),
    ("mcdonalds", "mcdonald's", "mcdonald", "mcdonalds's"),
    ("mercedes", "mercedez", "merceds", "merecedes"),
    ("nvidia", "nvida"),
    ("pepsi",),
    ("shell",),
    ("sri",),
    ("starbucks", "starbuck's", "starbuck", "starbucks's"),
    ("stella", "stellois"),
    ("target", "targer"),
    ("texaco",),
    ("toyota",),
    ("twitter",),
    ("ups",),
)
SECOND_WORDS = frozenset({"king", "cola", "benz", "artois"})
COUNT_NOUNS = frozenset(
    [
        "space",
        "spaces",
        "spot",
        "spots",
        "blocks",
        "units",
        "unit",
        "steps",
        "step",
        "places",
        "squares",
        "square",
        "times",
        "rows",
        "row",
        "columns",
        "column",
        "lengths",
        "length",
        "widths",
        "width",
        "boxes",
        "cubes",
        "positions",
    ]
)


class LabelWords:
    """Which word ids name which label, for one vocabulary (a list of words; id = index)."""

    def __init__(self, words: Sequence[str]):
        index = {w: i for i, w in enumerate(words)}
        self.digit = {index[str(k + 1)]: k for k in range(MAX_BLOCKS) if str(k + 1) in index}
        self.digit_word = {k: i for i, k in self.digit.items()}
        self.logo: dict[int, int] = {}
        self.logo_word: dict[int, int] = {}
        for label, spellings in enumerate(LOGO_WORDS):
            for spelling in spellings:
                for form in (spelling, spelling + "'s"):
                    if form in index:
                        self.logo.setdefault(index[form], label)
            known = [spelling for spelling in spellings if spelling in index]
            if known:  # the replacement: the most frequent spelling the vocabulary has
                self.logo_word[label] = index[known[0]]
        self.second = {index[w] for w in SECOND_WORDS if w in index}
        self.counts = {index[w] for w in COUNT_NOUNS if w in index}
        self._named = {
            logo: torch.tensor([label in names for label in range(MAX_BLOCKS)])
            for logo, names in ((False, self.digit_word), (True, self.logo_word))
        }

    def named(self, logo: bool) -> torch.Tensor:
        """``(20,)`` booleans: the labels with a word in the vocabulary (only these can be exchanged)."""
        return self._named[logo]

    def mentioned(self, ids: Sequence[int], logo: bool) -> set[int]:
        """The labels the words name, read as :meth:`rewrite` reads them (a number before a count noun is none)."""
        if logo:
            return {self.logo[token] for token in ids if token in self.logo}
        return {
            self.digit[token]
            for position, token in enumerate(ids)
            if token in self.digit
            and (ids[position + 1] if position + 1 < len(ids) else None) not in self.counts
        }

    def rewrite(self, ids: Sequence[int], mapping: dict[int, int], logo: bool) -> list[int]:
        """``ids`` with every name of label ``a`` replaced by a name of ``mapping[a]`` (labels not in ``mapping``
        stay)."""
        out: list[int] = []
        replaced = False
        for position, token in enumerate(ids):
            if logo:
                label = self.logo.get(token)
                if replaced and token in self.second:
                    replaced = False
                    continue
                replaced = False
                if label is not None and label in mapping and mapping[label] in self.logo_word:
                    out.append(self.logo_word[mapping[label]])
                    replaced = True
                    continue
            else:
                label = self.digit.get(token)
                following = ids[position + 1] if position + 1 < len(ids) else None
                if label is not None and label in mapping and following not in self.counts:
                    out.append(self.digit_word[mapping[label]])
                    continue
            out.append(token)
        return out


def relabel(
    batch: dict[str, torch.Tensor],
    words: LabelWords,
    probability: float,
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """A copy of a goal-predictor batch where each example, with ``probability``, has the labels of its present
    blocks permuted at random, in the board (positions move to the new label's slot) and in the words alike.
    Labels the vocabulary has no word for stay where they are."""
    batch = dict(batch)
    chosen = torch.rand(len(batch["block"]), generator=generator) < probability  # drawn on the CPU
    if not chosen.any():
        return batch
    positions = batch["positions"].clone()
    block, tokens, lengths = batch["block"].clone(), batch["tokens"], batch["lengths"]
    rewritten: list[list[int]] = []
    for row in range(len(block)):
        ids = tokens[row, : int(lengths[row])].tolist()
        if chosen[row]:
            exchangeable = batch["present"][row].cpu() & words.named(bool(batch["logo"][row]))
            slots = torch.nonzero(exchangeable).flatten()
            order = slots[torch.randperm(len(slots), generator=generator)]
            mapping = dict(zip(slots.tolist(), order.tolist(), strict=True))
            positions[row, order] = batch["positions"][row, slots]
            block[row] = mapping[int(block[row])]
            ids = words.rewrite(ids, mapping, bool(batch["logo"][row]))
        rewritten.append(ids)
    padded, counts = pad_token_ids(rewritten)
    batch.update(
        positions=positions, block=block, tokens=padded.to(tokens.device), lengths=counts.to(lengths.device)
    )
    return batch
