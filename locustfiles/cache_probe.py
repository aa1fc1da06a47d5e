"""Cache probe: what busts the provider's prompt cache and a gateway's response cache, variation by variation.

    locust -f locustfiles/cache_probe.py --headless -u 1 -r 1 -t 30s --llm-summary results/cache_probe.json
    locust -f locustfiles/cache_probe.py --headless -u 2 -r 2 -t 60s --cache-probe-model-alias gpt-4o-2024-08-06

Options: --cache-probe-doc-tokens, --cache-probe-variations, --cache-probe-model-alias (see docs/scenarios.md).
"""

from loadlib.scenarios.cache_probe import CacheProbeUser

__all__ = ["CacheProbeUser"]
