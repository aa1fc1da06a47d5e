"""Price table: cost maths, model lookup, provenance (as_of, source), and one-line ConfigErrors for every kind of bad
file."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from loadlib.errors import ConfigError
from loadlib.records.pricing import ModelPrice, PriceTable


def table(**models: ModelPrice) -> PriceTable:
    return PriceTable(models)


def test_bundled_table_loads_and_prices_the_mock_and_real_models() -> None:
    t = PriceTable.load(None)
    assert t.price("mock-llm") == ModelPrice(1.0, 2.0, 0.5)
    assert t.price("gpt-4o") == ModelPrice(2.5, 10.0, 1.25)
    assert t.price("gpt-4o-mini") == ModelPrice(0.15, 0.6, 0.075)
    assert t.price("claude-sonnet-4") == ModelPrice(3.0, 15.0, 0.3, cache_write=3.75)
    assert t.price("claude-3-5-haiku") == ModelPrice(0.8, 4.0, 0.08, cache_write=1.0)
    assert t.cost("mock-llm", 1000, 500) == pytest.approx(0.002)


def test_bundled_table_is_dated_and_names_a_source_for_every_price() -> None:
    t = PriceTable.load(None)
    assert isinstance(t.as_of, date)
    assert set(t.sources) == set(t.models)
    real = [m for m in t.models if m != "mock-llm"]
    assert all(t.sources[m].startswith("https://") for m in real)
    assert t.source_of("gpt-4o-2024-08-06") == "https://platform.openai.com/docs/pricing"  # by prefix, like price()
    assert "anthropic" in (t.source_of("claude-sonnet-4-20250514") or "")
    assert t.source_of("llama-3-70b") is None


def test_a_user_file_needs_neither_date_nor_sources(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("models:\n  m: {input: 1, output: 2}\n")
    t = PriceTable.load(f)
    assert t.as_of is None and t.source_of("m") is None and t.price("m") == ModelPrice(1.0, 2.0)
    assert PriceTable({"m": ModelPrice(1.0, 2.0)}).as_of is None  # built in code (a pool endpoint's prices)


def test_as_of_and_source_are_read(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(
        "as_of: 2025-06-01\nmodels:\n  m: {input: 1, output: 2, source: 'https://example.com/pricing'}\n"
        "aliases:\n  mine: m\n"
    )
    t = PriceTable.load(f)
    assert t.as_of == date(2025, 6, 1)
    assert t.source_of("mine") == t.source_of("M-2025") == "https://example.com/pricing"
    assert t.cost("m", 1000, 1000) == pytest.approx(0.003)  # provenance changes no arithmetic
    quoted = PriceTable.from_mapping({"as_of": "2025-06-01", "models": {}})
    assert quoted.as_of == date(2025, 6, 1)


def test_cost_maths() -> None:
    t = table(m=ModelPrice(input=2.5, output=10.0, cached_input=1.25))
    assert t.cost("m", 1_000_000, 0) == pytest.approx(2.5)
    assert t.cost("m", 0, 1_000_000) == pytest.approx(10.0)
    assert t.cost("m", 0, 0) == 0.0
    # 400 of the 1000 prompt tokens (the whole prompt, whatever the provider) were cache reads
    assert t.cost("m", 1000, 100, 400) == pytest.approx((600 * 2.5 + 400 * 1.25 + 100 * 10.0) / 1e6)
    assert t.cost("m", 1000, 100, None) == t.cost("m", 1000, 100, 0)
    assert t.cost("m", 100, 0, 400) == pytest.approx(100 * 1.25 / 1e6)  # the parts are never more than the whole


def test_cache_writes_cost_their_price_and_input_without_one() -> None:
    """Anthropic's 5-minute cache write costs 1.25 times input; a table without the price bills it as input."""
    t = table(m=ModelPrice(input=3.0, output=15.0, cached_input=0.30, cache_write=3.75))
    # a prompt of 1000: 600 read, 300 written, 100 neither
    assert t.cost("m", 1000, 10, 600, 300) == pytest.approx((100 * 3.0 + 600 * 0.30 + 300 * 3.75 + 10 * 15.0) / 1e6)
    assert t.cost("m", 1000, 0, 900, 300) == pytest.approx((900 * 0.30 + 100 * 3.75) / 1e6)  # within the whole
    plain = table(m=ModelPrice(input=3.0, output=15.0))
    assert plain.cost("m", 1000, 0, 0, 400) == plain.cost("m", 1000, 0) == pytest.approx(1000 * 3.0 / 1e6)


