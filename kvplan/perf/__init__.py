"""The speed model: one engine step at a time (layer ``perf``, between ``engines`` and ``planning``).

* :mod:`kvplan.perf.hardware` -- the GPU figures a step needs (dense TFLOPS per dtype, memory and link bandwidth),
  read from a preset's ``[perf]`` table, with ``--power-limit`` and the ``--gpu-*`` / ``--link-bandwidth`` overrides;
* :mod:`kvplan.perf.efficiency` -- the achievable fractions and per-kernel / per-step costs, one set per GPU class;
* :mod:`kvplan.perf.ops` -- a model's per-step work per family: linear FLOPs, weight bytes (MoE experts touched),
  attention FLOPs and KV bytes at a context, states;
* :mod:`kvplan.perf.comm` -- collectives (TP all-reduce, DP-attention gather / scatter, EP all-to-all);
* :mod:`kvplan.perf.schedule` -- the engine's schedule: prefill chunks, decode steps, CUDA graphs, speculative steps.

The arithmetic functions take floats and avoid ``min``/``max``/branches on values (``_lo``/``_hi`` below), so the
same formulas evaluate on numpy arrays (issue 23, sweep / solve).  docs/speed.md explains the model.
"""
