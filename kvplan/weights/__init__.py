"""Weights as the engine loads them (see kvplan.weights.estimate)."""

#: bumped whenever the estimate's numbers change for the same inputs (callers that cache estimates key on it); kept
#: here, not in estimate.py, so that a warm-cache ``kvplan fit`` can check it without importing the estimator
ESTIMATE_REVISION = 12
