"""Mistakes a user can make and fix: the command-line tools print these as one line and exit with status 2."""

from __future__ import annotations


class UsageError(Exception):
    """A missing or corrupt file, an unknown name, a bad value: the message names it and says what to do."""


class ConfigError(UsageError, ValueError):
    """A configuration key or value that cannot work; the message names the key."""


class CheckpointError(UsageError, FileNotFoundError):
    """A checkpoint that is missing or is not one of this package's."""
