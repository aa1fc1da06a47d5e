"""Compliance review: a policy and a case (transaction, e-mail, contract clause) in, JSON findings out.

Requests ask for structured output (OpenAI `response_format` json_schema, Anthropic a forced tool) at temperature 0.
Every answer is parsed and validated against the case's schema (`schema_invalid` when it fails; `truncated` when it
was cut at max_tokens). A share of cases (--compliance-repeat-share) is sent a second time at once and the two
answers compared (`nondeterministic` when they differ). Every request appends one audit line (loadlib.audit): ids,
model, tokens by usage and by estimate, cost, status, never the policy, the case or the answer.
"""

from __future__ import annotations

from locust import events, task

import itertools
import random
from dataclasses import dataclass
from typing import Any

from loadlib import data
from loadlib.audit import AuditLog, output_digest, resolve_path
from loadlib.data import ComplianceCase
from loadlib.errors import ConfigError
from loadlib.runtime import worker_id_of
from loadlib.scenarios import results
from loadlib.scenarios.base import ScenarioUser, install_preparation, memoised, positive, prompt_tokens
from loadlib.scenarios.review import Review, canonical, compile_validator, structured_output

NAME = "compliance"
SLO = {"e2e_p95_ms": 20000.0, "schema_valid_share": 0.99, "deterministic_share": 0.99}
SCHEMA_NAME = "findings"
DEFAULT_AUDIT = "results/audit-{run_id}.jsonl"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--compliance-cases", type=int, default=60, help="Compliance: distinct generated cases.")
    parser.add_argument(
        "--compliance-repeat-share",
        type=float,
        default=0.2,
        help="Compliance: share of cases sent twice in a row to check that temperature-0 answers are identical.",
    )
    parser.add_argument(
        "--compliance-max-tokens", type=int, default=1024, help="Compliance: max_tokens of the JSON findings."
    )
    parser.add_argument(
        "--compliance-data-file", default="", help="Compliance: JSONL of cases instead of generated ones."
    )
    parser.add_argument(
        "--audit-file",
        default=DEFAULT_AUDIT,
        help="Compliance: audit trail, one JSONL line per request ({run_id} and {worker} are filled in; "
        "'none' turns it off).",
    )


@dataclass(frozen=True)
class ComplianceContext:
    cases: tuple[ComplianceCase, ...]
    repeat_share: float
    max_tokens: int
    validators: dict[int, Any]  # id(schema) -> compiled validator


def _signature(opts: Any) -> tuple[Any, ...]:
    return (
        opts.compliance_cases,
        opts.compliance_repeat_share,
        opts.compliance_max_tokens,
        opts.compliance_data_file,
        opts.data_seed,
        opts.data_cache_dir,
    )


def build_context(opts: Any) -> ComplianceContext:
    share = float(opts.compliance_repeat_share)
    if not 0 <= share <= 1:
        raise ConfigError(f"--compliance-repeat-share must be between 0 and 1, got {share}")
    cases = data.compliance_cases(
        int(opts.data_seed),
        positive(int(opts.compliance_cases), "--compliance-cases"),
        str(opts.data_cache_dir or ""),
        str(opts.compliance_data_file or ""),
    )
    validators = {id(c.schema): compile_validator(c.schema) for c in cases}
    return ComplianceContext(
        cases, share, positive(int(opts.compliance_max_tokens), "--compliance-max-tokens"), validators
    )


def context(environment: Any) -> ComplianceContext:
    opts = environment.parsed_options
    return memoised(environment, NAME, _signature(opts), lambda: build_context(opts))


def validate(opts: Any) -> None:
    share = float(opts.compliance_repeat_share)
    if not 0 <= share <= 1:
        raise ConfigError(f"--compliance-repeat-share must be between 0 and 1, got {share}")
    if opts.compliance_data_file:
        data.compliance_cases(0, 1, "", str(opts.compliance_data_file))


def audit_log(environment: Any) -> AuditLog | None:
    return getattr(environment, "_llm_audit", None)


class ComplianceUser(ScenarioUser):
    """A compliance analyst's batch: case after case, no think time; some cases twice to test determinism."""

    abstract = False
    scenario = NAME
    _cases = itertools.count()

    def on_start(self) -> None:
        self.ctx = context(self.environment)
        self.rng = random.Random(10_000 + self.user_index)

    def _review(self, case: ComplianceCase, reference: bytes | None) -> Review:
        review = Review(self.environment, self.ctx.validators[id(case.schema)], reference)
        messages = [{"role": "system", "content": case.policy}, {"role": "user", "content": case.case}]
        reply = self.send(
            messages,
            prompt_tokens_est=prompt_tokens(("system", case.policy_tokens), ("user", case.case_tokens)),
            max_tokens=self.ctx.max_tokens,
            temperature=0,
            json_schema=case.schema,
            json_schema_name=SCHEMA_NAME,
            check=review,
        )
        log = audit_log(self.environment)
        if log is not None:
            log.add(
                reply.record,
                case_id=case.id,
                case_kind=case.kind,
                repeat=reference is not None,
                output_sha256=output_digest(structured_output(reply.result)),
            )
            results.audit_written(self.environment, str(log.path))
        return review

    @task
    def review(self) -> None:
        case = self.ctx.cases[next(ComplianceUser._cases) % len(self.ctx.cases)]
        first = self._review(case, None)
        if first.valid and self.ctx.repeat_share > 0 and self.rng.random() < self.ctx.repeat_share:
            self._review(case, canonical(first.value))


def _open_audit(environment: Any, **_: Any) -> None:
    from locust.runners import MasterRunner

    _close_audit(environment)
    opts = environment.parsed_options
    template = str(getattr(opts, "audit_file", "") or "")
    if isinstance(environment.runner, MasterRunner) or template.lower() in ("", "none", "off"):
        return
    path = resolve_path(template, str(getattr(opts, "run_id", "") or ""), worker_id_of(environment))
    environment._llm_audit = AuditLog(path)
    environment._llm_audit.start()


def _close_audit(environment: Any, **_: Any) -> None:
    log = audit_log(environment)
    if log is not None:
        log.close()


def _install() -> None:
    if getattr(events, "_loadlib_compliance_installed", False):
        return
    events._loadlib_compliance_installed = True
    events.init_command_line_parser.add_listener(add_arguments)
    results.SLO_DEFAULTS[NAME] = dict(SLO)
    install_preparation(NAME, context, validate)
    events.test_start.add_listener(_open_audit)
    events.test_stop.add_listener(_close_audit)
    events.quitting.add_listener(_close_audit)


_install()
