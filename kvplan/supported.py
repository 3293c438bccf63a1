"""The engine releases kvplan has rules for: declared once here, read by each engine's release table
(``kvplan.engines.sglang.releases.SUPPORTED``, ``kvplan.engines.vllm.releases.SUPPORTED``) and by ``kvplan version``,
which must answer without loading an engine."""

from __future__ import annotations

#: SGLang: every release from 0.3.0 to 0.5.23 (post, rc and main-branch builds map to their release)
SGLANG: tuple[str, str] = ("0.3.0", "0.5.23")
#: vLLM: the V0 engine from 0.5.0 to the newest, 0.34.x
VLLM: tuple[str, str] = ("0.5.0", "0.34.0")
