"""Load shapes to add to any scenario: `-f locustfiles/support_chat.py,locustfiles/shapes.py --class-picker`
offers them in the web UI (or "Default" for none). Headless, Locust uses the first shape found (RampShape).

RampShape: linear ramp to the user count (-u / the UI's "Number of users") over --shape-ramp-s, then hold.
StepShape: --shape-steps equal steps of --shape-step-s seconds up to the user count, then hold.
Both end at the run time (-t / the UI's "Run time").
"""

from loadlib.locust.shapes import RampShape, StepShape

__all__ = ["RampShape", "StepShape"]
