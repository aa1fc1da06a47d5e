"""A locustfile to add after another (`-f locustfiles/chat.py,tests/support/dump_options.py`): at `init`, after
loadlib's own checks, it writes loadlib's parsed options as JSON to $DUMP_OPTIONS and ends the process (no load)."""

from locust import events

import json
import os

from loadlib.options import OPTIONS


@events.init.add_listener
def _dump(environment, **_):
    opts = environment.parsed_options
    values = {o.dest: getattr(opts, o.dest, "<missing>") for o in OPTIONS}
    with open(os.environ["DUMP_OPTIONS"], "w") as f:
        json.dump(values, f, default=str)
    os._exit(0)
