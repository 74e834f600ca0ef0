"""Mistakes a user can make and fix: the command-line tools print these as one line and exit with status 2."""

from __future__ import annotations


class UsageError(Exception):
    """A missing or corrupt file, an unknown name, a bad value: the message names it and says what to do."""


class ConfigError(UsageError, ValueError):
    """A configuration key or value that cannot work; the message names the key."""


class CheckpointError(UsageError, FileNotFoundError):
    """A checkpoint that is missing or is not one of this package's."""


def positive_number(value: object, key: str) -> float:
    """``value`` as a finite number above zero, else a ConfigError naming ``key`` (a learning rate of nan, inf or
    "abc" would otherwise fail later, as a traceback or after the first update)."""
    import math

    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{key} must be a finite number above 0, got {value!r}")
    return float(value)
