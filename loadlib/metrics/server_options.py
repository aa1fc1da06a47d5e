"""The options of the server's own metrics (docs/capacity.md, "Server-side metrics"), kept beside what reads them
and added to the registry (loadlib.options). A deployment's settings: on the command line, in a config file or the
environment, not in the web UI's start form."""

from __future__ import annotations

from loadlib.option import OUTPUT, Option

SERVER_METRICS_OPTIONS: tuple[Option, ...] = (
    Option(
        "--llm-server-metrics",
        "The server's Prometheus endpoint (e.g. http://vllm:8000/metrics; vLLM, SGLang, TGI or LiteLLM names): "
        "scraped by the master during the run for queue depth, running requests, KV-cache use and the server's TTFT.",
        OUTPUT,
        "",
        web_ui=False,
    ),
    Option(
        "--llm-server-metrics-interval",
        "Seconds between scrapes (each may take at most this long).",
        OUTPUT,
        1.0,
        float,
        web_ui=False,
    ),
)
