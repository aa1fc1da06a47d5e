"""bench/soak_memory.py --trace: its master, Locust's own main under tracemalloc, nothing imported before Locust
patches the process. The sizes by allocation site (call stack) a third into the run are the base; every EVERY seconds
after it the sites that grew most since the base, each with its call stack, are written to OUT (a run cut short
keeps its last dump). Only the sizes by site are kept between dumps, not the snapshots: a snapshot of every traced
block costs about as much as the process itself.

    python bench/soak_probe.py OUT EVERY BASE_AFTER_S <locust arguments>
"""

import gc
import sys
import time
import tracemalloc

TOP = 15  # allocation sites per dump
FRAMES = 10  # the innermost frames of each site's call stack

Sizes = dict[tracemalloc.Traceback, tuple[int, int]]


def sizes() -> Sizes:
    """Bytes and blocks by call stack now (tracemalloc's and this probe's own allocations left out)."""
    mine = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__)]
    snapshot = tracemalloc.take_snapshot().filter_traces(mine)
    out = {s.traceback: (s.size, s.count) for s in snapshot.statistics("traceback")}
    del snapshot
    gc.collect()
    return out


def write_growth(out: str, base: Sizes, now: Sizes, seconds: float) -> None:
    """The TOP sites by growth since the base, each with its call stack (innermost last)."""
    grown = sorted(
        ((n[0] - base.get(tb, (0, 0))[0], n[1] - base.get(tb, (0, 0))[1], n[0], tb) for tb, n in now.items())
    )
    total = sum(n[0] for n in now.values()) - sum(b[0] for b in base.values())
    lines = [
        f"growth over {seconds / 60:.1f} min since the base: {total / 1024:+.1f} KiB traced in all; top {TOP} sites"
    ]
    for size, count, held, tb in reversed(grown[-TOP:]):
        lines.append(f"{size / 1024:+9.1f} KiB {count:+8d} blocks  now {held / 1024:.1f} KiB")
        lines += [f"    {line}" for line in tb.format() if line.startswith("  File")]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main() -> None:
    out, every_s, base_after_s, locust_args = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
    tracemalloc.start(FRAMES)
    import gevent  # after tracemalloc: Locust's own allocations are traced
    from locust import events

    def dump_forever() -> None:
        gevent.sleep(base_after_s)
        base, began = sizes(), time.monotonic()
        while True:
            gevent.sleep(every_s)
            write_growth(out, base, sizes(), time.monotonic() - began)

    events.test_start.add_listener(lambda **_: gevent.spawn(dump_forever))
    sys.argv = ["locust", *locust_args]
    from locust.main import main as locust_main

    locust_main()


if __name__ == "__main__":
    main()
