"""Reader for SGLang and vLLM startup logs: the numbers each engine prints while it sizes its KV cache.

The reader is keyword driven: for every line it looks for fixed marker texts with ``str.find`` and only
then applies a small, anchored regular expression to a bounded window after the marker. Prefixes such as
timestamps, ``docker logs -t`` / ``docker compose`` prefixes, ``[2025-01-23 19:35:15 TP3]``,
``(EngineCore_DP0 pid=12)`` or ``(Worker_TP3_EP3 pid=7)`` therefore never need to be matched, and no
pattern can backtrack catastrophically (every window is at most a few KiB).

Modules, by concern:

* :mod:`~kvplan.inputs.logs.text` -- clean-up (newlines, ANSI colours, control characters), the marker search
  that picks candidate lines, rank tags in line prefixes, bounded windows;
* :mod:`~kvplan.inputs.logs.reprs` -- the Python reprs engines print (``ServerArgs(...)``, dicts, ``k=v`` configs);
* :mod:`~kvplan.inputs.logs.sglang`, :mod:`~kvplan.inputs.logs.vllm` -- each engine's lines (cited there) as a
  table of line rules -> small readers; :mod:`~kvplan.inputs.logs.common` -- GPU name and the launch command;
* :mod:`~kvplan.inputs.logs.source` -- the bounded read and decoding of a log (path or ``-``);
  :mod:`~kvplan.inputs.logs.plausible` -- the plausibility rules on measured figures;
* :mod:`~kvplan.inputs.logs.collect` -- figures per rank; :mod:`~kvplan.inputs.logs.scan` -- the order the readers
  run in; :mod:`~kvplan.inputs.logs.facts` -- :class:`LogFacts`, :func:`parse_log`, :func:`read_log_file`;
* :mod:`~kvplan.inputs.logs.formats` -- the release-specific form of each sizing line and the releases that print
  it; :mod:`~kvplan.inputs.logs.versions` -- every release of each engine, in order;
  :mod:`~kvplan.inputs.logs.release` -- :func:`release_window`, the releases a log can come from.

Units: SGLang's "GB" divides by 2**30 (``get_available_gpu_memory`` and ``/ GB`` with ``GB = 1 << 30``), so
every GB/GiB figure becomes ``round(value * 2**30)`` bytes. A printed figure has two decimals: it is known to
+-0.005 GiB (about 5.4 MB).

Several ranks: free-memory and token figures are taken per rank (the first print of each rank, so a later
draft-model load does not replace the target's figures), then the minimum over ranks (SGLang sizes its pool
from the minimum over the TP group); usage figures (weight load, CUDA graph) take the maximum over ranks.
A rank is recognised from ``DPn``/``PPn``/``TPn``/``EPn`` tokens or ``pid=N`` in the line prefix.
"""

from kvplan.inputs.logs.facts import LogFacts, missing_for_measured, parse_log, read_log, read_log_file
from kvplan.inputs.logs.release import ReleaseWindow, release_window
from kvplan.units import GiB as GIB
from kvplan.units import MiB as MIB

__all__ = [
    "GIB",
    "MIB",
    "LogFacts",
    "ReleaseWindow",
    "missing_for_measured",
    "parse_log",
    "read_log",
    "read_log_file",
    "release_window",
]
