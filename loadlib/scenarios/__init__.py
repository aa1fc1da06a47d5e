"""Realistic scenarios on LLMUser: support chat, long-document summarisation, compliance review (docs/scenarios.md).

User classes (import Locust): `support_chat`, `long_document`, `compliance`, on `base.ScenarioUser`; each module adds
its options to Locust's parser when imported and registers its default SLOs. Pure logic (no Locust, testable in a
plain process): `common` (prompt-token arithmetic, option parsing), `conversation`, `documents`, `review`, and
`results` (what each scenario finds beyond latency, merged across workers).
"""
