"""The toys in a real run: the toy scenario's users, with the toy sink registered (docs/extending.md).

TOY_SINK_FILE=/tmp/toy.jsonl locust -f tests/support/toys/locustfile.py --headless -u 2 -r 2 -t 3s
"""

from tests.support.toys import sink
from tests.support.toys.scenario import ToyQuizUser

sink.register()

__all__ = ["ToyQuizUser"]
