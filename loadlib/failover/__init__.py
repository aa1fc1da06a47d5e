"""Failover across endpoints: the pool a run targets, how a user-visible request picks an endpoint, retries and hedges,
the circuit breaker each endpoint has on each node, drills that break an endpoint on schedule, and the figures a
drill yields (docs/failover.md).

Pure modules (no Locust, no gevent): `pool` (configuration), `breaker`, `retry`, `routing`, `ledger` (drill figures).
"""
