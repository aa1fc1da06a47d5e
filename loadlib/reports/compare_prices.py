"""Which price each compared endpoint rests on, and how old it is.

A summary holds each endpoint's cost but not its model or its price's provenance, so the comparison looks the model
up: in the pool file the run used (`--pool`: each endpoint's model, and its own `prices` when it has some), else in the
summary's meta (the model of a one-endpoint run). The model's price then comes from the price table (`--price-table`,
default the bundled one), with the table's `as_of` date and the model's `source`. Reading the two files is the only
I/O; `priced` is pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from loadlib.errors import ConfigError
from loadlib.failover.pool import EndpointSpec, parse_pool, read_pool
from loadlib.records.pricing import PriceTable
from loadlib.reports.compare import Measured, Priced


def load_pool(path: str | None) -> dict[str, EndpointSpec]:
    """The endpoints of a pool file by name ({} without one); ConfigError (one line) when it is not a valid pool."""
    if not path:
        return {}
    if not Path(path).is_file():
        raise ConfigError(f"{path}: no such file; pass --pool the pool YAML file the run used")
    return {spec.name: spec for spec in parse_pool(read_pool(path), path).endpoints}


def load_table(path: str | None) -> PriceTable:
    """The price table the run used: a file, or the bundled one (ConfigError of one line when it is not valid)."""
    return PriceTable.load(path or None)


def priced(
    m: Measured, table: PriceTable, pool: Mapping[str, EndpointSpec], pool_label: str = ""
) -> tuple[Measured, Priced]:
    """The endpoint with its model and provider filled in from the pool file when it names them, and its price."""
    spec = pool.get(m.endpoint)
    if spec is not None:
        m = replace(m, model=spec.model, provider=spec.provider)
        if spec.prices is not None:
            return m, Priced(spec.model, spec.prices, "pool", source=pool_label)
    if m.model is None:
        why = "its model is not in the summary (a pool's run): pass the run's pool file with --pool"
        return m, Priced(None, None, "none", why=why)
    price = table.price(m.model)
    if price is None:
        return m, Priced(m.model, None, "none", why=f"model {m.model!r} is not in the price table ({table.source})")
    source = table.source_of(m.model) or f"price table {table.source}"
    return m, Priced(m.model, price, "table", as_of=table.as_of, source=source)
