"""Launch commands, the words part: reading the text, splitting it into shell words and commands, finding the engine
entry point (python -m, ``sglang serve``, ``vllm serve``, docker, env prefixes and wrappers) and the release a docker
image tag or a ``pip install`` pin names.  :mod:`kvplan.inputs.launch` maps the flags; this module knows no flag.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.errors import InputError

_FIELD = "launch command"
MAX_LAUNCH_BYTES = 1 << 20


# ------------------------------------------------------------------------------------------------
# Reading the text
# ------------------------------------------------------------------------------------------------


def read_launch_text(source: str) -> str:
    """Read a launch command from a file path, or from standard input when ``source`` is ``-``, through the bounded
    reader (:mod:`kvplan.inputs.read`: a regular file of at most 1 MiB, stdin streamed under the same cap; a FIFO or a
    device is refused without blocking), strict UTF-8."""
    from kvplan.inputs.read import read_text

    data = read_text(source, field="--from-launch", what="a launch command", max_bytes=MAX_LAUNCH_BYTES)
    where = "standard input" if source == "-" else source
    if len(data) > MAX_LAUNCH_BYTES:
        raise InputError(f"{where} is larger than 1 MiB; that is not a launch command", field="--from-launch")
    if not data.strip():
        raise InputError(f"{where} is empty", field="--from-launch", hint="put the engine's launch command in it")
    return data


_REDIRECT = re.compile(r"(?:(?<=\s)|^)(?:\d+|&)?(?:>>?|<)(?:&\d+|&-|\s*[^\s;&|<>]+)")


def _strip_comments(text: str) -> str:
    """Drop shell comments: an unquoted ``#`` at the start of a word runs to the end of the line."""
    out: list[str] = []
    i, n, quote = 0, len(text), ""
    while i < n:
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == "\\" and quote == '"' and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch == "\\" and i + 1 < n:
            out.append(ch + text[i + 1])
            i += 2
            continue
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


_SEPARATOR_CHARS = set(";&|\n()")

#: the most shell words one launch command may have (a real one has a few hundred at most); more is exit 2
MAX_LAUNCH_WORDS = 4_096
#: the longest shell word (a JSON value of --speculative-config / --hf-overrides is well under 1 KiB): ``shlex``
#: builds each word a character at a time in quadratic time, so a longer word is refused before it is split
MAX_WORD_CHARS = 8_192

# one piece of shell text: a run of plain characters, an escape, a closed quoted string, blanks, separators, or a
# quote that is never closed (matched last: the closed forms are tried first)
_PIECE = re.compile(r"""[^ \t\r\n;&|()'"\\]+|\\.?|'[^']*'|"(?:[^"\\]|\\.)*"|[ \t\r]+|[\n;&|()]+|['"]""", re.S)


def _too_many_words(n: int) -> InputError:
    return InputError(
        f"the launch command has more than {MAX_LAUNCH_WORDS:,} words" + (f" ({n:,})" if n else ""),
        field=_FIELD,
        hint="pass one server's launch command",
    )


def _too_long_word(n: int) -> InputError:
    return InputError(
        f"the launch command has a word of {n:,} characters (at most {MAX_WORD_CHARS:,})",
        field=_FIELD,
        hint="pass long JSON values as files, as the engines allow",
    )


def check_words(text: str) -> None:
    """Refuse shell text whose words ``shlex`` would split slowly, in one linear regex pass: more than
    :data:`MAX_LAUNCH_WORDS` words, a word over :data:`MAX_WORD_CHARS` characters (quotes included), or a quote
    that is never closed (shlex reads such a word to the end of the text before it refuses it).  Example: 100,000
    unknown flags or a 400,000-character word take one pass here instead of ~10 s in shlex."""
    words, cur = 0, 0
    for m in _PIECE.finditer(text):
        piece = m.group()
        c = piece[0]
        if c in " \t\r\n;&|()":
            if cur:
                words, cur = words + 1, 0
                if words > MAX_LAUNCH_WORDS:
                    raise _too_many_words(0)
            continue
        if piece in ("'", '"'):
            raise InputError(
                "cannot split the launch command: no closing quotation",
                field=_FIELD,
                hint="check the quotes around JSON values",
            )
        cur += len(piece)
        if cur > MAX_WORD_CHARS:
            raise _too_long_word(_word_length(text, m.start() - cur + len(piece)))
    if cur:
        words += 1
    if words > MAX_LAUNCH_WORDS:
        raise _too_many_words(0)


def _word_length(text: str, start: int) -> int:
    """The length of the over-long word starting at ``start`` (for the message; one more pass over it)."""
    cur = 0
    for m in _PIECE.finditer(text, start):
        piece = m.group()
        if piece[0] in " \t\r\n;&|()" or piece in ("'", '"'):
            break
        cur += len(piece)
    return cur


def check_argv(words: Sequence[str]) -> None:
    """The same caps for a command given as words (``kvplan fit -- vllm serve ...``)."""
    if len(words) > MAX_LAUNCH_WORDS:
        raise _too_many_words(len(words))
    longest = max((len(w) for w in words), default=0)
    if longest > MAX_WORD_CHARS:
        raise _too_long_word(longest)