def test_cache_write_price_is_read_and_checked() -> None:
    t = PriceTable.from_mapping({"models": {"c": {"input": 3, "output": 15, "cached_input": 0.3, "cache_write": 3.75}}})
    assert t.price("c") == ModelPrice(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    with pytest.raises(ConfigError, match="'cache_write' must be a non-negative number"):
        PriceTable.from_mapping({"models": {"c": {"input": 3, "output": 15, "cache_write": -1}}})


def test_cached_tokens_cost_input_without_a_cached_price() -> None:
    t = table(m=ModelPrice(input=5.0, output=15.0))
    assert t.cost("m", 1000, 0, 1000) == pytest.approx(1000 * 5.0 / 1e6)


def test_unknown_model_or_tokens_give_none() -> None:
    t = PriceTable.load(None)
    assert t.price("llama-3-70b") is None
    assert t.cost("llama-3-70b", 10, 10) is None
    assert t.cost("gpt-4o", None, 10) is None
    assert t.cost("gpt-4o", 10, None) is None


def test_the_snapshot_without_prompt_caching_prices_cached_tokens_as_input() -> None:
    t = PriceTable.load(None)
    assert t.price("gpt-4o-2024-05-13") == ModelPrice(5.0, 15.0, cached_input=None)
    assert t.cost("gpt-4o-2024-05-13", 1000, 100, 400) == pytest.approx((1000 * 5.0 + 100 * 15.0) / 1e6)
    assert t.cost("gpt-4o-2024-08-06", 1000, 100, 400) == pytest.approx((600 * 2.5 + 400 * 1.25 + 100 * 10.0) / 1e6)


def test_prefix_match() -> None:
    t = PriceTable.load(None)
    assert t.price("gpt-4o-2024-08-06") == t.price("gpt-4o")  # dated snapshot
    assert t.price("gpt-4o-mini-2024-07-18") == t.price("gpt-4o-mini")  # longest prefix wins
    assert t.price("gpt-4o-2024-05-13") == ModelPrice(5.0, 15.0)  # an exact entry beats the prefix
    assert t.price("claude-sonnet-4-20250514") == t.price("claude-sonnet-4")
    assert t.price("claude-3-5-haiku-latest") == t.price("claude-3-5-haiku")
    assert t.price("GPT-4o") == t.price("gpt-4o")  # case-insensitive
    assert t.price("gpt-4o1") is None  # a prefix must end at a separator
    custom = table(**{"gpt-4": ModelPrice(30.0, 60.0)})
    assert custom.price("gpt-4.1") is None  # "." is not a separator: another model
    assert custom.price("gpt-4:latest") == ModelPrice(30.0, 60.0)
    assert custom.price("gpt-4@eu") == ModelPrice(30.0, 60.0)


def test_aliases(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("models:\n  gpt-4o: {input: 2.5, output: 10}\naliases:\n  my-deployment: gpt-4o\n")
    t = PriceTable.load(f)
    assert t.price("my-deployment") == ModelPrice(2.5, 10.0)
    assert t.price("my-deployment-2") is None  # aliases match exactly, only model names by prefix
    assert t.cost("my-deployment", 1_000_000, 0) == pytest.approx(2.5)


def test_load_custom_file(tmp_path: Path) -> None:
    f = tmp_path / "prices.yaml"
    f.write_text(
        "# mine\nmodels:\n  local-llama: {input: 0, output: 0.5}\n  big: {input: 1, output: 2, cached_input: 0}\n"
    )
    t = PriceTable.load(str(f))
    assert t.cost("local-llama", 10**6, 10**6) == pytest.approx(0.5)
    assert t.price("big") == ModelPrice(1.0, 2.0, 0.0)
    assert t.price("gpt-4o") is None  # a custom file replaces the bundled table


BAD_FILES = {
    "yaml": ("models: {gpt-4o: {input: 2.5, output: [}\n", "not valid YAML (line 1"),
    "empty": ("", "top level must be a mapping with a 'models' key"),
    "list": ("- gpt-4o\n", "top level must be a mapping with a 'models' key"),
    "no-models": ("prices: {}\n", "top level must be a mapping with a 'models' key"),
    "unknown-top": ("models: {}\ncurrency: EUR\n", "unknown top-level key 'currency'"),
    "models-list": ("models: [gpt-4o]\n", "'models' must be a mapping"),
    "entry-number": ("models: {gpt-4o: 2.5}\n", "model 'gpt-4o' must map to prices"),
    "missing-output": ("models: {gpt-4o: {input: 2.5}}\n", "model 'gpt-4o' lacks field 'output'"),
    "text": (
        "models: {x: {input: cheap, output: 1}}\n",
        "model 'x' field 'input' must be a non-negative number (USD per million tokens), got 'cheap'",
    ),
    "bool": ("models: {x: {input: 1, output: true}}\n", "model 'x' field 'output' must be a non-negative number"),
    "negative": ("models: {x: {input: -1, output: 1}}\n", "model 'x' field 'input' must be a non-negative number"),
    "nan": ("models: {x: {input: .nan, output: 1}}\n", "model 'x' field 'input' must be a non-negative number"),
    "typo": ("models: {x: {input: 1, ouput: 1}}\n", "model 'x' has unknown field 'ouput'"),
    "source-number": ("models: {x: {input: 1, output: 1, source: 5}}\n", "model 'x' field 'source' must be"),
    "source-empty": ("models: {x: {input: 1, output: 1, source: ''}}\n", "model 'x' field 'source' must be"),
    "as-of-word": (
        "as_of: yesterday\nmodels: {}\n",
        "'as_of' must be the date the prices were checked, as YYYY-MM-DD, e.g. 2025-06-01; got 'yesterday'",
    ),
    "as-of-number": ("as_of: 2025\nmodels: {}\n", "'as_of' must be the date"),
    "as-of-month": ("as_of: 2025-13-01\nmodels: {}\n", "not a valid date (month must be in 1..12); 'as_of' must"),
    "as-of-time": ("as_of: 2025-06-01 10:00:00\nmodels: {}\n", "'as_of' must be the date"),
    "as-of-list": ("as_of: [2025-06-01]\nmodels: {}\n", "'as_of' must be the date"),
    "name": ("models: {1.5: {input: 1, output: 1}}\n", "model name 1.5 must be a non-empty string"),
    "aliases-list": ("models: {x: {input: 1, output: 1}}\naliases: [y]\n", "'aliases' must be a mapping"),
    "alias-target": ("models: {x: {input: 1, output: 1}}\naliases: {y: z}\n", "alias 'y' points to 'z'"),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_bad_file_is_one_line_config_error(tmp_path: Path, kind: str) -> None:
    text, expected = BAD_FILES[kind]
    f = tmp_path / "prices.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError) as info:
        PriceTable.load(f)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"price table {f}: ")
    assert expected in message


def test_missing_file_directory_and_binary(tmp_path: Path) -> None:
    cases = {
        tmp_path / "nope.yaml": "file not found; pass an existing YAML file or omit the option",
        tmp_path: "is a directory",
    }
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00models")
    cases[binary] = "not UTF-8 text"
    for path, expected in cases.items():
        with pytest.raises(ConfigError) as info:
            PriceTable.load(path)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(f"price table {path}: ")
        assert expected in message
