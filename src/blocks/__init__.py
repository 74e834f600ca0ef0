"""Following natural-language instructions in the Blocks world from raw images."""

__version__ = "0.1.0"
