"""One exception hierarchy; the CLI translates it in one place (``kvplan.cli.app.main``).

* :class:`KvplanError` -- base; exit code 1 (internal / unexpected condition).
* :class:`InputError` -- a user mistake (bad flag value, unknown preset, malformed
  config.json, unreadable log ...); exit code 2, printed as one line that names
  the field and the fix.
"""

from __future__ import annotations


class KvplanError(Exception):
    """Base class of every error kvplan raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, field: str | None = None, hint: str | None = None):
        self.field = field
        self.hint = hint
        super().__init__(message)

    def one_line(self) -> str:
        """The single line shown to the user: ``field: message (hint)``."""
        msg = str(self)
        if self.field and not msg.startswith(self.field):
            msg = f"{self.field}: {msg}"
        if self.hint:
            msg = f"{msg}; {self.hint}"
        return " ".join(msg.split())


class InputError(KvplanError):
    """Bad user input: exit 2, one line naming the field and the fix."""

    exit_code = 2


class DoesNotFitError(KvplanError):
    """Raised only under ``--check`` when the target does not fit: exit 3."""

    exit_code = 3
