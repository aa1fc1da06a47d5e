"""Time-series output: every request attempt, worker health sample and endpoint event as an InfluxDB point, written
off the request path by one background greenlet per node (docs/influxdb.md).

Modules: `lineproto` (pure serialisation), `buffer` (bounded drop-oldest queue), `transports` (HTTP to InfluxDB v1/v2),
`influx` (the sink, on gevent), `config` and `options` (its settings). Nothing is imported here: the option registry
reads `options` without the sink, so a tool that only parses options never imports gevent.
"""
