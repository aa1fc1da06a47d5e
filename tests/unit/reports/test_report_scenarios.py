"""The run report's scenario tables: the amplification table from the summary's figures, absent without them."""

from __future__ import annotations

from tests.unit.reports.test_report import known_run, report_of, summary_of

AMP = {
    "pairs": 4,
    "json_output_tokens": 844,
    "plain_output_tokens": 400,
    "output_tokens_ratio": 2.11,
    "json_cost_usd": 0.004,
    "plain_cost_usd": 0.002,
    "cost_ratio": 1.9876,
    "ttft_diff_ms": 3.5,
    "e2e_diff_ms": 1130.0,
}


def test_the_amplification_table_shows_the_summarys_figures(tmp_path):
    records = known_run()
    html = report_of(tmp_path, records, summary_of(records, scenarios={"compliance": {"amplification": AMP}}))
    assert "<h2>Structured-output amplification</h2>" in html
    for cell in ("844 / 400", "2.110", "1.988", "3.5", "1,130"):
        assert f">{cell}</td>" in html, cell


def test_no_table_without_pairs(tmp_path):
    records = known_run()
    assert "amplification" not in report_of(tmp_path, records, summary_of(records))
