"""All three scenarios in one run, weighted like a product's traffic: mostly chat, some compliance batches, a few
long documents. Each keeps its own options, data, checks and SLOs; the summary has a row per scenario.

    locust -f locustfiles/mixed.py --headless -u 20 -r 10 -t 60s --llm-summary results/mixed.json
    locust -f locustfiles/mixed.py,locustfiles/shapes.py --class-picker     # web UI: pick classes and a shape

Change the weights with Locust's --config-users, e.g. '[{"user_class_name": "LongDocument", "weight": 3}]'.
"""

from loadlib.scenarios import compliance, long_document, support_chat


class SupportChat(support_chat.SupportChatUser):
    weight = 6


class Compliance(compliance.ComplianceUser):
    weight = 3


class LongDocument(long_document.LongDocumentUser):
    weight = 1
