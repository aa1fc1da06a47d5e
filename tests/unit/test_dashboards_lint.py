"""Lint of the provisioned Grafana dashboards: current panel types, one datasource by uid, every query scoped to the
time range and the run, template variables defined and used as regexes, a sane grid."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadlib.sinks.lineproto import SCHEMA

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "grafana" / "dashboards").glob("*.json"))
DATASOURCE_FILE = ROOT / "grafana" / "provisioning" / "datasources" / "influxdb.yml"
ALLOWED_PANELS = {"timeseries", "stat", "table", "bargauge", "row"}
GRAFANA_MACROS = {"timeFilter", "__interval", "__interval_ms", "__from", "__to", "col", "tag_"}
REQUIRED_VARIABLES = ("run_id", "scenario", "endpoint", "model")
MEASUREMENTS = set(SCHEMA)
SCHEMA_NAMES = {name for tags, fields in SCHEMA.values() for name in (*tags, *fields)}


def known_uids() -> set[str]:
    return {ds["uid"] for ds in yaml.safe_load(DATASOURCE_FILE.read_text())["datasources"]}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def all_panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in dash.get("panels", []):
        out.append(panel)
        out.extend(panel.get("panels", []))  # collapsed rows keep their panels inside
    return out


def queries(dash: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, query) of every panel target and annotation."""
    out = [
        (f"panel {p['id']} {p.get('title')!r} {t.get('refId')}", t["query"])
        for p in all_panels(dash)
        for t in p.get("targets", [])
    ]
    for ann in dash.get("annotations", {}).get("list", []):
        if ann.get("builtIn"):
            continue
        target = ann.get("target") or {}
        out.append((f"annotation {ann['name']!r}", target.get("query") or ann.get("query") or ""))
    return out


def variable_names(dash: dict[str, Any]) -> set[str]:
    return {v["name"] for v in dash.get("templating", {}).get("list", [])}


def test_the_overview_dashboard_exists() -> None:
    assert ROOT / "grafana" / "dashboards" / "llm-overview.json" in DASHBOARDS


