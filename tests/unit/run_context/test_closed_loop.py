"""Closed-loop users' phases and think times (loadlib.locust.closed_loop), the user's wait for its phase, and the
lockstep part shipped by workers and merged on the master (loadlib.locust.lockstep_part)."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from loadlib.settings import resolve

MS = 1_000_000


@pytest.fixture
def loop() -> Any:
    """ClosedLoop from options given as on the command line (Locust imported when the test runs)."""
    from loadlib.locust.closed_loop import ClosedLoop
    from tests.support.locust_env import parsed

    return lambda *args, node=0: ClosedLoop(resolve(parsed(*args)), node)


class Plain:
    """A user class with no think time of its own (Locust's default)."""

    def __init__(self) -> None:
        from locust import User

        self.wait_time = User.wait_time.__get__(self)


def phases(closed_loop: Any, n: int) -> list[float]:
    return [closed_loop.attach(Plain()).phase_s for _ in range(n)]


def test_phases_are_uniform_over_the_window_and_repeat_with_the_seed(loop: Any) -> None:
    first = phases(loop(), 2000)
    assert first == phases(loop(), 2000), "same seed, node and order: same phases"
    assert first != phases(loop(node=1), 2000) and first != phases(loop("--data-seed", "2"), 2000)
    assert min(first) >= 0.0 and max(first) < 1.0 and sum(first) / len(first) == pytest.approx(0.5, abs=0.03)
    assert max(phases(loop("--llm-user-phase", "5s"), 500)) == pytest.approx(5.0, abs=0.05)
    assert set(phases(loop("--llm-user-phase", "off"), 10)) == {0.0}


def test_the_auto_window_follows_the_think_time(loop: Any) -> None:
    from locust import User, between, constant_pacing

    class Thinker(User):
        wait_time = between(2, 6)

    class Paced(User):
        wait_time = constant_pacing(8)

    assert loop().window_s(Thinker) == 4.0 and loop().window_s(Paced) == 8.0 and loop().window_s(User) == 1.0
    assert loop("--llm-think-time", "exp:3").window_s(Thinker) == 3.0, "the option's think time replaces the class's"
    assert loop("--llm-user-phase", "2s").window_s(Thinker) == 2.0


def test_the_think_time_option_replaces_the_classs(loop: Any) -> None:
    user = Plain()
    loop("--llm-think-time", "exp:2", "--llm-user-phase", "0").attach(user)
    draws = [user.wait_time() for _ in range(5000)]
    assert sum(draws) / len(draws) == pytest.approx(2.0, rel=0.06) and min(draws) >= 0.0
    kept = Plain()
    before = kept.wait_time
    loop("--llm-user-phase", "0").attach(kept)
    assert kept.wait_time == before, "no option, no phase: the class's own, untouched"


def test_auto_spreads_a_user_once_more_over_its_first_cycle() -> None:
    from loadlib.locust.closed_loop import UserPacing

    pacing = UserPacing(0.0, True, random.Random(1))
    wait = pacing.wrap(lambda: 0.5)
    pacing.began = time.perf_counter() - 2.0  # its first request went 2 s ago
    first = wait()
    assert 0.5 <= first <= 0.5 + 2.5 + 0.1, "its think time plus a share of its cycle (2 s + the think time)"
    assert [wait() for _ in range(3)] == [0.5] * 3, "once"
    fixed = UserPacing(0.3, False, random.Random(1))
    fixed.began = time.perf_counter() - 2.0
    assert fixed.wrap(lambda: 0.5)() == 0.5, "a window given: no second spread"


def test_a_user_stopped_in_its_phase_closes_its_connections() -> None:
    import gevent
    from locust import task

    from loadlib.locust import LLMUser
    from loadlib.locust.closed_loop import UserPacing
    from loadlib.locust.context import context
    from tests.support.locust_env import HOST, environment

    class Chat(LLMUser):
        host = HOST

        @task
        def ask(self) -> None:
            raise AssertionError("never reached")

    class Conn:
        closed = False

        def close(self) -> None:
            self.closed = True

    env = environment(user_classes=[Chat])
    context(env).start()
    user = Chat(env)
    assert user._pacing is not None and 0.0 <= user._pacing.phase_s < 1.0
    conn = Conn()
    user._connections["mock"] = conn  # type: ignore[assignment]
    pacing = UserPacing(30.0, True, random.Random(1))
    waiting = gevent.spawn(user._wait_phase, pacing)
    gevent.sleep(0.01)
    waiting.kill()
    assert conn.closed and not user._connections and pacing.began is None


def test_an_open_loop_user_has_no_phase() -> None:
    from locust import task

    from loadlib.locust import LLMUser
    from loadlib.locust.context import context
    from tests.support.locust_env import HOST, environment

    class Chat(LLMUser):
        host = HOST

        @task
        def ask(self) -> None:
            pass

    env = environment("--arrival-rate", "5", user_classes=[Chat])
    context(env).start()
    user = Chat(env)
    assert user._pacing is None and context(env).closed_loop is None and user.wait_time() == 0.0


def test_workers_ship_their_start_gaps_and_the_master_judges_them_by_node() -> None:
    from loadlib.locust.context import context
    from tests.support.locust_env import environment

    workers = [context(environment(runner=f"w{i}")) for i in (1, 2)]
    master = context(environment("--llm-user-phase", "off", runner="master"))
    for ctx in (master, *workers):
        ctx.start()
    t0 = time.time_ns() - 10_000 * MS
    for i, w in enumerate(workers):  # the nodes' clocks differ by 0.3 ms: their starts must not be compared
        for rnd in range(5):
            for u in range(32):
                w.lockstep.started(t0 + i * 300_000 + rnd * 1000 * MS + u * 10_000)
    for w in workers:
        data: dict[str, Any] = {}
        w.report(data)
        master.merge(w.worker_id(), data)
    figures = master.summary()["lockstep"]
    assert figures["gaps"] == 2 * (5 * 32 - 1) and figures["largest_cluster"] == 32 and figures["clustered"]
    assert figures["share_under_gap"] == pytest.approx(2 * 5 * 31 / figures["gaps"], abs=1e-4)
    line = master.lines(master.summary())
    assert any("Request starts cluster" in x and "--llm-user-phase auto" in x for x in line)
    master.reset()
    assert master.summary()["lockstep"] is None


def test_a_bad_value_from_the_web_form_is_a_config_error(loop: Any) -> None:
    from loadlib.errors import ConfigError
    from loadlib.locust.closed_loop import ClosedLoop
    from tests.support.locust_env import parsed

    namespace = parsed()
    namespace.llm_think_time = "soon"  # the form's text, which argparse never saw
    with pytest.raises(ConfigError, match=r"^--llm-think-time 'soon': expected"):
        ClosedLoop(resolve(namespace), 0)
