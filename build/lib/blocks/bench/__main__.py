"""``python -m blocks.bench <env|train|demo>``."""

from blocks.bench import main

main()
