"""Architectures SGLang 0.5.23 has no model class for: ``kvplan fit`` stops with SGLang's own reason (exit 2).

With ``--model-impl auto`` (the default) SGLang falls back to the Transformers implementation, which it refuses
for a model whose ``PreTrainedModel`` does not set ``_supports_attention_backend``.

Source: sgl-project/sglang python/sglang/srt/model_loader/utils.py ``resolve_transformers_arch`` (no
``models/jamba*.py`` in any release 0.4.10 - 0.5.23); transformers 5.19.0 ``models/jamba/modeling_jamba.py``
(``JambaPreTrainedModel``), the version SGLang 0.5.23 pins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.errors import InputError

#: architecture -> why SGLang cannot serve it
SGLANG_NO_MODEL_CLASS: Mapping[str, str] = {
    "JambaForCausalLM": (
        "JambaForCausalLM has no SGLang implementation and the Transformers implementation is not "
        "compatible with SGLang (JambaPreTrainedModel does not support SGLang's attention backend; "
        "SGLang has no Mamba-1 state pool)"
    ),
}


def check_sglang_architecture(config: Mapping[str, Any]) -> None:
    """InputError on ``--model`` when SGLang 0.5.23 cannot load the config's architecture.

    Example: ``ai21labs/Jamba-v0.1`` -> "SGLang cannot serve ai21labs/Jamba-v0.1: JambaForCausalLM has no SGLang
    implementation ..." (hint: ``--engine vllm``).
    """
    archs = config.get("architectures") if isinstance(config, Mapping) else None
    for arch in archs if isinstance(archs, list) else []:
        reason = SGLANG_NO_MODEL_CLASS.get(arch) if isinstance(arch, str) else None
        if reason:
            raise InputError(
                f"SGLang 0.5.23 cannot serve this model: {reason}",
                field="--model",
                hint="plan it with --engine vllm (vLLM has a JambaForCausalLM model)",
            )
