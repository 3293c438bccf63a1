"""Engine release numbers: the one version type (:class:`Version`) and the one parser (:func:`parse_version`).

Every place that reads or orders an SGLang or vLLM release goes through here: the ``--engine-version`` readers of
both engines, the release windows, the log reader's release lists, the flag tables, the weight kernels' release
gates.  What an engine *does* with a version (SGLang sizes an rc as its release and a ``.devN`` build as the release
before it; vLLM keeps the first three numbers; a main-branch build name) is that engine's rule and lives with it; the
reading and the order live here, once.

Forms read (the PEP 440 subset the engines publish, plus the docker-tag spellings):

- ``0.5.23``, ``v0.5.23``, ``0.9``, ``1``, ``0.10.1.1`` (one to four release numbers; ``00.5.23`` is no version)
- ``0.11.0rc1``, ``0.5.0a1``, ``0.5.0b2`` (pre-releases), ``0.5.4.post1``, ``0.5.4post1``
- ``0.5.3.dev20250801``, ``0.11.0rc2.dev98`` (development builds)
- ``0.11.0rc2.dev98+g393de22d2`` (a local label) and ``v0.5.4.post1-cu126`` (a docker tag's suffix): kept in
  :attr:`Version.local`, ignored by the order

Order (PEP 440): ``X.Y.Z.devN < X.Y.ZaN < X.Y.ZbN < X.Y.ZrcN.devM < X.Y.ZrcN < X.Y.Z < X.Y.Z.postN.devM <
X.Y.Z.postN``, and missing release numbers are zeros (``0.9 == 0.9.0``, ``0.10.1 < 0.10.1.1 < 0.10.2``).

Example: ``parse_version("v0.5.4.post1")`` -> ``Version('0.5.4.post1')``, ``.triple`` = (0, 5, 4);
``parse_version("0.11.0rc2.dev98+g393de22d2") < parse_version("0.11.0rc2") < parse_version("0.11.0")``;
``parse_version("latest")`` is None.

(A plain class with ``__slots__``, not a dataclass: the default plan's start-up imports this module.)
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["Version", "parse_version"]

_PATTERN = re.compile(
    r"v?((?:0|[1-9]\d{0,7})(?:\.(?:0|[1-9]\d{0,7})){0,3})"  # one to four release numbers, no leading zero
    r"(?:(a|b|rc)(\d{1,8}))?"  # a pre-release
    r"(?:\.?post(\d{1,8}))?"  # a post-release
    r"(?:\.?dev(\d{1,8}))?"  # a development build
    r"(?:[+-]([0-9A-Za-z][0-9A-Za-z._-]{0,80}))?"  # a local label (+g393de22d2) or a docker tag suffix (-cu126)
)
_PRE_RANK = {"a": -3, "b": -2, "rc": -1}
_INF = 1 << 62  # sorts after every number a version holds


class Version:
    """One engine release number, frozen and ordered (the module docstring gives the forms and the order).

    ``release`` holds one to four numbers as written; ``pre`` is ``("rc", 1)`` / ``("a", 1)`` / ``("b", 1)`` or
    None; ``post`` and ``dev`` their numbers or None; ``local`` the ``+label`` / ``-suffix`` or None (never ordered).
    """

    __slots__ = ("_key", "dev", "local", "post", "pre", "release")

    release: tuple[int, ...]
    pre: tuple[str, int] | None
    post: int | None
    dev: int | None
    local: str | None
    _key: tuple[int, ...]

    def __init__(
        self,
        release: tuple[int, ...],
        *,
        pre: tuple[str, int] | None = None,
        post: int | None = None,
        dev: int | None = None,
        local: str | None = None,
    ) -> None:
        if not 1 <= len(release) <= 4 or any(n < 0 for n in release):
            raise ValueError(f"a version has one to four non-negative release numbers, not {release!r}")
        if pre is not None and pre[0] not in _PRE_RANK:
            raise ValueError(f"a pre-release is a, b or rc, not {pre[0]!r}")
        nums = (*release, 0, 0, 0)[:4]
        if pre is None and post is None and dev is not None:
            stage: tuple[int, int] = (-4, 0)  # X.Y.Z.devN: before every pre-release of X.Y.Z
        elif pre is not None:
            stage = (_PRE_RANK[pre[0]], pre[1])
        else:
            stage = (0, 0)
        key = (*nums, *stage, -1 if post is None else post, _INF if dev is None else dev)
        for name, value in (
            ("release", tuple(release)),
            ("pre", pre),
            ("post", post),
            ("dev", dev),
            ("local", local),
            ("_key", key),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Version is frozen: cannot set {name}")

    @classmethod
    def of(cls, text: str) -> Version:
        """:func:`parse_version` of a literal kvplan itself holds (a table row, a ``since``): ValueError when it
        is not a version -- kvplan's bug, never bad input.  Example: ``Version.of("0.5.4.post1").post`` = 1."""
        v = parse_version(text)
        if v is None:
            raise ValueError(f"not a version: {text!r}")
        return v

    @property
    def major(self) -> int:
        return self.release[0]

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) > 1 else 0

    @property
    def patch(self) -> int:
        return self.release[2] if len(self.release) > 2 else 0

    @property
    def triple(self) -> tuple[int, int, int]:
        """The first three release numbers, zero-padded: ``0.10.1.1`` / ``0.11.0rc2`` -> (0, 10, 1) / (0, 11, 0)."""
        return self.major, self.minor, self.patch

    @property
    def base(self) -> Version:
        """The final release of the same numbers: ``0.11.0rc2.dev98`` -> ``0.11.0``; ``0.5.4.post1`` -> ``0.5.4``."""
        return Version(self.release)

    @property
    def is_final(self) -> bool:
        """No pre-release, post-release or development part (a local label allowed)."""
        return self.pre is None and self.post is None and self.dev is None

    def __str__(self) -> str:
        out = ".".join(map(str, self.release))
        if self.pre is not None:
            out += f"{self.pre[0]}{self.pre[1]}"
        if self.post is not None:
            out += f".post{self.post}"
        if self.dev is not None:
            out += f".dev{self.dev}"
        return out + (f"+{self.local}" if self.local else "")

    def __repr__(self) -> str:
        return f"Version({str(self)!r})"

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key == other._key

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, Version) or self._key != other._key

    def __lt__(self, other: Version) -> bool:
        return self._key < other._key

    def __le__(self, other: Version) -> bool:
        return self._key <= other._key

    def __gt__(self, other: Version) -> bool:
        return self._key > other._key

    def __ge__(self, other: Version) -> bool:
        return self._key >= other._key


def parse_version(text: object) -> Version | None:
    """The :class:`Version` a string spells, None when it is not one (``"latest"``, ``""``, ``"main-2025-08-01"``,
    anything but a ``str``).  Surrounding blanks are ignored.

    Examples: ``"0.4.7.post1"`` -> 0.4.7.post1; ``"v0.10.1"`` -> 0.10.1; ``"0.11.0rc1"`` -> 0.11.0rc1;
    ``"0.5.3.dev20250801"`` -> 0.5.3.dev20250801; ``"v0.5.4.post1-cu126"`` -> 0.5.4.post1 (local ``cu126``).
    """
    return _parse(text.strip()) if isinstance(text, str) else None


@lru_cache(maxsize=1024)
def _parse(text: str) -> Version | None:
    m = _PATTERN.fullmatch(text)
    if m is None:
        return None
    nums, pre, pre_n, post, dev, local = m.groups()
    return Version(
        tuple(int(p) for p in nums.split(".")),
        pre=(pre, int(pre_n)) if pre else None,
        post=None if post is None else int(post),
        dev=None if dev is None else int(dev),
        local=local,
    )
