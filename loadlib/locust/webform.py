"""The start form of Locust's web UI: only the loadlib options that apply to the loaded locustfile, most used first,
with readable labels and help (docs/webui.md).

Locust lists every option registered with `include_in_web_ui` under "Custom parameters", sorted by name, labelled
from its name ("Llm Abort Delay") and its raw argparse help (argparse needs '%' doubled, so the form showed '%%').
That was about 60 fields, other scenarios' options and InfluxDB settings included. Here the list Locust builds
(`ui_extra_args_dict`, redone on every page load) is filtered and reordered, its help replaced by the registry's, and
a small script (static/form.js) puts each field's short label in place and its help below it.

A field left off the form is not sent with the start, so its value stays what the command line, config file or
environment gave: hiding a field never resets it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flask import Response, request

from loadlib import option as reg
from loadlib.options import OPTIONS
from loadlib.settings import options_of

FIRST = (
    "llm_model",
    "llm_max_tokens",
    "llm_threshold",
    "llm_request_slo",
    "scenario_slo",
    "llm_abort_on_fail",
    "llm_abort_delay",
    "llm_provider",
)  # the form's top, in this order; then the scenario's own options, then the load model, then the rest
SCENARIO_GROUPS = {
    reg.CHAT: "support_chat",
    reg.DOC: "long_document",
    reg.COMPLIANCE: "compliance",
    reg.CACHE: "cache_probe",
}
LONG_REQUESTS = ("llm_timeout_ttft", "llm_timeout_total")  # 128K-token documents outlast the default timeouts
SHAPE_OF = {"shape_ramp_s": "RampShape", "shape_steps": "StepShape", "shape_step_s": "StepShape"}
LABELS = {
    "llm_model": "Model",
    "llm_max_tokens": "Max tokens",
    "llm_threshold": "Thresholds",
    "llm_request_slo": "Request SLO (goodput)",
    "scenario_slo": "Scenario SLOs as thresholds",
    "llm_abort_on_fail": "Stop as soon as a threshold fails",
    "llm_abort_delay": "Abort delay (s)",
    "llm_provider": "Provider",
    "llm_api_key_env": "API key variable",
    "llm_endpoint_name": "Endpoint name",
    "run_id": "Run id",
    "llm_cold_connect": "Time the first connection",
    "llm_keepalive_idle_s": "Keep-alive idle limit (s, 0: none)",
    "llm_estimate_every": "Estimate tokens every N requests",
    "llm_timeout_ttft": "TTFT timeout (s)",
    "llm_timeout_total": "Request timeout (s)",
    "llm_drill": "Drills",
    "llm_lag_threshold_ms": "Loop-lag threshold (ms)",
    "llm_cpu_threshold": "CPU threshold (%)",
    "arrival_rate": "Arrival rate (requests/s)",
    "arrival_process": "Arrival process",
    "llm_user_phase": "User phase (auto, off, 5s)",
    "llm_think_time": "Think time (exp:2, 2s, 1-3; empty: own)",
    "llm_warmup": "Warm-up left out (10s, spawned)",
    "llm_confidence": "Confidence level (0.95)",
    "llm_threshold_ci": "Thresholds judged by interval",
    "data_seed": "Data seed",
    "chat_turns": "Chat: turns per conversation",
    "chat_conversations": "Chat: conversations",
    "chat_system_tokens": "Chat: system prompt (tokens)",
    "chat_think_time": "Chat: think time (s)",
    "chat_sweep": "Chat: system-prompt sweep",
    "chat_max_tokens": "Chat: answer max tokens",
    "doc_mode": "Documents: mode",
    "doc_tokens": "Documents: sizes (tokens)",
    "doc_per_size": "Documents: per size",
    "doc_chunk_tokens": "Documents: chunk size (tokens)",
    "doc_overlap_tokens": "Documents: chunk overlap (tokens)",
    "doc_max_tokens": "Documents: summary max tokens",
    "doc_truncation_ratio": "Documents: truncation ratio",
    "doc_canary": "Documents: canary",
    "doc_probe_max": "Documents: probe up to (tokens)",
    "doc_probe_resolution": "Documents: probe resolution (tokens)",
    "compliance_cases": "Compliance: cases",
    "compliance_repeat_share": "Compliance: repeated share",
    "compliance_max_tokens": "Compliance: findings max tokens",
    "shape_ramp_s": "RampShape: ramp (s)",
    "shape_steps": "StepShape: steps",
    "shape_step_s": "StepShape: step length (s)",
    "influx_url": "InfluxDB URL",
    "influx_api": "InfluxDB API",
    "influx_db": "InfluxDB database (v1)",
    "influx_rp": "InfluxDB retention policy (v1)",
    "influx_org": "InfluxDB organisation (v2)",
    "influx_bucket": "InfluxDB bucket (v2)",
}


@dataclass(frozen=True)
class RunFacts:
    """What the loaded locustfile and the command line say the run uses: its scenarios (by their specs), the shapes
    it offers, whether any scenario has SLO defaults, whether it has an endpoint pool, whether it writes InfluxDB."""

    scenarios: frozenset[str] = frozenset()
    shapes: frozenset[str] = frozenset()
    slo: bool = False
    pool: bool = False
    influx: bool = False


def run_facts(environment: Any) -> RunFacts:
    """The facts from the environment's user classes (all the class picker offers) and shapes, and its options."""
    opts = options_of(environment)
    classes = list((getattr(environment, "available_user_classes", None) or {}).values())
    classes = classes or list(getattr(environment, "user_classes", None) or ())
    specs = [spec for spec in (getattr(c, "spec", None) for c in classes) if spec is not None]
    shapes = [*(getattr(environment, "available_shape_classes", None) or {}).values(), environment.shape_class]
    has_pool = opts.carried.llm_pool_data is not None or bool(opts.llm_pool)
    return RunFacts(
        scenarios=frozenset(spec.name for spec in specs),
        shapes=frozenset(type(s).__name__ for s in shapes if s is not None),
        slo=any(spec.slo for spec in specs),
        pool=has_pool or any(getattr(c, "pool", None) for c in classes),
        influx=bool(opts.influx_url),
    )