@pytest.fixture(params=DASHBOARDS, ids=lambda p: p.name)
def dash(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load(request.param)


def test_dashboard_identity(dash: dict[str, Any]) -> None:
    assert dash.get("uid") and dash.get("title")
    assert dash.get("id") is None, "provisioned dashboards must not carry a database id"


def test_panel_ids_are_unique(dash: dict[str, Any]) -> None:
    ids = [p["id"] for p in all_panels(dash)]
    assert len(ids) == len(set(ids)), ids
    assert all(isinstance(i, int) and i > 0 for i in ids)


def test_only_current_panel_types(dash: dict[str, Any]) -> None:
    for p in all_panels(dash):
        assert p["type"] in ALLOWED_PANELS, f"panel {p['id']}: deprecated or unknown type {p['type']!r}"


def test_every_datasource_reference_is_the_provisioned_uid(dash: dict[str, Any]) -> None:
    uids = known_uids()
    refs: list[tuple[str, Any]] = []
    for p in all_panels(dash):
        if p["type"] == "row":
            continue
        refs.append((f"panel {p['id']}", p.get("datasource")))
        refs.extend((f"panel {p['id']} target", t.get("datasource", p.get("datasource"))) for t in p["targets"])
    for v in dash["templating"]["list"]:
        refs.append((f"variable {v['name']}", v.get("datasource")))
    for a in dash["annotations"]["list"]:
        if not a.get("builtIn"):
            refs.append((f"annotation {a['name']}", a.get("datasource")))
    for where, ref in refs:
        assert isinstance(ref, dict), f"{where}: datasource must be an object with a uid, got {ref!r}"
        assert ref == {"type": "influxdb", "uid": ref["uid"]} and ref["uid"] in uids, f"{where}: {ref}"


def test_every_panel_has_targets(dash: dict[str, Any]) -> None:
    for p in all_panels(dash):
        if p["type"] != "row":
            assert p.get("targets"), f"panel {p['id']} has no query"
            ref_ids = [t["refId"] for t in p["targets"]]
            assert len(ref_ids) == len(set(ref_ids))


def test_every_query_is_scoped_to_the_time_range_and_the_run(dash: dict[str, Any]) -> None:
    for where, q in queries(dash):
        assert q, f"{where}: empty query"
        assert "$timeFilter" in q, f"{where}: no $timeFilter"
        assert '"run_id" =~ /^$run_id$/' in q, f"{where}: not filtered by run_id"
        assert re.search(r'FROM "(\w+)"', q) and set(re.findall(r'FROM "(\w+)"', q)) <= MEASUREMENTS, where
        if "GROUP BY time(" in q:
            assert "GROUP BY time($__interval)" in q, f"{where}: use $__interval so Grafana sizes the buckets"


def test_template_variables_are_defined_and_used_as_regexes(dash: dict[str, Any]) -> None:
    defined = variable_names(dash)
    for where, q in queries(dash):
        for name in re.findall(r"\$(\w+)", q):
            if any(name == m or (m.endswith("_") and name.startswith(m)) for m in GRAFANA_MACROS):
                continue
            assert name in defined, f"{where}: ${name} is not a template variable"
            assert f"=~ /^${name}$/" in q, f"{where}: multi-value ${name} must be matched as =~ /^${name}$/"
    for where, q in queries(dash):
        assert not re.search(r'"\w+"\s*=\s*\'\$', q), f"{where}: compare variables with =~, not ="


def test_variables_query_tag_values(dash: dict[str, Any]) -> None:
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    for name in REQUIRED_VARIABLES:
        assert name in variables, f"missing variable {name}"
    for name, v in variables.items():
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        assert q and q.startswith("SHOW TAG VALUES FROM "), f"variable {name}: {q!r}"
        assert f'WITH KEY = "{name}"' in q
        assert "$timeFilter" in q
        if name != "run_id":
            assert '"run_id" =~ /^$run_id$/' in q
        assert v["type"] == "query" and v.get("multi") is True and v.get("refresh") in (1, 2)
        if v.get("includeAll"):
            assert v.get("allValue") == ".*", f"variable {name}: 'All' must be the regex .*"


def test_grid_positions_are_sane_and_do_not_overlap(dash: dict[str, Any]) -> None:
    cells: dict[tuple[int, int], int] = {}
    for p in dash["panels"]:
        g = p["gridPos"]
        assert all(isinstance(g[k], int) for k in ("x", "y", "w", "h")), p["id"]
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["y"] >= 0 and g["x"] + g["w"] <= 24, p["id"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"panel {p['id']} overlaps panel {cells[(x, y)]}"
                cells[(x, y)] = p["id"]


def test_annotations_come_from_llm_event(dash: dict[str, Any]) -> None:
    anns = [a for a in dash["annotations"]["list"] if not a.get("builtIn")]
    assert anns
    kinds = " ".join(a["target"]["query"] for a in anns)
    assert "test_(start|stop)" in kinds
    for a in anns:
        assert 'FROM "llm_event"' in a["target"]["query"] and a["target"]["textColumn"] == "message"


def test_targets_are_raw_influxql(dash: dict[str, Any]) -> None:
    for p in all_panels(dash):
        for t in p.get("targets", []):
            assert t.get("rawQuery") is True and t.get("resultFormat") in ("time_series", "table"), p["id"]


def test_queries_only_name_measurements_tags_and_fields_the_sink_writes(dash: dict[str, Any]) -> None:
    for where, q in queries(dash):
        aliases = set(re.findall(r'AS "([^"]+)"', q))
        for name in re.findall(r'"([^"]+)"', q):
            assert name in MEASUREMENTS | SCHEMA_NAMES | aliases, f"{where}: unknown name {name!r}"


# Aggregates that also accept string fields; every other function needs a numeric (float or int) field.
STRING_FRIENDLY = {"count", "distinct", "first", "last", "mode"}


def read_schema(query: str) -> tuple[dict[str, str], set[str]]:
    """({field: type}, tags) of the measurements the query reads (a subquery's included)."""
    fields: dict[str, str] = {}
    tags: set[str] = set()
    for m in re.findall(r'FROM "(\w+)"', query):
        tags |= set(SCHEMA[m][0])
        fields.update(SCHEMA[m][1])
    return fields, tags


def group_by_names(query: str) -> list[str]:
    return [
        name
        for clause in re.findall(r"GROUP BY ((?:time\([^)]*\)|[^()])*)", query)
        for name in re.findall(r'"([^"]+)"', clause)
    ]


def test_queries_name_only_the_tags_and_fields_of_the_measurements_they_read(dash: dict[str, Any]) -> None:
    for where, q in queries(dash):
        fields, tags = read_schema(q)
        allowed = set(fields) | tags | set(re.findall(r'FROM "(\w+)"', q)) | set(re.findall(r'AS "([^"]+)"', q))
        for name in re.findall(r'"([^"]+)"', q):
            assert name in allowed, f"{where}: {name!r} is not a tag or field of the measurement it reads"


def test_functions_read_fields_of_a_fitting_type_and_group_by_reads_tags(dash: dict[str, Any]) -> None:
    for where, q in queries(dash):
        fields, tags = read_schema(q)
        aliases = set(re.findall(r'AS "([^"]+)"', q))
        for func, name in re.findall(r'(\w+)\("([^"]+)"', q):
            if name in aliases and name not in fields:
                continue
            assert name in fields, f"{where}: {func}() of {name!r}, which is not a field"
            if func.lower() not in STRING_FRIENDLY:
                assert fields[name] in ("float", "int"), f"{where}: {func}() of the string field {name!r}"
        for name in group_by_names(q):
            assert name in tags, f"{where}: GROUP BY {name!r}, which is not a tag"


def test_raw_selects_include_a_field(dash: dict[str, Any]) -> None:
    """InfluxQL returns nothing for a SELECT of tags only."""
    for where, q in queries(dash):
        fields, _ = read_schema(q)
        head = q.split(" FROM ", 1)[0]
        if "(" not in head:
            assert set(re.findall(r'"([^"]+)"', head)) & set(fields), f"{where}: selects no field"


def test_the_overview_reads_every_measurement_the_sink_writes() -> None:
    dash = load(ROOT / "grafana" / "dashboards" / "llm-overview.json")
    read = {m for _, q in queries(dash) for m in re.findall(r'FROM "(\w+)"', q)}
    assert read == MEASUREMENTS


def test_the_failover_row_has_its_panels_and_annotations() -> None:
    dash = load(ROOT / "grafana" / "dashboards" / "llm-overview.json")
    by_id: dict[str, dict[int, dict[str, Any]]] = {}
    for p in all_panels(dash):
        for t in p.get("targets", []):
            for m in re.findall(r'FROM "(\w+)"', t["query"]):
                by_id.setdefault(m, {})[p["id"]] = p
    by_measurement = {m: list(panels.values()) for m, panels in by_id.items()}
    (breaker,) = by_measurement["llm_breaker"]
    assert group_by_names(breaker["targets"][0]["query"]) == ["endpoint", "worker"]
    mapped = {
        value: option["text"]
        for mapping in breaker["fieldConfig"]["defaults"]["mappings"]
        for value, option in mapping["options"].items()
    }
    assert mapped == {"0": "closed", "1": "half-open", "2": "open"}
    (errors,) = by_measurement["llm_user_request"]
    measurements = [m for t in errors["targets"] for m in re.findall(r'FROM "(\w+)"', t["query"])]
    assert {"llm_request", "llm_user_request"} <= set(measurements)
    (drills,) = by_measurement["llm_drill"]
    assert drills["type"] == "table"
    (incidents,) = by_measurement["llm_incident"]
    assert incidents["type"] == "table" and group_by_names(incidents["targets"][0]["query"]) == ["incident", "endpoint"]
    (events,) = [p for p in by_measurement["llm_event"] if p["type"] == "table"]
    assert '"worker"' in events["targets"][0]["query"]
    anns = {a["name"]: a["target"]["query"] for a in dash["annotations"]["list"] if not a.get("builtIn")}
    assert any("=~ /^drill_/" in q for q in anns.values())
