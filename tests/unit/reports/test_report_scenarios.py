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


def test_the_cache_probe_table_names_what_busts_each_layer(tmp_path):
    probe = {
        "rounds": 3,
        "response_cache_source": "header",
        "variations": [
            {
                "name": "none",
                "changes": [],
                "requests": 3,
                "response_cache_hits": 3,
                "prompt_cache_hit_share": None,
                "ttft_saved_ms": 120.5,
                "cost_saved_usd": 0.0031,
            },
            {
                "name": "temperature",
                "changes": ["temperature"],
                "requests": 3,
                "response_cache_hits": 0,
                "prompt_cache_hit_share": 0.96,
                "ttft_saved_ms": 60.0,
                "cost_saved_usd": 0.001,
            },
        ],
        "busts": {"prompt_cache": [], "response_cache": ["temperature"]},
    }
    records = known_run()
    html = report_of(tmp_path, records, summary_of(records, scenarios={"cache_probe": probe}))
    assert "<h2>What busts the cache</h2>" in html
    assert ">0 BUSTS</td>" in html and ">96.0 % kept</td>" in html and ">3 kept</td>" in html
    assert "Busts the response cache: temperature" in html and "Busts the prompt cache: nothing" in html
