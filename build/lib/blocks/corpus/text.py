"""Tokenisation and the vocabulary.

Instructions are lower-cased and split into words: runs of letters and digits, keeping an apostrophe inside a
word ("block's"). Every other character (punctuation, quotes, brackets) separates words and is dropped, so
"SRI-block," and "sri block" give the same tokens. Words never seen in training map to UNK, or, when asked
(``mend_unknown``, our agent's reading), first to the known words they most likely stand for (:meth:`Vocabulary.mend`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")
_LETTERS = "abcdefghijklmnopqrstuvwxyz'"

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

    def encode(self, tokens: Sequence[str], mend_unknown: bool = False) -> list[int]:
        """Ids of ``tokens``; an instruction without a word encodes as one UNK, since the encoder needs a token.
        ``mend_unknown``: a word never seen in training is first read as :meth:`mend` says."""
        if mend_unknown:
            tokens = [known for t in tokens for known in self.mend(t)]
        return [self.index.get(t, 1) for t in tokens] or [self.unk_id]

    def mend(self, word: str) -> list[str]:
        """The known words an unknown ``word`` stands for, by the first rule that finds them: an ordinal is its
        number ("17th" names block 17, and dev says so 50 times where training never did); a possessive or
        plural is its stem ("sris", "coke's"); two known words run together ("infront", "eachother"), each at
        least two letters; one slip of the keyboard (a letter dropped, added, changed or two swapped) from a
        known word, for words of six letters or more with the first letter kept ("paralell", "starkucks"; shorter
        words are too often other real words: "short" is not "sort"), the most frequent such word. Otherwise
        the word itself (UNK). A known word is returned as it is."""
        if word in self.index:
            return [word]
        ordinal = _ORDINAL.fullmatch(word)
        if ordinal and ordinal.group(1) in self.index:
            return [ordinal.group(1)]
        for suffix in ("'s", "s"):
            stem = word[: -len(suffix)]
            if word.endswith(suffix) and len(stem) >= 2 and stem in self.index:
                return [stem]
        for cut in range(2, len(word) - 1):
            if word[:cut] in self.index and word[cut:] in self.index:
                return [word[:cut], word[cut:]]
        if len(word) >= 6:
            splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
            near = {a + b[1:] for a, b in splits if b}
            near |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
            near |= {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
            near |= {a + c + b for a, b in splits for c in _LETTERS}
            known = [w for w in near if w in self.index and w[0] == word[0]]
            if known:
                return [min(known, key=self.index.__getitem__)]
        return [word]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.words[i] for i in ids if i != 0]

    def to_list(self) -> list[str]:
        """Plain list for checkpoints; ``Vocabulary(words)`` restores it."""
        return list(self.words)
