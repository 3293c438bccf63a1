"""kvplan: KV-cache capacity planner for LLM serving (SGLang, vLLM)."""

# The one version source: pyproject.toml reads it ([project] dynamic = ["version"], [tool.hatch.version]).
__version__ = "0.2.0"
