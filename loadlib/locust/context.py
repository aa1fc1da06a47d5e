"""One run context per Locust environment: everything loadlib holds for a run on one node, created once at `init`.

It holds the node's role, the options and the settings resolved from them, loadlib's own events (record, worker
health, endpoint events: extension through events, as Locust does), the node parts merged on the master
(loadlib.locust.parts), the open-loop schedule or the closed-loop users' phases, the fatal-stop watch, the secrets to
mask and the embedded mock.
Locust's events reach it through loadlib.locust.install; users reach it through `context(environment)`.
"""

from __future__ import annotations

from gevent.event import Event
from locust.event import EventHook
from locust.runners import MasterRunner, WorkerRunner

import logging
import os
import socket
import time
import weakref
from typing import TYPE_CHECKING, Any

from loadlib.errors import LoadlibError
from loadlib.locust.closed_loop import ClosedLoop
from loadlib.locust.failover_part import FailoverPart
from loadlib.locust.fatal import FatalStop
from loadlib.locust.lockstep_part import LockstepPart
from loadlib.locust.locust_bounds import LocustBoundsPart
from loadlib.locust.part_registry import make_parts, register_part
from loadlib.locust.parts import HealthPart, NodePart, RecordsPart, StatsPart
from loadlib.locust.scenario_part import ScenarioPart
from loadlib.locust.server_metrics_part import ServerMetricsPart
from loadlib.locust.sink_part import SinkPart
from loadlib.locust.verdict_part import VerdictPart
from loadlib.locust.warmup_part import WarmupPart
from loadlib.locust.workers import WorkersPart
from loadlib.logs import RateLimitedLog
from loadlib.metrics import scenarios as found
from loadlib.metrics.warmup import WarmupClock
from loadlib.pacing import ArrivalSchedule, worker_rate
from loadlib.records.record import RequestRecord
from loadlib.redact import Redactor
from loadlib.settings import Options, RunSettings, build_settings, mock_identity, new_run_id, options_of, parsed
from loadlib.settings import amend as amend_options

if TYPE_CHECKING:  # set by loadlib.locust.install, which imports this module
    from loadlib.failover.pool import PoolConfig
    from loadlib.locust.abort import AbortWatch
    from loadlib.locust.drills import DrillDriver
    from loadlib.locust.handshake import Gate

SUMMARY_SCHEMA = "loadlib-summary/1"  # schemas/summary-v1.schema.json
_CONTEXTS: weakref.WeakKeyDictionary[Any, RunContext] = weakref.WeakKeyDictionary()
_PART_FAILED = RateLimitedLog(logging.getLogger("loadlib"), interval_s=30.0)


class LLMEvents:
    """loadlib's events on one environment.

    - `record`: fired with `record=RequestRecord` once per request attempt, after the stream has ended.
    - `worker_health`: fired on every load-generating node once a second with `users=int, cpu_percent=float,
      loop_lag_ms=float`.
    - `endpoint_event`: fired with `kind=str, endpoint=str, message=str` on failover state changes.
    """

    def __init__(self) -> None:
        self.record = EventHook()
        self.worker_health = EventHook()
        self.endpoint_event = EventHook()


