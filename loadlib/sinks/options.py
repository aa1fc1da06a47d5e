"""The InfluxDB sink's options (docs/influxdb.md), kept beside what reads them and added to the registry
(loadlib.options). Credentials are never options: INFLUX_TOKEN (v2) or INFLUX_USER + INFLUX_PASSWORD (v1) come only
from the environment."""

from __future__ import annotations

from loadlib.option import INFLUX, Option

INFLUX_OPTIONS: tuple[Option, ...] = (
    Option(
        "--influx-url",
        "InfluxDB base URL, e.g. http://127.0.0.1:8086; empty = no InfluxDB output. Credentials come only from the "
        "environment: INFLUX_TOKEN (v2) or INFLUX_USER + INFLUX_PASSWORD (v1).",
        INFLUX,
    ),
    Option("--influx-api", "v2 (InfluxDB 2.x/3.x /api/v2/write) or v1 (/write).", INFLUX, "v2"),
    Option("--influx-db", "v1: database.", INFLUX, "locust"),
    Option("--influx-rp", "v1: retention policy (default: the database's).", INFLUX, ""),
    Option("--influx-org", "v2: organisation (any value, e.g. '-', for v3).", INFLUX, ""),
    Option("--influx-bucket", "v2: bucket.", INFLUX, "locust"),
    Option(
        "--influx-buffer",
        "Most points buffered per node while InfluxDB is slow or down; beyond it the oldest are dropped and counted.",
        INFLUX,
        100_000,
        int,
        web_ui=False,
    ),
    Option("--influx-batch", "Points per write request.", INFLUX, 5000, int, web_ui=False),
    Option(
        "--llm-grafana-url",
        "Grafana's base URL (e.g. http://localhost:3000): the web UI's LLM charts link to the overview dashboard "
        "filtered to this run.",
        INFLUX,
        "",
        web_ui=False,
    ),
    Option("--influx-flush-interval", "Seconds between flushes.", INFLUX, 1.0, float, web_ui=False),
    Option(
        "--influx-close-timeout",
        "Seconds the last flush may take at test stop; what is left is counted as dropped.",
        INFLUX,
        5.0,
        float,
        web_ui=False,
    ),
)