def applies(option: reg.Option, facts: RunFacts) -> bool:
    """Whether the form offers `option` for this run: run-wide LLM options always; a scenario's options, data,
    shapes, the pool's drills and InfluxDB only when the run has them; timeouts and size limits only for long
    documents (the others stay on the command line)."""
    if not option.web_ui:
        return False
    if option.group in SCENARIO_GROUPS:
        return SCENARIO_GROUPS[option.group] in facts.scenarios
    rules = {
        reg.DATA: bool(facts.scenarios & set(SCENARIO_GROUPS.values())),
        reg.SHAPES: SHAPE_OF.get(option.dest) in facts.shapes,
        reg.CAPACITY: "CapacityShape" in facts.shapes,
        reg.FAILOVER: facts.pool,
        reg.INFLUX: facts.influx,
        reg.LIMITS: option.dest in LONG_REQUESTS and "long_document" in facts.scenarios,
    }
    if option.dest == "scenario_slo":
        return facts.slo
    return rules.get(option.group, True)


def form_order(facts: RunFacts) -> list[reg.Option]:
    """The options the form shows, in order: FIRST, the scenario's own (data and shapes included), the load model,
    then the rest in registry order."""
    shown = [o for o in OPTIONS if applies(o, facts)]
    own = {reg.DATA, reg.SHAPES, reg.CAPACITY, *SCENARIO_GROUPS}

    def rank(option: reg.Option) -> tuple[int, int]:
        if option.dest in FIRST:
            return 0, FIRST.index(option.dest)
        return (1 if option.group in own else 2 if option.group == reg.LOAD else 3), 0

    return sorted(shown, key=rank)  # stable: registry order within a rank


def label(option: reg.Option) -> str:
    """The field's label: a short name, or one made from the flag for an option without one ('--llm-foo-bar' is
    'Foo bar')."""
    return LABELS.get(option.dest) or option.flag.removeprefix("--").removeprefix("llm-").replace("-", " ").capitalize()


def extra_options(locust_fields: dict[str, Any], facts: RunFacts) -> dict[str, Any]:
    """Locust's custom fields (`ui_extra_args_dict`: default, help, choices... by dest), reduced to the options that
    apply, in the form's order, each with the registry's help (a single '%', not argparse's '%%'). Fields that are
    not loadlib's (another plugin's) follow unchanged."""
    ours = {o.dest for o in OPTIONS}
    shown = [o for o in form_order(facts) if o.dest in locust_fields]
    fields = {o.dest: {**locust_fields[o.dest], "help_text": o.help} for o in shown}
    return fields | {k: v for k, v in locust_fields.items() if k not in ours}


def labels_script(dests: Iterable[str]) -> bytes:
    """The script tag that gives static/form.js each field's label and help, by the field's name in the form (Locust
    names fields in camelCase: llm_max_tokens is llmMaxTokens)."""
    by_dest = {o.dest: o for o in OPTIONS}
    fields = {_camel(d): {"label": label(by_dest[d]), "help": by_dest[d].help} for d in dests if d in by_dest}
    data = json.dumps(fields).replace("<", "\\u003c")
    return f'<script>window.llmForm = {data};</script><script src="/llm/static/form.js"></script>'.encode()


def _camel(dest: str) -> str:
    head, *rest = dest.split("_")
    return head + "".join(part.capitalize() for part in rest)


def install_form(web_ui: Any) -> None:
    """Filter Locust's custom fields each time it builds them (every page load), keep their order (Jinja's `tojson`
    sorts keys unless told not to: this only changes the order of keys in the pages Locust renders), and give the
    index page the labels and help."""
    build = web_ui.update_template_args
    web_ui.app.jinja_env.policies["json.dumps_kwargs"] = {"sort_keys": False}

    @web_ui.app.after_request
    def _labels(response: Response) -> Response:
        if request.path == "/" and response.status_code == 200 and response.mimetype == "text/html":
            response.direct_passthrough = False
            response.set_data(response.get_data().replace(b"</body>", form_tags(web_ui) + b"</body>", 1))
        return response

    def update_template_args() -> None:
        build()
        fields = web_ui.template_args.get("extra_options") or {}
        web_ui.template_args["extra_options"] = extra_options(fields, run_facts(web_ui.environment))

    web_ui.update_template_args = update_template_args
    if web_ui.environment.runner is not None:
        update_template_args()


def form_tags(web_ui: Any) -> bytes:
    """What the index page gets before </body>: the labels script for the fields the form shows."""
    return labels_script((web_ui.template_args.get("extra_options") or {}).keys())