def _segments(argv_or_text: Sequence[str] | str) -> list[list[str]]:
    """Split the input into simple commands (lists of words)."""
    if isinstance(argv_or_text, str):
        text = argv_or_text
    else:
        words = [str(w) for w in argv_or_text]
        if len(words) == 1 and any(c in words[0] for c in " \t\n"):
            text = words[0]  # the whole command was quoted into one argument
        else:
            check_argv(words)
            return [words] if words else []
    text = re.sub(r"\\[ \t]*\r?\n", " ", text)  # backslash-newline continues the line
    if "#" in text:  # a character loop: only when there can be a comment
        text = _strip_comments(text)
    text = "\n".join(_REDIRECT.sub(" ", line) for line in text.split("\n"))
    check_words(text)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|\n()")
    lexer.whitespace = " \t\r"
    lexer.commenters = ""
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise InputError(
            f"cannot split the launch command: {str(exc).lower()}",
            field=_FIELD,
            hint="check the quotes around JSON values",
        ) from None
    segs: list[list[str]] = [[]]
    for tok in tokens:
        if tok and set(tok) <= _SEPARATOR_CHARS:
            if segs[-1]:
                segs.append([])
        else:
            segs[-1].append(tok)
    return [s for s in segs if s]


# ------------------------------------------------------------------------------------------------
# Finding the engine entry point
# ------------------------------------------------------------------------------------------------

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
_MODULES = {
    "sglang.launch_server": ("sglang", "module"),
    "sglang_router.launch_server": ("sglang", "router"),
    "vllm.entrypoints.openai.api_server": ("vllm", "module"),
}
# docker run / podman run options that take a value (everything else with a leading dash is a switch
# unless written --opt=value)
_DOCKER_VALUE_OPTS = {
    "-e",
    "--env",
    "--env-file",
    "-v",
    "--volume",
    "-p",
    "--publish",
    "--name",
    "--shm-size",
    "--gpus",
    "--ipc",
    "--network",
    "--net",
    "--entrypoint",
    "-w",
    "--workdir",
    "--runtime",
    "--ulimit",
    "--device",
    "--cpus",
    "-m",
    "--memory",
    "-u",
    "--user",
    "--mount",
    "-l",
    "--label",
    "--restart",
    "--cap-add",
    "--cap-drop",
    "--security-opt",
    "--platform",
    "--pull",
    "-h",
    "--hostname",
    "--add-host",
    "--log-driver",
    "--log-opt",
    "--tmpfs",
    "--group-add",
    "--cpuset-cpus",
    "--memory-swap",
    "--pid",
    "--uts",
    "--userns",
    "--dns",
    "--health-cmd",
    "--stop-signal",
    "--stop-timeout",
    "--cidfile",
    "--label-file",
    "--expose",
    "--link",
    "--volumes-from",
    "--device-cgroup-rule",
    "--sysctl",
    "--storage-opt",
    "--ip",
    "--mac-address",
}


_SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)


def _env_assignment(word: str) -> tuple[str, str] | None:
    """``NAME=value`` -> (NAME, value); values of secret-looking names (HF_TOKEN, *_API_KEY ...) are masked."""
    name, eq, value = word.partition("=")
    if eq and _ENV_NAME.fullmatch(name):
        return name, ("***" if value and _SECRET.search(name) else value)
    return None


@dataclass
class _Entry:
    engine: str
    style: str  # "module" | "serve" | "router" | "image"
    args: list[str]
    image: str | None = None  # the docker / podman image it runs in


def _find_entry(words: list[str], env: dict[str, str]) -> _Entry | None:
    """The first engine entry point in one simple command; env assignments seen before it go to ``env``."""
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        a = _env_assignment(w)
        if a and not w.startswith("-"):
            env[a[0]] = a[1]
            i += 1
            continue
        base = os.path.basename(w)
        nxt = words[i + 1] if i + 1 < n else None
        if base in ("sglang", "vllm") and nxt == "serve":
            return _Entry(base, "serve", words[i + 2 :])
        if _PYTHON.match(base):
            j = i + 1
            while j < n and words[j].startswith("-"):
                opt = words[j]
                if opt == "-m" and j + 1 < n:
                    mod, rest = words[j + 1], words[j + 2 :]
                    break
                if opt.startswith("-m") and len(opt) > 2:
                    mod, rest = opt[2:], words[j + 1 :]
                    break
                j += 2 if opt in ("-X", "-W", "-c") else 1
            else:
                mod, rest = None, []
            if mod in _MODULES:
                eng, style = _MODULES[mod]
                return _Entry(eng, style, rest)
            if mod in ("vllm.entrypoints.cli.main", "sglang.cli.main") and rest[:1] == ["serve"]:
                return _Entry(mod.split(".")[0], "serve", rest[1:])
        if base in ("docker", "podman") and nxt == "run":
            return _docker_entry(words[i + 2 :], env)
        i += 1
    return None


