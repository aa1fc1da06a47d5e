"""The capacity search, without Locust: the bracket-then-bisect search over loads (search.py), one step's window
of statistics and its judgement against the run's thresholds (step.py), and the answer as the summary holds it
(answer.py). docs/capacity.md."""
