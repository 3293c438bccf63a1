"""Engine-neutral facts a start-up log may hold: the GPU name (nvidia-smi, MoE config file names), the GPU
total (nvidia-smi's ``used / total MiB``) and the launch command with its flags."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from kvplan.inputs.logs.collect import Collector
from kvplan.inputs.logs.text import Candidate, clean_line
from kvplan.units import MiB as MIB

_GPU_NAME_RES = (
    re.compile(r"\bGPU \d{1,3}: ((?:NVIDIA|AMD|Tesla|Quadro)[^()\n]{1,60}?)\s*\(UUID"),  # nvidia-smi -L
    re.compile(r"\|\s*\d{1,3}\s+((?:NVIDIA|Tesla|Quadro)[^|]{1,40}?)\s+(?:On|Off)\s*\|"),  # nvidia-smi table
    re.compile(r"device_name=((?:NVIDIA|AMD)_[A-Za-z0-9_\-]{1,60}?)(?:,|\.json|\]|\s|$)"),  # MoE config file
    re.compile(r"\b(AMD Instinct MI\d{3}[A-Z]{0,2})\b"),
)
_SMI_MEM_RE = re.compile(r"\b\d{1,7}MiB\s*/\s*(\d{3,7})MiB\b")

_CLI_START_RE = re.compile(
    r"(?:python3?\s+-m\s+sglang\.launch_server|sglang\s+serve|python3?\s+-m\s+vllm\.entrypoints\.openai\.api_server"
    r"|vllm\s+serve)\b"
)
_CLI_FLAG_RE = re.compile(r"--([a-z][a-z0-9\-]{0,60})(?:[= ]\s*(\"[^\"]{0,300}\"|'[^']{0,300}'|[^\s\-][^\s]{0,300}))?")
_VLLM_MODEL_RE = re.compile(r"\s+([^\s\-$][^\s]{0,300})")
_INT_RE = re.compile(r"-?\d+")
_FLOAT_RE = re.compile(r"-?\d+\.\d*")


def read_gpu(c: Collector, line: str) -> None:
    """The first GPU name and the nvidia-smi total memory the log shows."""
    if c.gpu_name is None and ("NVIDIA" in line or "AMD" in line):
        for rx in _GPU_NAME_RES:
            m = rx.search(line)
            if m:
                c.gpu_name = " ".join(m.group(1).replace("_", " ").split())
                break
    if c.gpu_total is None and "MiB /" in line and (m := _SMI_MEM_RE.search(line)):
        c.gpu_total = int(m.group(1)) * MIB


def _flag_value(raw: str | None) -> Any:
    """A flag value as typed: no value -> True, an integer or decimal -> a number, else the unquoted text."""
    if raw is None:
        return True
    val = raw.strip("'\"")
    if _INT_RE.fullmatch(val):
        return int(val)
    if _FLOAT_RE.fullmatch(val):
        return float(val)
    return val


def _parse_cli(c: Collector, line: str, m: re.Match[str], nxt_lines: Iterator[str]) -> None:
    """Flags of a ``python -m sglang.launch_server`` / ``sglang serve`` / ``vllm serve`` command (with ``\\``
    continuations)."""
    text = line[m.start() : m.start() + 8000]
    for nxt in nxt_lines:
        if not text.rstrip().endswith("\\") or len(text) >= 16000:
            break
        text = text.rstrip()[:-1] + " " + clean_line(nxt.strip()[:2000])
    c.cli["command"] = m.group(0)
    after = text[m.end() - m.start() :]
    if m.group(0).startswith("vllm serve") and (pm := _VLLM_MODEL_RE.match(after)):
        c.cli_model = pm.group(1).strip("'\"")
    for fm in _CLI_FLAG_RE.finditer(after):
        c.cli.setdefault(fm.group(1).replace("-", "_"), _flag_value(fm.group(2)))
    for key in ("model_path", "model"):
        if isinstance(c.cli.get(key), str) and c.cli_model is None and not c.cli[key].startswith("$"):
            c.cli_model = c.cli[key]


def read_cli(c: Collector, line: str, cand: Candidate) -> None:
    """The first launch command in the log (``vllm serve MODEL --flag v``, ``python -m sglang.launch_server ...``)."""
    if not c.cli and ("launch_server" in line or "serve" in line) and (m := _CLI_START_RE.search(line)):
        _parse_cli(c, line, m, cand.following(60))
