"""Seeded text building blocks shared by every generated data set: vocabularies, placeholder values, token cuts.

Everything comes from `random.Random` seeded with a string (`"{seed}:{kind}:{index}"`, hashed with SHA-512 by
Python, so independent of PYTHONHASHSEED): the same seed gives the same bytes on every machine.
"""

from __future__ import annotations

import random
from typing import Any

from loadlib.records import tokens

PRODUCTS = (
    "Aurora X14 laptop",
    "Pulse ANC headphones",
    "Nimbus 6 smartphone",
    "Vista 27 4K monitor",
    "Orbit mesh router",
    "Stride 2 smartwatch",
    "Kinetic TKL keyboard",
    "Echo Mini speaker",
    "Volt 20K power bank",
    "Lumen S8 robot vacuum",
    "Halo doorbell camera",
    "Drift e-reader",
)
PARTS = ("screen", "hinge", "charging port", "case", "power adapter", "strap", "left earcup", "base station")
STATUSES = ("label created", "in transit", "held at customs", "out for delivery", "delivery attempted")
PAYMENTS = ("a gift card", "PayPal", "a credit card", "bank transfer", "store credit", "instalments")
CITIES = ("Lyon", "Rotterdam", "Leeds", "Porto", "Gdansk", "Malmo", "Graz", "Bilbao", "Aarhus", "Turin")
FIRST = ("Anna", "Ben", "Chloe", "David", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Karin", "Liam")
LAST = ("Berger", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Hansen", "Ivanova", "Jansen", "Kowalski")
COMPANIES = (
    "Northwind Logistics GmbH",
    "Bluefin Analytics Ltd",
    "Cedar & Stone Partners LLP",
    "Helios Components S.A.",
    "Marlow Digital B.V.",
    "Quayside Foods plc",
    "Trident Maritime AS",
    "Vantage Health Oy",
)
COUNTRIES = ("Germany", "France", "Netherlands", "Spain", "Poland", "Sweden", "Ireland", "Italy", "Portugal")
OUTCOMES = ("the refund", "the replacement", "a confirmation e-mail", "the corrected invoice", "the return label")
PROBLEMS = (
    "the page shows an error after I submit the form",
    "the code from the e-mail is rejected as expired",
    "the device still does not show up in the app",
    "the courier says the parcel was already delivered",
)
EXTRAS = (
    "the accessories were shipped separately",
    "my loyalty points were applied",
    "the warranty is registered in my name",
    "the second item in the order is also affected",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
SEGMENTS = ("Industrial Solutions", "Consumer Devices", "Software and Services", "Energy Systems", "Logistics")
REGIONS = ("Northern Europe", "Southern Europe", "North America", "Asia-Pacific", "Latin America")


def rng_for(seed: int, kind: str, index: int) -> random.Random:
    """The generator of one item: items of a data set do not shift when the count or another kind changes."""
    return random.Random(f"{seed}:{kind}:{index}")


def person(rng: random.Random) -> str:
    """A first and last name."""
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def random_date(rng: random.Random, year: int = 2025) -> str:
    """An ISO date in `year` (days up to 28, so every month is valid)."""
    return f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def slot_values(rng: random.Random) -> dict[str, Any]:
    """Values for every placeholder the templates use (unused ones are ignored by str.format)."""
    product, other = rng.sample(PRODUCTS, 2)
    name = person(rng)
    pct = rng.randint(2, 40)
    return {
        "product": product,
        "other": other,
        "part": rng.choice(PARTS),
        "status": rng.choice(STATUSES),
        "order": f"VM-{rng.randint(100000, 999999)}",
        "date": random_date(rng),
        "days": rng.choice((3, 5, 7, 10, 14, 30, 45, 60, 90)),
        "hours": rng.choice((4, 6, 12, 24, 48, 72)),
        "city": rng.choice(CITIES),
        "email": f"{name.split()[0].lower()}.{name.split()[1].lower()}@example.com",
        "amount": rng.randint(5, 950),
        "small": rng.choice((50, 100, 150, 250)),
        "payment": rng.choice(PAYMENTS),
        "outcome": rng.choice(OUTCOMES),
        "problem": rng.choice(PROBLEMS),
        "extra": rng.choice(EXTRAS),
        "weekday": rng.choice(WEEKDAYS),
        "n": rng.randint(2, 12),
        "pct": pct,
        "pct2": pct + rng.randint(1, 5),
        "sla": rng.choice(("99.5", "99.9", "99.95")),
        "years": rng.randint(2, 10),
        "year": rng.randint(2019, 2026),
        "ratio": f"{rng.uniform(0.6, 3.5):.2f}",
        "people": f"{rng.randint(800, 60000):,}",
        "service": rng.choice(("Hosting Services", "Support Services", "Managed Services", "Consulting Services")),
        "company": rng.choice(COMPANIES),
        "country": rng.choice(COUNTRIES),
        "segment": rng.choice(SEGMENTS),
        "region": rng.choice(REGIONS),
        "personal": f"{name.split()[0].lower()}{rng.randint(1, 99)}@gmail.com",
        "short": rng.choice((7, 10, 14)),
        "q": rng.randint(1, 4),
        "invoice": f"INV-{rng.randint(10000, 99999)}",
    }


def fill(template: str, rng: random.Random) -> str:
    """`template` with fresh placeholder values, so repeated templates still read differently."""
    return template.format(**slot_values(rng))


def cut_to_tokens(text: str, target: int, boundary: str) -> str:
    """The longest prefix of at most `target` tokens that ends at `boundary` (or at a token edge if none)."""
    enc = tokens.get_encoding()
    ids = enc.encode(text, disallowed_special=())
    if len(ids) <= target:
        return text
    prefix = enc.decode(ids[:target])
    cut = max(prefix.rfind(boundary), prefix.rfind(boundary.rstrip() + "\n"))
    return prefix[: cut + 1] if cut > 0 else prefix
