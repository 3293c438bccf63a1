"""The version line of ``kvplan --version`` and ``kvplan version`` (no typer import: ``--version`` builds no
command)."""

from __future__ import annotations


def version_line() -> str:
    """``kvplan 0.2.0 (SGLang 0.5.23, vLLM 0.34.0 rules)``: the first line of ``kvplan version``, all of
    ``kvplan --version`` (the newest release of each engine: its rules are the default)."""
    from kvplan import __version__, supported

    return f"kvplan {__version__} (SGLang {supported.SGLANG[1]}, vLLM {supported.VLLM[1]} rules)"
