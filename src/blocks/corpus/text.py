"""Tokenisation and the vocabulary.

Instructions are lower-cased and split into words: runs of letters and digits, keeping an apostrophe inside a
word ("block's"). Every other character (punctuation, quotes, brackets) separates words and is dropped, so
"SRI-block," and "sri block" give the same tokens. Words never seen in training map to UNK.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

PAD = "<pad>"
UNK = "<unk>"


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of an instruction."""
    return _WORD.findall(text.lower())


class Vocabulary:
    """Word <-> id map; id 0 is padding, id 1 is UNK."""

    def __init__(self, words: Sequence[str]):
        self.words: list[str] = [PAD, UNK, *[w for w in words if w not in (PAD, UNK)]]
        self.index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_count: int = 1) -> Vocabulary:
        """Vocabulary of every word seen at least ``min_count`` times, most frequent first (ties: alphabetical)."""
        counts = Counter(token for tokens in token_lists for token in tokens)
        kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        return cls(kept)

    @property
    def pad_id(self) -> int:
        return 0

    @property
    def unk_id(self) -> int:
        return 1

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Ids of ``tokens``; an instruction without a word encodes as one UNK, since the encoder needs a token."""
        return [self.index.get(t, 1) for t in tokens] or [self.unk_id]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.words[i] for i in ids if i != 0]

    def to_list(self) -> list[str]:
        """Plain list for checkpoints; ``Vocabulary(words)`` restores it."""
        return list(self.words)
