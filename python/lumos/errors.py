"""The exceptions lumos raises.

Every error of the library is a :class:`LumosError`; its message is the one
the ``lumos`` command line prints after ``error:``. Bad input (a trace that
cannot be read or processed, files that are not one job) is an
:class:`InputError`, the CLI's exit code 1; an option that cannot be valid
is a :class:`ConfigError` (also a ``ValueError``), the CLI's usage error
(exit code 2); a file or folder that cannot be opened, listed or written is
a :class:`LumosIOError` (also an ``OSError``).
"""

from __future__ import annotations

__all__ = ["LumosError", "InputError", "ConfigError", "LumosIOError"]


class LumosError(Exception):
    """Any error of lumos; ``str(e)`` is the CLI's message."""

    @property
    def message(self) -> str:
        """The message, as the CLI prints it after ``error:``."""
        return str(self.args[0]) if self.args else ""


class InputError(LumosError):
    """A trace, model or network file that cannot be read or processed, or
    files that are not the ranks of one job (two claiming one rank)."""


class ConfigError(LumosError, ValueError):
    """An option that cannot be valid: a non-positive factor, a zero degree,
    an unknown preset, a rank the job does not have."""


class LumosIOError(LumosError, OSError):
    """A file that cannot be opened or read, a folder that cannot be listed
    or created, an output that cannot be written."""