class RunContext:
    """loadlib's state on one node (master, worker or local runner) for the life of its Locust environment."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.events = LLMEvents()
        self.settings: RunSettings | None = None
        self._options: Options | None = None
        self.redact = Redactor()
        self.fatal = FatalStop(0.0)
        self.arrivals: ArrivalSchedule | None = None
        self.closed_loop: ClosedLoop | None = None  # the users' phases and think times (a closed-loop run's load node)
        self._repaced = Event()  # set (and replaced) when the arrival rate changes: sleeping users take new slots
        self.in_flight = 0  # user-visible requests under way on this node (the capacity search's drain counts them)
        self.mock: Any = None
        self.mocks: dict[str, Any] = {}  # the pool's embedded mocks by endpoint name (master or local runner)
        self.pool: PoolConfig | None = None  # the pool as checked at start-up (master or local runner)
        self.drills: DrillDriver | None = None  # the drill driver (master or local runner)
        self.abort: AbortWatch | None = None  # the abort-on-fail watch of the current test (master or local runner)
        self.gate: Gate | None = None  # the master's check of each worker's fingerprint (loadlib.locust.handshake)
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.wired = False
        self.final_summary: dict[str, Any] | None = None
        self.warmup = WarmupClock()  # --llm-warmup: which records the statistics leave out
        self._by_name: dict[str, NodePart] = {}
        self.parts = make_parts(self, self._by_name)
        self.stats: StatsPart = self.named("stats")
        self.health: HealthPart = self.named("health")
        self.lockstep: LockstepPart = self.named("lockstep")
        self.sinks: SinkPart = self.named("influxdb")
        self.scenarios: ScenarioPart = self.named("scenarios")
        self.failover: FailoverPart = self.named("failover")
        self.workers: WorkersPart = self.named("workers")
        self.verdicts: VerdictPart = self.named("verdicts")
        self.events.worker_health.add_listener(self.sinks.on_health)
        self.events.endpoint_event.add_listener(self.sinks.on_endpoint_event)

    # the node

    @property
    def options(self) -> Options:
        """The node's options, typed (loadlib.settings.Options): resolved when first read, again at each test start
        (a web UI form or the master's options may have changed them) and after `amend`."""
        if self._options is None:
            self._options = options_of(self.environment)
        return self._options

    @property
    def has_options(self) -> bool:
        """Whether Locust parsed options for this environment (not so for one a test builds bare)."""
        return parsed(self.environment) is not None

    def amend(self, **values: Any) -> None:
        """Change options on Locust's namespace (they travel to the workers with it), then read them again."""
        amend_options(self.environment, **values)
        self.reread()

    def reread(self) -> None:
        """Resolve the options again when next read: a test starts, and a web UI form or the master may have changed
        them."""
        self._options = None

    @property
    def is_master(self) -> bool:
        return isinstance(self.environment.runner, MasterRunner)

    @property
    def is_worker(self) -> bool:
        return isinstance(self.environment.runner, WorkerRunner)

    @property
    def generates_load(self) -> bool:
        return not self.is_master

    @property
    def node(self) -> str:
        """This node's name in reports and InfluxDB: the worker's id, "master" or "local"."""
        runner = self.environment.runner
        if self.is_worker:
            return str(runner.client_id)
        return "master" if self.is_master else "local"

    def worker_id(self) -> str:
        client_id = getattr(self.environment.runner, "client_id", None)
        return str(client_id) if client_id else f"{socket.gethostname()}_{os.getpid()}"

    def user_count(self) -> int:
        return int(getattr(self.environment.runner, "user_count", 0) or 0)

    def named(self, name: str) -> Any:
        """The node part registered as `name` (loadlib.locust.part_registry)."""
        return self._by_name[name]

    def part(self, kind: type[NodePart]) -> Any:
        """The node part of this class (a scenario's own parts are found this way)."""
        return next(p for p in self.parts if isinstance(p, kind))

    # the run

    def start(self) -> None:
        """Test start: resolve the settings (load nodes), then start every part."""
        self.started_at, self.stopped_at = time.time(), None
        self.reread()
        if not self.is_worker and not self.options.run_id:
            self.amend(run_id=new_run_id())  # the web UI's form sends an empty one: each swarm is a new run
        self.fatal = FatalStop(float(self.options.llm_stop_on_fatal_s or 0.0))
        if self.generates_load:
            self.amend(**mock_identity(self.options, self.environment.host))
            self.settings = build_settings(self.options, self.environment.host, self.worker_id())
            self.redact = self.settings.redact
            self.arrivals = self._arrival_schedule()
            self.closed_loop = ClosedLoop(self.options, self._node_index()) if self.arrivals is None else None
        self._each("start", self)

    def stop(self) -> None:
        self.stopped_at = time.time()
        self._each("stop", self)

    def record(self, record: RequestRecord) -> None:
        """Fan one attempt's record out to every part, then to outside listeners."""
        self._each("add", record)
        self.events.record.fire(record=record)

    @property
    def dispatcher(self) -> Any:
        """The node's dispatcher of user-visible requests (made at test start on load nodes)."""
        if self.failover.dispatcher is None:
            self.failover.start(self)
        return self.failover.dispatcher

    def user_request(self, user: Any, delivery: Any) -> None:
        """One user-visible request ended: its statistics, drill ledger and InfluxDB point."""
        self._step(self.failover, "user_request", user, delivery)

    def report(self, data: dict[str, Any]) -> None:
        """A worker's report to the master: each part's payload under its key."""
        for part in self.parts:
            payload = self._step(part, "ship") if part.key else None
            if payload is not None:
                data[part.key] = payload

    def merge(self, worker: str, data: dict[str, Any]) -> None:
        for part in self.parts:
            if part.key and part.key in data:
                self._step(part, "merge", data[part.key], worker)

    def reset(self) -> None:
        self._each("reset")

    def close(self) -> None:
        self._each("close")

    def _each(self, step: str, *args: Any) -> None:
        for part in self.parts:
            self._step(part, step, *args)

    def _step(self, part: NodePart, step: str, *args: Any) -> Any:
        """One step of one part. A part that fails is logged (at most every 30 s) and the others go on: no part
        may lose another's figures, the summary or a record. A user's mistake found at start stops the run instead."""
        try:
            return getattr(part, step)(*args)
        except LoadlibError:
            if step == "start":
                raise
            _PART_FAILED.error("loadlib: %s.%s failed", type(part).__name__, step, exc_info=True)
            return None
        except Exception as exc:
            _PART_FAILED.error("loadlib: %s.%s failed (%r)", type(part).__name__, step, exc, exc_info=exc)
            return None

    def duration_s(self) -> float:
        if self.started_at is None:
            return 0.0
        return max((self.stopped_at or time.time()) - self.started_at, 1e-9)

    def summary(self) -> dict[str, Any]:
        """The run's summary as it stands: meta and duration, then every part's figures."""
        opts = self.options
        meta = {
            "schema": SUMMARY_SCHEMA,
            "run_id": opts.run_id,
            "host": self.environment.host,
            "provider": opts.llm_provider,
            "model": opts.llm_model,
            "models": {spec.name: spec.model for spec in self.pool.endpoints} if self.pool is not None else {},
            "started_at": self.started_at,
            "stopped_at": self.stopped_at,
            "duration_s": round(self.duration_s(), 3),
        }
        summary: dict[str, Any] = {"meta": meta, "duration_s": self.duration_s()}
        self._each("summarize", summary)
        return summary

    def lines(self, summary: dict[str, Any]) -> list[str]:
        """The printed summary: every part's lines, secrets masked."""
        return [self.redact(line) for part in self.parts for line in self._step(part, "lines", summary) or ()]

    def pace(self, rate_per_s: float) -> None:
        """This node's open-loop rate from now on (the capacity search's rate steps): users asleep until a slot of
        the old rate wake at once and take one of the new."""
        if self.arrivals is None:
            self.arrivals = ArrivalSchedule(rate_per_s, str(self.options.arrival_process), self._arrival_seed())
        else:
            self.arrivals.set_rate(rate_per_s)
        self._wake()

    def hold(self) -> None:
        """No open-loop arrivals on this node until the next rate (the capacity search's drain): users asleep until
        a slot wake and sleep on, sending nothing."""
        if self.arrivals is not None:
            self.arrivals.hold()
            self._wake()

    def _wake(self) -> None:
        woken, self._repaced = self._repaced, Event()
        woken.set()

    def sleep_until_slot(self, seconds: float) -> None:
        """A user's wait for its arrival slot, cut short when the rate changes (`pace`)."""
        self._repaced.wait(seconds)

    def _node_index(self) -> int:
        return int(getattr(self.environment.runner, "worker_index", 0) or 0)

    def _arrival_seed(self) -> int:
        return int(self.options.data_seed or 1) * 1000 + self._node_index()

    def _arrival_schedule(self) -> ArrivalSchedule | None:
        """This node's share of the open-loop arrival rate (None: closed loop)."""
        opts = self.options
        rate = float(opts.arrival_rate or 0.0)
        if rate <= 0:
            return None
        process = str(opts.arrival_process)
        expected = opts.locust.expect_workers if self.is_worker else None
        share = worker_rate(rate, expected)
        found.open_loop_config(self.scenarios.results, self.worker_id(), share, process)
        return ArrivalSchedule(share, process, self._arrival_seed())


def _scenario_specs(environment: Any) -> tuple[Any, ...]:
    """The specs of the scenarios this run's user classes belong to, each once."""
    specs: dict[str, Any] = {}
    for cls in getattr(environment, "user_classes", None) or ():
        spec = getattr(cls, "spec", None)
        if spec is not None:
            specs.setdefault(spec.name, spec)
    return tuple(specs.values())


def _scenario_parts(ctx: RunContext) -> list[NodePart]:
    """The parts the run's scenarios bring (the compliance audit trail)."""
    return [make() for spec in ctx.named("scenarios").specs for make in spec.parts]


def _verdicts(ctx: RunContext) -> VerdictPart:
    """The thresholds, with each running scenario's SLO defaults."""
    return VerdictPart({s.name: s.slo for s in ctx.named("scenarios").specs})


# The built-in parts; a new output or sink registers its own between them (docs/extending.md).
register_part("warmup", 50, lambda ctx: WarmupPart(ctx.warmup))  # first: the statistics' rates read its seconds
register_part("stats", 100, lambda ctx: StatsPart())
register_part("health", 200, lambda ctx: HealthPart())
register_part("lockstep", 250, lambda ctx: LockstepPart())  # beside client saturation: another self-check
register_part("records", 300, lambda ctx: RecordsPart())
register_part("influxdb", 400, lambda ctx: SinkPart())
register_part("scenarios", 500, lambda ctx: ScenarioPart(_scenario_specs(ctx.environment)))
register_part("failover", 600, lambda ctx: FailoverPart(ctx.events, ctx.named("influxdb")))
register_part("scenario_parts", 700, _scenario_parts)
register_part("workers", 800, WorkersPart)  # after the sink: a worker's final report carries its closed sink's counts
register_part("locust_bounds", 820, LocustBoundsPart)  # Locust's own per-second counts and chart history
register_part("server_metrics", 860, lambda ctx: ServerMetricsPart())  # after the capacity search: reads its steps
register_part("verdicts", 900, _verdicts)  # last: it judges what every other part summarized


def context(environment: Any) -> RunContext:
    """The run context of `environment`, created on first use (normally at Locust's `init`)."""
    ctx = _CONTEXTS.get(environment)
    if ctx is None:
        ctx = _CONTEXTS[environment] = RunContext(environment)
    return ctx
