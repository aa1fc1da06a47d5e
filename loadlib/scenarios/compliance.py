"""Compliance review: a policy and a case (transaction, e-mail, contract clause) in, JSON findings out.

Requests ask for structured output (OpenAI `response_format` json_schema, Anthropic a forced tool) at temperature 0.
Every answer is parsed and validated against the case's schema (`schema_invalid` when it fails; `truncated` when it was
cut at max_tokens). A share of cases (--compliance-repeat-share) is sent a second time at once and the two answers
compared (`nondeterministic` when they differ). Another share (--compliance-plain-share) is sent again asking for the
same findings as plain prose, to measure what the structure costs (loadlib.metrics.amplification). Every attempt
appends one audit line (loadlib.outputs.audit), written as its record is made: ids, model, tokens by usage and by
estimate, cost, status, never the policy, the case or the answer.
"""

from __future__ import annotations

from locust import task

import functools
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from loadlib import data
from loadlib.data import ComplianceCase
from loadlib.errors import ConfigError
from loadlib.locust.parts import Node, NodePart
from loadlib.locust.sink_part import SinkPart
from loadlib.metrics import amplification
from loadlib.metrics import compliance_results as results
from loadlib.outputs.audit import audit_line, output_digest
from loadlib.outputs.jsonl import JsonlWriter, resolve_path
from loadlib.providers.base import StreamResult
from loadlib.records import tokens
from loadlib.records.record import RequestRecord
from loadlib.scenarios.base import ScenarioSpec, ScenarioUser, positive, prompt_tokens
from loadlib.scenarios.review import Review, canonical, compile_validator, schema_depth, structured_output
from loadlib.settings import Options

NAME = "compliance"
SLO = ("e2e p95 < 20s", "schema_valid >= 99%", "deterministic >= 99%")
SCHEMA_NAME = "findings"
PROSE_ANSWER = "Answer in plain prose, without JSON or any other structure."


@dataclass(frozen=True)
class ComplianceContext:
    cases: tuple[ComplianceCase, ...]
    repeat_share: float
    max_tokens: int
    validators: dict[int, Any]  # id(schema) -> compiled validator
    plain_share: float = 0.0
    prose: dict[str, tuple[str, int]] = field(default_factory=dict)  # policy -> (its prose variant, tokens)


def _signature(opts: Options) -> tuple[Any, ...]:
    return (
        opts.compliance_cases,
        opts.compliance_repeat_share,
        opts.compliance_plain_share,
        opts.compliance_max_tokens,
        opts.compliance_data_file,
        opts.data_seed,
        opts.data_cache_dir,
    )


def _share(value: float, name: str) -> float:
    share = float(value)
    if not 0 <= share <= 1:
        raise ConfigError(f"--{name} must be between 0 and 1, got {share}")
    return share


def build_context(opts: Options) -> ComplianceContext:
    share = _share(opts.compliance_repeat_share, "compliance-repeat-share")
    cases = data.compliance_cases(
        int(opts.data_seed),
        positive(int(opts.compliance_cases), "--compliance-cases"),
        str(opts.data_cache_dir or ""),
        str(opts.compliance_data_file or ""),
    )
    validators = {id(c.schema): compile_validator(c.schema) for c in cases}
    max_tokens = positive(int(opts.compliance_max_tokens), "--compliance-max-tokens")
    plain = _share(opts.compliance_plain_share, "compliance-plain-share")
    prose = {c.policy: prose_policy(c.policy) for c in cases} if plain > 0 else {}
    return ComplianceContext(cases, share, max_tokens, validators, plain, prose)


def prose_policy(policy: str) -> tuple[str, int]:
    """The policy asking for the findings as plain prose instead of JSON, and its token count."""
    text = policy.replace(data.compliance.JSON_ANSWER, PROSE_ANSWER)
    if text == policy:
        text = f"{policy}\n\n{PROSE_ANSWER}"
    return text, tokens.count_text(text)


