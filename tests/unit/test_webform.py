"""The web UI's start form (loadlib/locust/webform.py): which options apply to a run, their order, labels and help."""

from __future__ import annotations

import json
from types import SimpleNamespace

from loadlib import options as reg
from loadlib.locust.shapes import RampShape
from loadlib.locust.webform import FIRST, RunFacts, extra_options, form_order, label, labels_script, run_facts
from loadlib.options_help import help_parser
from loadlib.scenarios import compliance, long_document, support_chat

CHAT = RunFacts(scenarios=frozenset({"chat"}), slo=True)


def dests(facts: RunFacts) -> list[str]:
    return [o.dest for o in form_order(facts)]


def test_chat_gets_the_run_wide_options_only_most_used_first():
    shown = dests(CHAT)
    assert shown[: len(FIRST)] == list(FIRST)
    assert shown[len(FIRST) : len(FIRST) + 2] == ["arrival_rate", "arrival_process"]
    hidden = ("chat_", "doc_", "compliance_", "influx_", "shape_", "data_", "llm_timeout", "llm_max_line", "llm_drill")
    hidden += ("cache_probe_", "llm_capacity_")
    assert not [d for d in shown if d.startswith(hidden)], shown
    assert "llm_mock" not in shown and "llm_summary" not in shown, "no effect from the form, or a path"
    assert "scenario_slo" not in dests(RunFacts(scenarios=frozenset({"failover_drill"})))


def test_a_scenarios_own_options_follow_the_first_ones():
    shown = dests(RunFacts(scenarios=frozenset({"support_chat"}), slo=True))
    own = [d for d in shown if d.startswith("chat_")]
    assert len(own) == 6 and "chat_data_file" not in own, "paths stay on the command line"
    start = len(FIRST)
    assert shown[start : start + 7] == ["data_seed", *own], shown
    assert not [d for d in shown if d.startswith(("doc_", "compliance_"))]


def test_each_scenario_shape_pool_and_influx_add_their_own():
    everything = RunFacts(
        scenarios=frozenset({"support_chat", "long_document", "compliance"}),
        shapes=frozenset({"RampShape"}),
        pool=True,
        influx=True,
    )
    shown = dests(everything)
    for prefix in ("chat_", "doc_", "compliance_", "influx_url"):
        assert any(d.startswith(prefix) for d in shown), prefix
    assert "shape_ramp_s" in shown and "shape_steps" not in shown, "StepShape is not offered"
    assert "llm_drill" in shown and {"llm_timeout_ttft", "llm_timeout_total"} <= set(shown), "long documents"
    assert "influx_buffer" not in shown, "process-wide InfluxDB buffering stays off the form"


def test_the_cache_probe_and_the_capacity_search_bring_their_own():
    shown = dests(RunFacts(scenarios=frozenset({"cache_probe"}), shapes=frozenset({"CapacityShape"}), slo=True))
    assert {"cache_probe_doc_tokens", "cache_probe_variations", "llm_capacity_start", "llm_capacity_min"} <= set(shown)
    assert not [d for d in shown if d.startswith(("chat_", "doc_", "compliance_"))], shown


def test_run_facts_come_from_the_user_classes_shapes_and_options():
    class Drill:
        pool = {"endpoints": []}

    environment = SimpleNamespace(
        parsed_options=SimpleNamespace(influx_url="http://influx:8086", llm_pool=""),
        available_user_classes={"a": support_chat.SupportChatUser, "b": compliance.ComplianceUser, "c": Drill},
        user_classes=[long_document.LongDocumentUser],
        available_shape_classes={},
        shape_class=RampShape(),
    )
    facts = run_facts(environment)
    assert facts.scenarios == {"support_chat", "compliance"}, "the class picker's classes, all of them"
    assert facts.shapes == {"RampShape"} and facts.slo and facts.pool and facts.influx


def test_locust_fields_are_filtered_ordered_and_get_single_percent_help():
    fields = {
        o.dest: {"default_value": o.default, "help_text": o.kwargs()["help"], "choices": None} for o in reg.OPTIONS
    }
    fields["other_plugin"] = {"default_value": "", "help_text": "not ours"}
    shown = extra_options(fields, CHAT)
    assert list(shown)[:3] == ["llm_model", "llm_max_tokens", "llm_threshold"]
    assert list(shown)[-1] == "other_plugin", "another plugin's field is left as Locust built it"
    assert "chat_turns" not in shown and "llm_pool" not in shown
    assert "1%" in shown["llm_threshold"]["help_text"] and "%%" not in json.dumps(shown)


def test_labels_are_short_and_made_up_for_options_without_one():
    for option in reg.OPTIONS:
        assert len(label(option)) <= 40 and not label(option).lower().startswith("llm ")
    made = reg.Option("--llm-some-new-thing", "help", reg.OUTPUT)
    assert label(made) == "Some new thing"


def test_labels_script_names_fields_as_locust_does_and_cannot_end_the_script():
    tag = labels_script(["llm_max_tokens", "llm_cpu_threshold", "llm_threshold", "not_an_option"]).decode()
    text = tag.split("window.llmForm = ", 1)[1].split(";</script>", 1)[0]
    data = json.loads(text)
    assert set(data) == {"llmMaxTokens", "llmCpuThreshold", "llmThreshold"}
    assert data["llmCpuThreshold"] == {"label": "CPU threshold (%)", "help": label_help("llm_cpu_threshold")}
    assert "<" not in text and "p95 < 150ms" in data["llmThreshold"]["help"], "no '</script>' from a help text"


def label_help(dest: str) -> str:
    return next(o.help for o in reg.OPTIONS if o.dest == dest)


def test_help_is_written_with_single_percent_signs():
    """argparse needs '%%'; the registry doubles it (kwargs, --help). A '%%' in the source was shown as '%%'."""
    for option in reg.OPTIONS:
        assert "%%" not in option.help, option.flag
        assert option.kwargs()["help"].count("%%") == option.help.count("%"), option.flag
    text = help_parser().format_help()
    assert "CPU % above" in " ".join(text.split()) and "%%" not in text
