"""Compliance review: policy + case in, JSON findings out (schema-validated, temperature 0, repeats compared),
one audit line per request.

    locust -f locustfiles/compliance.py --headless -u 8 -r 8 -t 60s --llm-summary results/compliance.json
    locust -f locustfiles/compliance.py --headless -u 8 -r 8 -t 60s --compliance-repeat-share 0.5 \
        --audit-file results/audit-{run_id}.jsonl

Options: --compliance-cases, --compliance-repeat-share, --compliance-max-tokens, --compliance-data-file,
--audit-file (see docs/scenarios.md).
"""

from loadlib.scenarios.compliance import ComplianceUser

__all__ = ["ComplianceUser"]