def validate(opts: Options) -> None:
    _share(opts.compliance_repeat_share, "compliance-repeat-share")
    _share(opts.compliance_plain_share, "compliance-plain-share")
    if opts.compliance_data_file:
        data.compliance_cases(0, 1, "", str(opts.compliance_data_file))


class AuditPart(NodePart):
    """The audit trail of one node (--audit-file; 'none' turns it off), opened at test start, closed at stop."""

    def __init__(self) -> None:
        self.log: JsonlWriter | None = None

    def start(self, ctx: Node) -> None:
        self.stop(ctx)
        template = str(ctx.options.audit_file or "")
        if ctx.generates_load and template.lower() not in ("", "none", "off"):
            run_id = str(ctx.options.run_id or "")
            self.log = JsonlWriter(resolve_path(template, run_id, ctx.worker_id()), line=audit_line)
            self.log.start()

    def stop(self, ctx: Any) -> None:
        if self.log is not None:
            self.log.close()

    def close(self) -> None:
        self.stop(None)


SPEC = ScenarioSpec(NAME, build_context, validate, _signature, SLO, parts=(AuditPart,), results=results.SECTION)


class ComplianceUser(ScenarioUser):
    """A compliance analyst's batch: case after case, no think time; some cases twice to test determinism."""

    abstract = False
    scenario = NAME
    spec = SPEC
    _cases = itertools.count()

    def on_start(self) -> None:
        self.ctx = self.data()
        self.rng = random.Random(10_000 + self.user_index)
        self.plain_rng = random.Random(20_000 + self.user_index)

    def _review(self, case: ComplianceCase, reference: bytes | None) -> tuple[Review, RequestRecord]:
        audit = functools.partial(self._audit, case, reference is not None)
        review = Review(self.found, self.ctx.validators[id(case.schema)], reference)
        messages = [{"role": "system", "content": case.policy}, {"role": "user", "content": case.case}]
        reply = self.chat(
            messages,
            prompt_tokens_est=prompt_tokens(("system", case.policy_tokens), ("user", case.case_tokens)),
            max_tokens=self.ctx.max_tokens,
            temperature=0,
            json_schema=case.schema,
            json_schema_name=SCHEMA_NAME,
            check=review,
            on_record=audit,
        )
        return review, reply.record

    def _plain(self, case: ComplianceCase, structured: RequestRecord) -> None:
        """The same case asking for prose; the pair is counted as the plain answer's record is made."""
        policy, policy_tokens = self.ctx.prose[case.policy]
        depth = schema_depth(case.schema)

        def counted(record: RequestRecord, result: StreamResult | None) -> None:
            if amplification.pair(self.found, depth, structured, record):
                self.run_context.part(SinkPart).amplification(depth, structured, record)

        self.chat(
            [{"role": "system", "content": policy}, {"role": "user", "content": case.case}],
            prompt_tokens_est=prompt_tokens(("system", policy_tokens), ("user", case.case_tokens)),
            max_tokens=self.ctx.max_tokens,
            temperature=0,
            on_record=counted,
        )

    def _audit(self, case: ComplianceCase, repeat: bool, record: RequestRecord, result: StreamResult | None) -> None:
        """One audit line per attempt, written as its record is made (chat's on_record)."""
        log = self.run_context.part(AuditPart).log
        if log is None:
            return
        digest = output_digest(structured_output(result))
        log.add(record, case_id=case.id, case_kind=case.kind, repeat=repeat, output_sha256=digest)
        results.audit_written(self.found, str(log.path))

    @task
    def review(self) -> None:
        case = self.ctx.cases[next(ComplianceUser._cases) % len(self.ctx.cases)]
        first, record = self._review(case, None)
        if first.valid and self.ctx.repeat_share > 0 and self.rng.random() < self.ctx.repeat_share:
            self._review(case, canonical(first.value))
        if first.valid and self.ctx.plain_share > 0 and self.plain_rng.random() < self.ctx.plain_share:
            self._plain(case, record)
