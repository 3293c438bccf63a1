"""kvplan: KV-cache capacity planner for LLM serving (SGLang, vLLM)."""

__version__ = "0.1.0"
