"""One exception hierarchy; the CLI translates it in one place (``kvplan.cli.app.main``).

* :class:`KvplanError` -- base; exit code 1 (internal / unexpected condition).
* :class:`InputError` -- a user mistake (bad flag value, unknown preset, malformed
  config.json, unreadable log ...); exit code 2, printed as one line that names
  the field and the fix.

Two helpers keep that line safe to print, whatever the input held:

* :func:`echo` -- the form in which a message quotes user input: at most :data:`ECHO_CHARS` characters, control
  characters escaped (no terminal escape sequences, no line breaks).  Every message that repeats input uses it.
* :func:`mask_secrets` -- credentials in URLs (``https://user:pass@host``), ``Bearer`` tokens and Hugging Face
  tokens (``hf_...``) replaced by ``***``.  :meth:`KvplanError.one_line` applies it to every error line.
"""

from __future__ import annotations

import re

#: echoed input is cut to this many characters (then "...")
ECHO_CHARS = 80
#: a backstop for the whole error line (a message built from many echoed parts)
MAX_LINE_CHARS = 1000

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\"]+")
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{20,}")
_QUERY_SECRET = re.compile(r"(?i)([?&](?:token|access_token|api_key|key|password)=)[^&\s'\"]+")


def mask_secrets(text: str) -> str:
    """``text`` with credentials replaced by ``***``.

    Masked: the user-info part of any URL (``http://user:pass@host`` -> ``http://***@host``), ``Bearer <token>``,
    Hugging Face tokens (``hf_`` and 20+ letters or digits) and ``token=`` / ``api_key=`` / ``password=`` query values.

    Example: ``mask_secrets("cannot reach https://me:s3cret@hub.local (refused)")`` ->
    ``"cannot reach https://***@hub.local (refused)"``.
    """
    text = _USERINFO.sub(r"\1***@", text)
    text = _BEARER.sub(r"\1***", text)
    text = _HF_TOKEN.sub("hf_***", text)
    return _QUERY_SECRET.sub(r"\1***", text)


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """``value`` as a message quotes it: ``str(value)`` with control characters escaped (``\\n``, ``\\x1b`` ...),
    cut to ``limit`` characters with ``...`` (and the original length) when longer.

    Example: ``echo("9" * 5000)`` -> ``"99999...999... (5,000 characters)"`` (80 nines); ``echo("a\\nb")`` ->
    ``"a\\\\nb"``; ``echo("80GiB")`` -> ``"80GiB"`` (short printable input is unchanged).
    """
    text = value if isinstance(value, str) else str(value)
    n = len(text)
    head = text[:limit]
    if not head.isprintable():
        head = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in head)
    return head if n <= limit else f"{head}... ({n:,} characters)"


class KvplanError(Exception):
    """Base class of every error kvplan raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, field: str | None = None, hint: str | None = None):
        self.field = field
        self.hint = hint
        super().__init__(message)

    def one_line(self) -> str:
        """The single line shown to the user: ``field: message; hint``, whitespace collapsed, credentials masked
        (:func:`mask_secrets`), at most :data:`MAX_LINE_CHARS` characters."""
        msg = str(self)
        if self.field and not msg.startswith(self.field):
            msg = f"{self.field}: {msg}"
        if self.hint:
            msg = f"{msg}; {self.hint}"
        line = mask_secrets(" ".join(msg.split()))
        return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."


class InputError(KvplanError):
    """Bad user input: exit 2, one line naming the field and the fix."""

    exit_code = 2


class DoesNotFitError(KvplanError):
    """Raised only under ``--check`` when the target does not fit: exit 3."""

    exit_code = 3
