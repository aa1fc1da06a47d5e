"""Verdicts on a finished run: pass/fail thresholds on the LLM metrics of the end-of-run summary.

`thresholds` parses k6-like expressions (`ttft p95 < 150ms`, `error_rate{class=rate_limited} < 5%`) against one
metric registry and refuses anything it does not know, because a threshold that is silently ignored is worse than
none. `evaluate` checks parsed thresholds against the JSON summary (loadlib.metrics.summary) and gives one JSON-able
result per threshold; reporters and the exit code are built on those results. Both are pure: no Locust, no gevent,
so they also run on a summary loaded back from a file. See docs/thresholds.md.
"""
