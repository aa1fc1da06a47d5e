"""Time-series output: every request attempt, worker health sample and endpoint event as an InfluxDB point, written
off the request path by one background greenlet per node (docs/influxdb.md).

Modules: `lineproto` (pure serialisation), `buffer` (bounded drop-oldest queue), `transports` (HTTP to InfluxDB v1/v2),
`influx` (the sink), `plugin` (Locust wiring; imports Locust, so it is not imported here).
"""

from loadlib.sinks.buffer import DropOldestBuffer
from loadlib.sinks.influx import InfluxSink, SinkStats
from loadlib.sinks.lineproto import event_line, request_line, worker_line
from loadlib.sinks.transports import InfluxV1Transport, InfluxV2Transport, Transport, WriteError

__all__ = [
    "DropOldestBuffer",
    "InfluxSink",
    "InfluxV1Transport",
    "InfluxV2Transport",
    "SinkStats",
    "Transport",
    "WriteError",
    "event_line",
    "request_line",
    "worker_line",
]
