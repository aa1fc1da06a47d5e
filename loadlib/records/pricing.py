"""Price table: USD per million tokens per model, and the cost of one request (docs/metrics.md, "Tokens and cost").

The file format is documented in the bundled `loadlib/records/prices.yaml`. Loading is the only I/O;
`PriceTable.from_mapping` and `cost` are pure. Every problem with a file is a `ConfigError` with one line naming the
file, what is wrong and how to fix it, raised at start-up rather than on the first priced request.

Model lookup (case-insensitive): exact name, then an exact alias, then the longest priced name that is a prefix of
the requested model followed by one of "-", ":", "@", "/". So dated snapshots ("gpt-4o-2024-08-06",
"claude-sonnet-4-20250514") get their family's price, "gpt-4o-mini" never gets "gpt-4o"'s because it has its own longer
entry, and "gpt-4.1" never gets "gpt-4"'s because "." is not a separator.

Provenance: a table may say when its prices were last checked (`as_of`, a date) and where each model's price comes
from (`source`, the provider's pricing page), so a cost figure can say how old and how trustworthy it is. Both are
optional in a user's file; the bundled table has them.

Prompt caching: `prompt_tokens` is the whole prompt whatever the provider (loadlib.providers.usage: Anthropic's
input_tokens + cache read + cache write); the part read from the cache is billed at `cached_input`, the part written
to it at `cache_write` (Anthropic's 5-minute price, 1.25 times input), the rest at `input`. A price the entry lacks
is `input`'s, so a write is never lost, only priced as input."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from loadlib.errors import ConfigError

BUNDLED_NAME = "prices.yaml"
_SEPARATORS = ("-", ":", "@", "/")
_FIELDS = ("input", "output", "cached_input", "cache_write")
_OPTIONAL = ("cached_input", "cache_write")
_ENTRY_KEYS = (*_FIELDS, "source")
_TOP_KEYS = ("as_of", "models", "aliases")
_EXAMPLE = "e.g. models: {gpt-4o: {input: 2.50, output: 10.00, cached_input: 1.25}}"


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None  # a cache read; None: `input`
    cache_write: float | None = None  # a cache write (5-minute TTL); None: `input`


class PriceTable:
    """Immutable after construction; shared by every user of a worker. `source` names the file (or pool endpoint) the
    table came from; `as_of` is the day its prices were checked and `sources` each model's pricing page (optional)."""

    def __init__(
        self,
        models: dict[str, ModelPrice],
        aliases: dict[str, str] | None = None,
        source: str = "",
        *,
        as_of: date | None = None,
        sources: dict[str, str] | None = None,
    ) -> None:
        self.models = {k.lower(): v for k, v in models.items()}
        self.aliases = {k.lower(): v.lower() for k, v in (aliases or {}).items()}
        self.source = source
        self.as_of = as_of
        self.sources = {k.lower(): v for k, v in (sources or {}).items()}
        self._by_length = sorted(self.models, key=len, reverse=True)
        self._cache: dict[str, str | None] = {}

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        """Read a YAML price table; None reads the bundled `loadlib/records/prices.yaml`."""
        if path is None:
            label = f"bundled {BUNDLED_NAME}"
            try:
                text = resources.files("loadlib.records").joinpath(BUNDLED_NAME).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"price table {label}: cannot read it ({exc.strerror}); reinstall loadlib") from None
        else:
            label = str(path)
            try:
                text = Path(path).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise ConfigError(
                    f"price table {label}: file not found; pass an existing YAML file or omit the option to use the "
                    "bundled table"
                ) from None
            except IsADirectoryError:
                raise ConfigError(f"price table {label}: is a directory; pass the path of a YAML file") from None
            except UnicodeDecodeError:
                raise ConfigError(f"price table {label}: not UTF-8 text; save it as a UTF-8 YAML file") from None
            except OSError as exc:
                raise ConfigError(f"price table {label}: cannot read it ({exc.strerror}); check the path") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"price table {label}: not valid YAML ({_yaml_problem(exc)}); fix the syntax") from None
        except ValueError as exc:  # PyYAML's date constructor: 2025-13-01 looks like a date but is none
            raise ConfigError(
                f"price table {label}: a value written like a date is not a valid date ({exc}); 'as_of' must be "
                "YYYY-MM-DD"
            ) from None
        return cls.from_mapping(data, source=label)

    @classmethod
    def from_mapping(cls, data: Any, source: str = "<mapping>") -> PriceTable:
        """Validate parsed YAML (pure)."""
        where = f"price table {source}"
        if not isinstance(data, dict) or "models" not in data:
            raise ConfigError(f"{where}: the top level must be a mapping with a 'models' key, {_EXAMPLE}")
        unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
        if unknown:
            raise ConfigError(
                f"{where}: unknown top-level key {unknown[0]!r}; only 'as_of', 'models' and 'aliases' are allowed"
            )
        raw_models = data["models"]
        if not isinstance(raw_models, dict):
            raise ConfigError(f"{where}: 'models' must be a mapping of model name to prices, {_EXAMPLE}")
        models: dict[str, ModelPrice] = {}
        sources: dict[str, str] = {}
        for name, entry in raw_models.items():
            key = _name(name, where, "model name")
            models[key] = _price(str(name), entry, where)
            url = _source(key, entry, where)
            if url is not None:
                sources[key] = url
        raw_aliases = data.get("aliases") or {}
        if not isinstance(raw_aliases, dict):
            raise ConfigError(
                f"{where}: 'aliases' must be a mapping of name to priced model, e.g. aliases: {{my-gpt: gpt-4o}}"
            )
        aliases: dict[str, str] = {}
        lowered = {k.lower() for k in models}
        for alias, target in raw_aliases.items():
            a = _name(alias, where, "alias")
            t = _name(target, where, f"alias {a!r} target")
            if t.lower() not in lowered:
                raise ConfigError(f"{where}: alias {a!r} points to {t!r}, which is not under 'models'; add it there")
            aliases[a] = t
        as_of = _as_of(data.get("as_of"), where)
        return cls(models, aliases, source=source, as_of=as_of, sources=sources)

    def price(self, model: str) -> ModelPrice | None:
        """The price entry for a model name as the endpoint reports it, or None."""
        name = self.priced_name(model)
        return None if name is None else self.models[name]

    def source_of(self, model: str) -> str | None:
        """Where the price this model gets comes from (the provider's pricing page), or None when unpriced or
        not stated."""
        name = self.priced_name(model)
        return None if name is None else self.sources.get(name)

    def priced_name(self, model: str) -> str | None:
        """The table's entry a model name resolves to (lowercase), or None (lookup rules in the module docstring)."""
        key = model.lower()
        if key in self._cache:
            return self._cache[key]
        found: str | None = key if key in self.models else None
        if found is None and self.aliases.get(key) in self.models:
            found = self.aliases[key]
        if found is None:
            found = next(
                (n for n in self._by_length if key.startswith(n) and key[len(n) : len(n) + 1] in _SEPARATORS), None
            )
        self._cache[key] = found
        return found

    def cost(
        self,
        model: str,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        cached_prompt_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> float | None:
        """USD for one request; None when the model has no price or a token count is unknown. `prompt_tokens` is the
        whole prompt; the cache read and written are parts of it (each at most what is left of it)."""
        p = self.price(model)
        if p is None or prompt_tokens is None or completion_tokens is None:
            return None
        cached = min(cached_prompt_tokens or 0, prompt_tokens)
        written = min(cache_write_tokens or 0, prompt_tokens - cached)
        uncached = prompt_tokens - cached - written
        cached_rate = p.cached_input if p.cached_input is not None else p.input
        write_rate = p.cache_write if p.cache_write is not None else p.input
        return (uncached * p.input + cached * cached_rate + written * write_rate + completion_tokens * p.output) / 1e6

    def __repr__(self) -> str:
        return f"PriceTable({len(self.models)} models from {self.source or 'memory'})"


def _name(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {what} {value!r} must be a non-empty string; quote it in the YAML")
    return value.strip()


def _price(name: str, entry: Any, where: str) -> ModelPrice:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: model {name!r} must map to prices like {{input: 2.50, output: 10.00}}")
    unknown = sorted(str(k) for k in entry if k not in _ENTRY_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: model {name!r} has unknown field {unknown[0]!r}; allowed: input, output, cached_input, "
            "cache_write, source"
        )
    values: dict[str, float | None] = {}
    for field_name in _FIELDS:
        v = entry.get(field_name)
        if v is None:
            if field_name not in _OPTIONAL:
                raise ConfigError(f"{where}: model {name!r} lacks field {field_name!r} (USD per million tokens)")
            values[field_name] = None
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise ConfigError(
                f"{where}: model {name!r} field {field_name!r} must be a non-negative number (USD per million "
                f"tokens), got {v!r}"
            )
        values[field_name] = float(v)
    return ModelPrice(
        input=values["input"] or 0.0,
        output=values["output"] or 0.0,
        cached_input=values["cached_input"],
        cache_write=values["cache_write"],
    )


def _source(name: str, entry: dict[str, Any], where: str) -> str | None:
    """A model's optional `source`: where its price was read (a pricing page URL)."""
    value = entry.get("source")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"{where}: model {name!r} field 'source' must be the pricing page's URL as text, got {value!r}"
        )
    return value.strip()


def _as_of(value: Any, where: str) -> date | None:
    """The optional top-level `as_of`: the day the prices were checked, as YYYY-MM-DD."""
    if value is None:
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    parsed = _iso_date(value) if isinstance(value, str) else None
    if parsed is None:
        example = "as YYYY-MM-DD, e.g. 2025-06-01"
        raise ConfigError(f"{where}: 'as_of' must be the date the prices were checked, {example}; got {value!r}")
    return parsed


def _iso_date(text: str) -> date | None:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        return None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line out of PyYAML's multi-line message: the problem and where."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    text = " ".join(str(problem).split())
    return f"line {mark.line + 1}, column {mark.column + 1}: {text}" if mark is not None else text
