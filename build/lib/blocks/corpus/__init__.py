"""The Blocks corpus: files on disk or downloaded, examples, tokens and the vocabulary."""

from blocks.corpus.download import CorpusError, default_data_root, ensure_corpus, ensure_file
from blocks.corpus.loader import SPLITS, Example, load_split
from blocks.corpus.text import Vocabulary, tokenize

__all__ = [
    "SPLITS", "CorpusError", "Example", "Vocabulary",
    "default_data_root", "ensure_corpus", "ensure_file", "load_split", "tokenize",
]  # fmt: skip
