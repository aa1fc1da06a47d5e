"""Long-document summarisation: whole documents (fits / context exceeded / silently truncated), chunked
map-reduce with overlap, or a probe of the endpoint's real context limit.

    locust -f locustfiles/long_document.py --headless -u 4 -r 4 -t 60s --llm-summary results/docs.json
    locust -f locustfiles/long_document.py --headless -u 2 -r 2 -t 60s --doc-mode chunked --doc-overlap-tokens 400
    locust -f locustfiles/long_document.py --headless -u 1 -r 1 -t 120s --doc-mode probe

Options: --doc-mode, --doc-tokens, --doc-chunk-tokens, --doc-overlap-tokens, --doc-truncation-ratio,
--doc-probe-max, --doc-data-file (see docs/scenarios.md).
"""

from loadlib.scenarios.long_document import LongDocumentUser

__all__ = ["LongDocumentUser"]
