"""Incidents from the breaker timeline (loadlib/failover/incidents.py): a node's timeline of an endpoint, and the
master's grouping of the nodes' timelines into incidents of the run with per-worker times."""

from __future__ import annotations

from loadlib.failover.incidents import Incidents, incident_figures, incident_line
from loadlib.failover.ledger import Ledger

T = 1_000.0


def outage(node: Incidents, shift: float = 0.0) -> None:
    """A primary that fails from T+1 (three failures open the breaker), a request failed over at T+1.2, the breaker
    closes at T+4 after a probe; the last failure the node saw is at T+2.5 (a probe that failed)."""
    node.attempt("primary", T + 0.5 + shift, T + 0.9 + shift, False)  # an answer before the outage
    for k in range(3):
        node.attempt("primary", T + 0.95 + shift, T + 1.0 + shift + k * 0.05, True)
    node.user_request(T + 1.05 + shift, "primary", None, False)  # a user-visible error
    node.transition("primary", "open", T + 1.1 + shift)
    node.user_request(T + 1.2 + shift, "primary", "secondary", True)
    node.transition("primary", "half_open", T + 2.0 + shift)
    node.attempt("primary", T + 2.0 + shift, T + 2.5 + shift, True)
    node.transition("primary", "open", T + 2.5 + shift)
    node.transition("primary", "half_open", T + 3.5 + shift)
    node.attempt("primary", T + 3.5 + shift, T + 4.0 + shift, False)
    node.transition("primary", "closed", T + 4.0 + shift)
    node.user_request(T + 4.1 + shift, "primary", "primary", True)  # after the incident: not counted


def test_one_node_from_first_failure_to_closing() -> None:
    node = Incidents()
    outage(node)
    node.keep_own("local")
    [f] = incident_figures(node.by_worker, T, [])
    assert (f["endpoint"], f["start"], f["end"], f["ongoing"], f["at_s"]) == ("primary", T + 1.0, T + 4.0, False, 1.0)
    assert f["detect_s"]["per_worker"] == {"local": 0.1}
    assert f["failover_s"]["per_worker"] == {"local": 0.2}
    assert f["failback_s"]["per_worker"] == {"local": 1.5}  # closed - the last failure (the failed probe)
    assert (f["user_requests"], f["user_errors"], f["user_error_rate"], f["drill"]) == (2, 1, 0.5, None)
    assert "incident 1 primary at +1.0 s for 3.0 s" in incident_line(f)


def test_an_answer_to_a_request_sent_after_the_first_failure_ends_the_streak() -> None:
    node = Incidents()
    node.attempt("primary", T, T + 1.0, True)
    node.attempt("primary", T + 0.5, T + 1.1, False)  # sent before the failure: says nothing of now
    node.attempt("primary", T + 1.2, T + 2.0, True)
    node.attempt("primary", T + 1.05, T + 2.1, False)  # sent after the failure at T+1: the endpoint answers
    node.attempt("primary", T + 2.2, T + 3.0, True)
    node.transition("primary", "open", T + 3.1)
    node.keep_own("w")
    [f] = incident_figures(node.by_worker, T, [])
    assert f["start"] == T + 3.0 and f["ongoing"] and f["end"] is None and f["failback_s"]["max"] is None


def test_no_incident_without_the_breaker_opening() -> None:
    node = Incidents()
    node.attempt("primary", T, T + 1.0, True)
    node.attempt("primary", T, T + 1.0, None)
    node.keep_own("w")
    assert incident_figures(node.by_worker, T, []) == []


def test_workers_overlapping_in_time_are_one_incident_with_per_worker_times() -> None:
    master, w1, w2, w3 = Incidents(), Incidents(), Incidents(), Incidents()
    outage(w1)
    outage(w2, 0.3)
    outage(w3, 10.0)  # a second outage later
    for name, w in (("w1", w1), ("w2", w2), ("w3", w3)):
        master.merge(name, w.ship())
    first, second = incident_figures(master.by_worker, T, [(1, "primary", T + 0.8, T + 3.0)])
    assert first["workers"] == ["w1", "w2"] and first["drill"] == 1 and second["workers"] == ["w3"]
    assert first["start"] == T + 1.0 and first["end"] == T + 4.3 and first["user_requests"] == 4
    assert first["detect_s"]["p50"] == 0.1 and first["failover_s"]["max"] == 0.2
    assert second["index"] == 2 and second["drill"] is None


def test_a_changed_incident_is_shipped_whole_and_replaced_on_the_master() -> None:
    master, node = Incidents(), Incidents()
    node.attempt("primary", T, T + 1.0, True)
    node.transition("primary", "open", T + 1.1)
    master.merge("w", node.ship())
    assert node.ship() == []
    node.transition("primary", "closed", T + 6.0)
    master.merge("w", node.ship())
    [f] = incident_figures(master.by_worker, T, [])
    assert f["end"] == T + 6.0 and f["failback_s"]["per_worker"] == {"w": 5.0}


def test_the_ledger_ships_its_incidents_to_the_master() -> None:
    worker, master = Ledger("w1"), Ledger("master")
    worker.start(T)
    master.start(T)
    worker.attempt("primary", False, T + 1.0, T + 0.9, True)
    worker.transition("primary", "closed", "open", T + 1.01, "1 consecutive failures (http_5xx)")
    worker.user_request(T + 1.0, T + 1.3, "primary", "secondary", True, 100.0, 2)
    master.merge("w1", worker.ship())
    [f] = incident_figures(master.incidents.by_worker, master.t0, [])
    assert f["detect_s"]["per_worker"] == {"w1": 0.01} and f["failover_s"]["per_worker"] == {"w1": 0.3}


def test_a_flapping_breaker_is_bounded() -> None:
    node = Incidents(max_incidents=2)
    for k in range(5):
        node.transition("primary", "open", T + k)
        node.transition("primary", "closed", T + k + 0.5)
    assert node.dropped == 3 and len(node.ship()) == 2