def _docker_entry(words: list[str], env: dict[str, str]) -> _Entry | None:
    i, n = 0, len(words)
    while i < n and words[i].startswith("-"):
        opt, eq, val = words[i].partition("=")
        takes = opt in _DOCKER_VALUE_OPTS and not eq
        if takes:
            val = words[i + 1] if i + 1 < n else ""
        if opt in ("-e", "--env") and val:
            a = _env_assignment(val)
            if a:
                env[a[0]] = a[1]
        i += 2 if takes else 1
    if i >= n:
        return None
    image, cmd = words[i], words[i + 1 :]
    inner = _find_entry(cmd, env)
    if inner is not None:
        inner.image = image
        return inner
    repo = image.split("@")[0].rsplit(":", 1)[0] if "/" in image or ":" in image else image
    if "vllm" in repo.lower():
        # The vllm/vllm-openai image's entrypoint is the OpenAI server: the words after the image are its arguments.
        return _Entry("vllm", "image", cmd[1:] if cmd[:1] == ["serve"] else cmd, image=image)
    if "sglang" in repo.lower():
        raise InputError(
            f"the {image} image has no server entrypoint: put the launch command after the image name",
            field=_FIELD,
            hint="e.g. docker run ... lmsysorg/sglang python3 -m sglang.launch_server ...",
        )
    return None


# ------------------------------------------------------------------------------------------------
# Flag tables (names and kinds, from the engines' parsers: see the module docstring)
# ------------------------------------------------------------------------------------------------


_IMAGE_TAG = re.compile(r"^v?(\d+\.\d+(?:\.\d+){0,2}(?:rc\d+)?(?:\.post\d+)?)(?:$|[-_+])")
_PIP_PIN = re.compile(r"^['\"]?(sglang|vllm)(?:\[[^\]]*\])?==([0-9][\w.+]*)['\"]?$")


def image_release(image: str, engine: str) -> str | None:
    """The release in a docker image tag of ``engine``'s image: ``lmsysorg/sglang:v0.4.6.post1-cu124`` ->
    "0.4.6.post1", ``vllm/vllm-openai:v0.10.1`` -> "0.10.1"; None for ``latest``, a digest, or another image."""
    name = image.split("@")[0]
    repo, colon, tag = name.rpartition(":")
    if not colon or "/" in tag or engine not in repo.lower():
        return None
    m = _IMAGE_TAG.match(tag)
    return m.group(1) if m else None


def pip_release(segments: Sequence[Sequence[str]], engine: str) -> str | None:
    """An exact pin installed in the command (``pip install sglang==0.4.6.post1``, ``pip3 install "vllm==0.10.1"``,
    ``uv pip install sglang[all]==0.5.4``): the last one wins; ranges (``>=``) say no release."""
    found = None
    for words in segments:
        for k, w in enumerate(words):
            if w == "install" and k > 0 and os.path.basename(words[k - 1]) in ("pip", "pip3"):
                for arg in words[k + 1 :]:
                    m = _PIP_PIN.match(arg)
                    if m and m.group(1) == engine:
                        found = m.group(2)
    return found


# ------------------------------------------------------------------------------------------------
# Caps on flags and on the lines that list them
# ------------------------------------------------------------------------------------------------

#: the most flags one launch command may have (a real one has well under a hundred): each is looked up in the
#: release's table, an unknown one with a did-you-mean search (~2.5 ms); more is exit 2
MAX_LAUNCH_FLAGS = 512
#: flags named in one warning line or as refusals; the rest are counted
MAX_LISTED = 10


def listed(items: Sequence[str], limit: int = MAX_LISTED) -> str:
    """``a, b, c`` for at most ``limit`` items, then ``, and N more``.  Example: ``listed(["--a", "--b", "--c"],
    2) == "--a, --b, and 1 more"``."""
    head = ", ".join(items[:limit])
    return head if len(items) <= limit else f"{head}, and {len(items) - limit:,} more"


def _listed_refusals(refusals: Sequence[str]) -> tuple[str, ...]:
    """The parser's refusals, the first :data:`MAX_LISTED` and one line counting the others."""
    out = tuple(dict.fromkeys(refusals))
    if len(out) <= MAX_LISTED:
        return out
    return (*out[:MAX_LISTED], f"and {len(out) - MAX_LISTED:,} more arguments it refuses")


def check_flag_count(args: Sequence[str]) -> None:
    """Refuse more than :data:`MAX_LAUNCH_FLAGS` words that start with ``-`` (negative numbers excepted) before
    any is looked up in a flag table."""
    flags = sum(1 for w in args if w.startswith("-") and not _NEGATIVE.fullmatch(w))
    if flags > MAX_LAUNCH_FLAGS:
        raise InputError(
            f"the launch command has {flags:,} flags (at most {MAX_LAUNCH_FLAGS:,})",
            field=_FIELD,
            hint="pass one server's launch command",
        )


_NEGATIVE = re.compile(r"-\d+(\.\d+)?")  # launch._looks_negative: a value, not a flag
