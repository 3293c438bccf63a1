"""kvplan: KV-cache capacity planner for LLM serving (SGLang, vLLM).

The Python API (docs/api.md), for a notebook or a script::

    from kvplan import Deployment, fit, sweep
    res = fit(Deployment(model="qwen3-32b", gpu="h100-sxm", tp=2))
    res.kv_pool_tokens, res.max_concurrency, res.fits

Every public name (:data:`__all__`) lives in :mod:`kvplan.api` and is imported from there the first time it is
asked for (PEP 562 ``__getattr__``): ``import kvplan``, which every ``kvplan`` command runs first, imports nothing
but this file (tests/test_startup_imports.py, tests/test_api.py).
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (bare `import kvplan` does not load it)
if TYPE_CHECKING:
    from typing import Any

# The one version source: pyproject.toml reads it ([project] dynamic = ["version"], [tool.hatch.version]).
__version__ = "0.2.0"

#: the stable Python surface (docs/api.md; CHANGELOG.md says when it changes); each name but ``__version__`` is
#: an attribute of kvplan.api, resolved on first use
__all__ = [
    "Deployment",
    "FitResult",
    "InputError",
    "KvplanError",
    "SpeedResult",
    "__version__",
    "fit",
    "solve",
    "speed",
    "sweep",
]

#: the module every lazy name comes from (tests/test_architecture.py: the package root reaches up to it only)
_API_MODULE = "kvplan.api"


def __getattr__(name: str) -> "Any":
    """``kvplan.fit`` and the other names of :data:`__all__`: imported from :mod:`kvplan.api` on first use, then
    kept in this module's namespace.  Any other name is an AttributeError (so ``from kvplan import supported``
    still finds the submodule)."""
    if name in __all__:
        import importlib

        value = getattr(importlib.import_module(_API_MODULE), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
