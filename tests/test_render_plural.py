"""The fit table counts requests in English: "1 request", "3 requests", "0.5 requests" (kvplan/views/render.py)."""

from __future__ import annotations

from kvplan.views.render import _requests


def test_request_counts_read_as_english():
    assert _requests(1) == "1 request"
    assert _requests(3) == "3 requests"
    assert _requests(0.5) == "0.5 requests"
    assert _requests(1.0) == "1 request"
    assert _requests(1_024) == "1,024 requests"
