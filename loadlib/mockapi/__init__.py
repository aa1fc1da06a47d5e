"""What the mock LLM server accepts, as data: its settings (config.py) and its timed fault kinds (faults.py).

Shared by the server (loadlib/mock) and by the checks of pools and drills (loadlib/failover), which validate a mock
endpoint's settings and a drill's parameters before load: the stack reads this contract and never imports the test
double itself."""
