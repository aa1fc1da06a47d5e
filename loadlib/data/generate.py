"""Deterministic generators of scenario data: support conversations, long documents, compliance cases.

Everything comes from `random.Random` seeded with a string (`"{seed}:{kind}:{index}"`, hashed with SHA-512 by
Python, so independent of PYTHONHASHSEED): the same seed gives the same bytes on every machine. Generators return
plain rows in the JSONL format of `loadlib.data.jsonl`, token counts included; counting happens here, once per data
set, and the rows are cached on disk keyed by the seed and the parameters.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from loadlib import tokens
from loadlib.data.jsonl import PREVIOUS, write_jsonl

FORMAT_VERSION = 1
DOC_KINDS = ("contract", "annual_report", "policy")
TOPICS = ("order", "product", "account")

# vocabularies

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
HIGH_RISK = ("Country A (FATF grey list)", "an offshore jurisdiction", "a sanctioned region")

FIRST_TURNS = {
    "order": (
        "Hi, I ordered the {product} on {date} (order {order}) and tracking still says '{status}'. It was due "
        "{days} days ago. Can you tell me what is going on?",
        "My {product} from order {order} arrived today with a cracked {part}. The box looked fine. What are my "
        "options?",
        "I received the wrong item for order {order}: I ordered the {product} but got something else entirely. "
        "How do I get the right one?",
        "Can I still change the delivery address of order {order}? I am moving to {city} on {date}.",
    ),
    "product": (
        "Is the {product} compatible with my {other}? I want to use them together every day.",
        "The battery of my {product} drains in about {hours} hours even though the listing says much more. Is that "
        "normal?",
        "I am deciding between the {product} and the {other}. I mostly use it for work and travel. Which would you "
        "recommend?",
        "How do I set up the {product} for the first time? The quick-start card skips the pairing step.",
    ),
    "account": (
        "I cannot log in: the password reset e-mail never arrives. My account e-mail is {email}.",
        "I lost the phone I used for two-factor authentication. How do I get back into my account?",
        "My invoice for order {order} shows the wrong VAT number. I need it corrected for my company's books.",
        "I cancelled my premium membership on {date} but was charged again. Can you refund the {amount} EUR?",
    ),
}
FOLLOW_UPS = (
    'You said "' + PREVIOUS + '". Does that still apply if I paid with {payment}?',
    'About "' + PREVIOUS + '": how long does that usually take?',
    "Thanks. If I go ahead with that, when will I get {outcome}?",
    "I tried what you suggested, but {problem}. What should I do next?",
    "Can you summarise the next steps for me as a short list?",
    "One more thing about order {order}: could you also check whether {extra}?",
    'Sorry, I do not follow the part that starts with "' + PREVIOUS + '". Could you explain it more simply?',
    "Is there anyone I can call about this, and what are your opening hours on {weekday}?",
)
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

SUPPORT_POLICY_LINES = (
    "You are the customer support assistant of Voltmart, an online electronics retailer operating in the EU.",
    "Be concise, friendly and precise; never invent order details you were not given.",
    "Orders ship within {n} working days; standard delivery takes 2-5 working days, express 1-2.",
    "Customers may return unused items within 30 days and opened items within 14 days if they are undamaged.",
    "Damaged-on-arrival items are replaced free of charge once the customer sends a photo of the damage.",
    "Refunds are issued to the original payment method within {n} working days of receiving the return.",
    "Gift-card payments are refunded as store credit; instalment plans are cancelled and refunded pro rata.",
    "Password resets expire after {n} minutes; ask customers to check their spam folder before resending.",
    "Two-factor recovery requires the recovery code or an identity check through the secure upload form.",
    "Invoices can be corrected within 90 days; a corrected invoice replaces the original with a new number.",
    "Premium membership renews monthly; cancellations take effect at the end of the paid period.",
    "Escalate to a human agent when the customer mentions legal action, injury or a payment dispute.",
    "The {product} carries a {n}-year warranty; the battery is covered for 12 months.",
    "Never ask for full card numbers or passwords; order numbers and e-mail addresses are enough to identify "
    "an account.",
    "Offer the customer a short list of next steps at the end of a resolved conversation.",
    "Phone support is open Monday to Friday 8:00-20:00 and Saturday 9:00-14:00 CET.",
)

CONTRACT_SECTIONS = (
    "Definitions and Interpretation",
    "Scope of Services",
    "Term and Termination",
    "Fees, Invoicing and Payment",
    "Service Levels",
    "Confidentiality",
    "Data Protection",
    "Intellectual Property",
    "Warranties",
    "Limitation of Liability",
    "Indemnification",
    "Insurance",
    "Subcontracting and Assignment",
    "Force Majeure",
    "Dispute Resolution",
    "Governing Law and Jurisdiction",
    "Notices",
    "Miscellaneous",
)
CONTRACT_SENTENCES = (
    "The Supplier shall provide the {service} in accordance with Schedule {n} and Good Industry Practice.",
    "Either Party may terminate this Agreement by giving not less than {days} days' written notice to the other.",
    "The Customer shall pay each undisputed invoice within {days} days of the date of receipt.",
    "Fees are exclusive of VAT, which shall be payable in addition at the rate in force from time to time.",
    "The Supplier shall achieve a monthly availability of at least {sla} per cent for the {service}.",
    "Where a Service Level is missed, the Customer shall be entitled to a service credit of {pct} per cent of "
    "the monthly fees.",
    "Each Party shall keep the other Party's Confidential Information secret for {years} years after termination.",
    "The Supplier shall process Personal Data only on the documented instructions of the Customer.",
    "The Supplier shall notify the Customer without undue delay, and in any event within {hours} hours, of a "
    "Personal Data Breach.",
    "All Intellectual Property Rights in the Deliverables shall vest in the Customer on payment in full.",
    "Nothing in this Agreement limits liability for death or personal injury caused by negligence or for fraud.",
    "Subject to clause {n}, each Party's aggregate liability shall not exceed {pct} per cent of the fees paid in "
    "the preceding twelve months.",
    "The Supplier shall maintain professional indemnity insurance of not less than EUR {amount} per claim.",
    "The Supplier shall not subcontract any of its obligations without the prior written consent of {company}.",
    "Neither Party shall be liable for any delay caused by a Force Majeure Event lasting less than {days} days.",
    "Any dispute shall first be referred to the Parties' senior representatives, who shall meet within {days} days.",
    "This Agreement is governed by the laws of {country} and the courts of {city} have exclusive jurisdiction.",
    "Notices shall be given in writing and delivered by hand, by courier or by e-mail to the addresses in clause {n}.",
    "A waiver of any right under this Agreement is only effective if it is in writing.",
    "If any provision is found invalid, the remaining provisions shall continue in full force and effect.",
)
REPORT_SECTIONS = (
    "Letter to Shareholders",
    "Business Overview",
    "Market Environment",
    "Financial Highlights",
    "Segment Performance: {segment}",
    "Regional Review: {region}",
    "Cash Flow and Liquidity",
    "Risk Factors",
    "Sustainability",
    "Corporate Governance",
    "Remuneration Report",
    "Outlook",
)
SEGMENTS = ("Industrial Solutions", "Consumer Devices", "Software and Services", "Energy Systems", "Logistics")
REGIONS = ("Northern Europe", "Southern Europe", "North America", "Asia-Pacific", "Latin America")
REPORT_SENTENCES = (
    "Revenue in {segment} grew by {pct} per cent to EUR {amount} million, driven by strong demand in {region}.",
    "Adjusted EBITDA margin improved to {pct} per cent as procurement savings offset higher wage costs.",
    "Free cash flow amounted to EUR {amount} million, allowing the Board to propose a dividend of EUR {small} "
    "per share.",
    "Order intake reached EUR {amount} million, a book-to-bill ratio of {ratio}.",
    "Net debt decreased by EUR {amount} million and leverage stood at {ratio} times EBITDA at year end.",
    "Capital expenditure of EUR {amount} million was focused on automation and the new plant in {city}.",
    "The Group employed {people} people at year end, {pct} per cent of them outside {country}.",
    "Currency movements reduced reported revenue by {pct} per cent, mainly through the weaker dollar.",
    "Scope 1 and 2 emissions fell by {pct} per cent against the {year} baseline.",
    "The main risks remain supply-chain disruption, cyber attacks and the pace of interest-rate cuts.",
    "The Audit Committee met {n} times and reviewed the effectiveness of internal controls.",
    "For {year}, management expects organic growth of {pct} to {pct2} per cent and a stable margin.",
    "Research and development spending rose to {pct} per cent of revenue, with {n} new products launched.",
    "Working capital increased by EUR {amount} million, reflecting higher inventories ahead of product launches.",
)
POLICY_SECTIONS = (
    "Purpose",
    "Scope",
    "Definitions",
    "Roles and Responsibilities",
    "Policy Statements",
    "Procedures",
    "Records and Retention",
    "Training",
    "Exceptions",
    "Monitoring and Enforcement",
    "Review",
)
POLICY_SENTENCES = (
    "This policy applies to all employees, contractors and temporary staff of {company}.",
    "Line managers are responsible for ensuring that their teams complete the annual training within {days} days.",
    "Personal data must be classified as Confidential and stored only in approved systems.",
    "Access rights shall be reviewed every {n} months and revoked within {hours} hours of a role change.",
    "Any suspected breach of this policy must be reported to the Compliance Officer without delay.",
    "Exceptions require the written approval of the Chief Risk Officer and are valid for at most {n} months.",
    "Records shall be retained for {years} years and securely destroyed at the end of the retention period.",
    "Gifts and hospitality above EUR {small} in value must be declared in the register within {days} days.",
    "Third parties must pass due-diligence screening before the first payment is made to them.",
    "Violations may lead to disciplinary action up to and including dismissal.",
    "The policy owner reviews this policy at least every {n} months or after a material change in law.",
    "Staff working remotely must use the corporate VPN and must not store company data on personal devices.",
)

POLICIES = {
    "transaction": (
        "Anti-Money-Laundering Transaction Monitoring Policy",
        (
            "R1: Cash or transfers just below the EUR 10,000 reporting threshold, repeated within 7 days, indicate "
            "structuring and must be flagged (high).",
            "R2: Payments to or from high-risk jurisdictions require enhanced due diligence (high).",
            "R3: The stated purpose must match the counterparties' business; a mismatch is a finding (medium).",
            "R4: Round-amount transfers above EUR 50,000 without supporting invoice require review (medium).",
            "R5: Rapid movement of funds in and out of an account within 48 hours indicates layering (high).",
            "R6: Payments involving a politically exposed person require senior approval (medium).",
            "R7: Third-party payments on behalf of a customer require documented justification (low).",
            "R8: Transactions with incomplete originator or beneficiary information must be held (medium).",
        ),
    ),
    "email": (
        "Employee Communications and Conduct Policy",
        (
            "C1: Staff must not promise or imply guaranteed investment returns (high).",
            "C2: Client data may only be sent to approved company addresses, never to personal accounts (high).",
            "C3: Business must not be moved to unrecorded channels such as personal messaging apps (high).",
            "C4: Staff must not request deletion of records relevant to a client or an investigation (high).",
            "C5: Material non-public information must not be shared outside the insider list (high).",
            "C6: Gifts above EUR 100 must be declared before acceptance (medium).",
            "C7: Language must be professional; harassment or discrimination is prohibited (medium).",
            "C8: External e-mails must carry the regulatory disclaimer (low).",
        ),
    ),
    "clause": (
        "Contracting Standards Policy",
        (
            "K1: The supplier's liability must be capped; unlimited liability for the company is prohibited (high).",
            "K2: Automatic renewal terms longer than 12 months require legal approval (medium).",
            "K3: Personal data may leave the EEA only under standard contractual clauses (high).",
            "K4: Payment terms shorter than 30 days require finance approval (low).",
            "K5: The governing law must be that of an EU member state (medium).",
            "K6: The company must keep the right to terminate for convenience with at most 90 days' notice (medium).",
            "K7: Exclusivity obligations on the company are prohibited without board approval (high).",
            "K8: Audit rights over suppliers processing personal data are mandatory (medium).",
        ),
    ),
}
REVIEW_INSTRUCTIONS = (
    "Review the case below against this policy. Report every rule the case breaks, quoting the evidence "
    "verbatim, with the rule id and a severity. Give the verdict (compliant, violation or needs_review) and a "
    "risk score from 0 to 100. Answer only with the JSON object the schema describes."
)
EMAIL_LINES = (
    "As discussed, this fund is a safe bet: you are guaranteed at least {pct}% a year.",
    "Can you forward the full client list to my personal address {personal}? I want to work on it at home.",
    "Let's continue this on WhatsApp so it does not end up in the archive.",
    "Please delete the thread about the {company} account before the auditors arrive on {weekday}.",
    "Between us, the merger with {company} will be announced on {weekday}; you may want to buy before then.",
    "Thanks for the tickets to the final, that was very generous of {company}.",
    "Attached is the quarterly statement for your portfolio; let me know if you have questions.",
    "The meeting with {company} is confirmed for {weekday} at 10:00 in the {city} office.",
    "Please find the signed engagement letter attached; the onboarding checklist follows next week.",
    "Could you send me the draft minutes so I can add the action items?",
)
CLAUSES = (
    "The Customer's liability under or in connection with this Agreement shall be unlimited.",
    "This Agreement renews automatically for successive periods of {years} years unless terminated by either "
    "Party with twelve months' notice.",
    "The Supplier may transfer Personal Data to any sub-processor worldwide without notice to the Customer.",
    "Invoices are payable within {short} days of issue.",
    "This Agreement is governed by the laws of the State of New York.",
    "The Customer may not terminate this Agreement for convenience before the end of the Initial Term.",
    "During the Term the Customer shall purchase such services exclusively from the Supplier.",
    "The Supplier shall permit the Customer to audit its processing of Personal Data once per year.",
    "The Supplier's aggregate liability is capped at the fees paid in the twelve months before the claim.",
    "Personal Data shall be transferred outside the EEA only under the Standard Contractual Clauses.",
    "Either Party may terminate this Agreement for convenience on ninety days' written notice.",
)
PURPOSES = (
    "consulting services Q{q}",
    "invoice {invoice}",
    "loan repayment",
    "purchase of machinery",
    "family support",
    "software licence renewal",
    "commission",
    "investment",
)


def _rng(seed: int, kind: str, index: int) -> random.Random:
    return random.Random(f"{seed}:{kind}:{index}")


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _date(rng: random.Random, year: int = 2025) -> str:
    return f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _slots(rng: random.Random) -> dict[str, Any]:
    """Values for every placeholder the templates use (unused ones are ignored by str.format)."""
    product, other = rng.sample(PRODUCTS, 2)
    name = _person(rng)
    pct = rng.randint(2, 40)
    return {
        "product": product,
        "other": other,
        "part": rng.choice(PARTS),
        "status": rng.choice(STATUSES),
        "order": f"VM-{rng.randint(100000, 999999)}",
        "date": _date(rng),
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


def _fill(template: str, rng: random.Random) -> str:
    return template.format(**_slots(rng))


# support chat


def conversation_rows(seed: int, count: int, turns: int) -> list[dict[str, Any]]:
    """`count` conversations of `turns` user turns each: a first message on an order, product or account issue,
    then follow-ups, some quoting the previous answer (`{previous}`, filled in at run time)."""
    rows = []
    for i in range(count):
        rng = _rng(seed, "conversation", i)
        topic = TOPICS[i % len(TOPICS)]
        slots = _slots(rng)
        texts = [rng.choice(FIRST_TURNS[topic]).format(**slots)]
        follow = list(FOLLOW_UPS)
        rng.shuffle(follow)
        while len(texts) < turns:
            texts.append(follow[(len(texts) - 1) % len(follow)].replace(PREVIOUS, "\0").format(**slots))
        texts = [t.replace("\0", PREVIOUS) for t in texts]
        counts = [None if PREVIOUS in t else tokens.count_text(t) for t in texts]
        rows.append({"id": f"conv-{i:05d}", "topic": topic, "turns": texts, "turn_tokens": counts})
    return rows


def system_prompt(seed: int, target_tokens: int) -> tuple[str, int]:
    """A support system prompt of about `target_tokens` tokens (cut at a word end) and its exact count."""
    rng = _rng(seed, "system", target_tokens)
    lines: list[str] = []
    length = 0
    while length < target_tokens * 6 + 200:
        line = _fill(SUPPORT_POLICY_LINES[len(lines) % len(SUPPORT_POLICY_LINES)], rng)
        lines.append(line)
        length += len(line) + 1
    text = _cut_to_tokens("\n".join(lines), target_tokens, " ").rstrip()
    return text, tokens.count_text(text)


def _cut_to_tokens(text: str, target: int, boundary: str) -> str:
    """The longest prefix of at most `target` tokens that ends at `boundary` (or at a token edge if none)."""
    enc = tokens.get_encoding()
    ids = enc.encode(text, disallowed_special=())
    if len(ids) <= target:
        return text
    prefix = enc.decode(ids[:target])
    cut = max(prefix.rfind(boundary), prefix.rfind(boundary.rstrip() + "\n"))
    return prefix[: cut + 1] if cut > 0 else prefix


# long documents


def _doc_title(kind: str, rng: random.Random) -> str:
    slots = _slots(rng)
    if kind == "contract":
        return f"Master Services Agreement between {slots['company']} and {rng.choice(COMPANIES)}"
    if kind == "annual_report":
        return f"{slots['company']} Annual Report {slots['year']}"
    return f"{slots['company']} {rng.choice(('Information Security', 'Data Protection', 'Anti-Bribery'))} Policy"


def _section(kind: str, number: int, rng: random.Random) -> str:
    """One numbered section with a heading, numbered clauses (contracts) or paragraphs (reports, policies)."""
    if kind == "contract":
        heading = CONTRACT_SECTIONS[(number - 1) % len(CONTRACT_SECTIONS)]
        sentences = CONTRACT_SENTENCES
    elif kind == "annual_report":
        heading = REPORT_SECTIONS[(number - 1) % len(REPORT_SECTIONS)].format(
            segment=rng.choice(SEGMENTS), region=rng.choice(REGIONS)
        )
        sentences = REPORT_SENTENCES
    else:
        heading = POLICY_SECTIONS[(number - 1) % len(POLICY_SECTIONS)]
        sentences = POLICY_SENTENCES
    parts = [f"## {number}. {heading}"]
    for p in range(rng.randint(3, 6)):
        body = " ".join(_fill(rng.choice(sentences), rng) for _ in range(rng.randint(3, 6)))
        parts.append(f"{number}.{p + 1} {body}" if kind != "annual_report" else body)
    return "\n\n".join(parts)


def document_text(seed: int, kind: str, index: int, target_tokens: int) -> str:
    """A document of `kind` with at most `target_tokens` tokens, cut at the end of a paragraph."""
    rng = _rng(seed, f"document-{kind}-{target_tokens}", index)
    parts = [f"# {_doc_title(kind, rng)}"]
    length = len(parts[0])
    number = 0
    while length < target_tokens * 6 + 400:  # these texts run ~5 characters per o200k token; overshoot, then cut
        number += 1
        section = _section(kind, number, rng)
        parts.append(section)
        length += len(section) + 2
    return _cut_to_tokens("\n\n".join(parts), target_tokens, "\n\n").rstrip()


def document_rows(seed: int, sizes: tuple[int, ...], per_size: int) -> list[dict[str, Any]]:
    """`per_size` documents per target size, kinds rotating over contract, annual report and policy."""
    rows = []
    for size in sizes:
        for i in range(per_size):
            kind = DOC_KINDS[(i + sizes.index(size)) % len(DOC_KINDS)]
            text = document_text(seed, kind, i, size)
            title = text.splitlines()[0].lstrip("# ").strip()
            n = tokens.count_text(text)
            rows.append({"id": f"doc-{size}-{i:03d}", "kind": kind, "title": title, "text": text, "tokens": n})
    return rows


# compliance


def policy_text(kind: str) -> str:
    title, rules = POLICIES[kind]
    return f"# {title}\n\n" + "\n".join(rules) + "\n\n" + REVIEW_INSTRUCTIONS


def _transaction(rng: random.Random, case_id: str) -> str:
    slots = _slots(rng)
    suspicious = rng.random() < 0.5
    amount = rng.choice((9_850, 9_900, 9_990, 50_000, 120_000)) if suspicious else rng.randint(120, 45_000)
    record = {
        "case_id": case_id,
        "date": slots["date"],
        "amount": amount,
        "currency": "EUR",
        "channel": rng.choice(("SEPA", "SWIFT", "card", "cash deposit", "instant payment")),
        "originator": {"name": _person(rng), "country": rng.choice(COUNTRIES)},
        "beneficiary": {
            "name": slots["company"],
            "country": rng.choice(HIGH_RISK) if suspicious and rng.random() < 0.5 else rng.choice(COUNTRIES),
        },
        "purpose": _fill(rng.choice(PURPOSES), rng),
        "prior_transfers_7d": rng.randint(2, 5) if suspicious else rng.randint(0, 1),
    }
    return f"Transaction {case_id}:\n" + json.dumps(record, indent=2)


def _email(rng: random.Random, case_id: str) -> str:
    slots = _slots(rng)
    sender, receiver = _person(rng), _person(rng)
    body = " ".join(_fill(line, rng) for line in rng.sample(EMAIL_LINES, rng.randint(2, 4)))
    return (
        f"E-mail {case_id}\nFrom: {sender} <{sender.split()[0].lower()}@voltmart.example>\n"
        f"To: {receiver} <{receiver.split()[0].lower()}@client.example>\nDate: {slots['date']}\n"
        f"Subject: {rng.choice(('Follow-up', 'Your portfolio', 'Next steps', 'Quick question', 'Re: meeting'))}\n\n"
        f"Dear {receiver.split()[0]},\n\n{body}\n\nBest regards,\n{sender}"
    )


def _clause(rng: random.Random, case_id: str) -> str:
    clauses = [_fill(c, rng) for c in rng.sample(CLAUSES, rng.randint(1, 3))]
    numbered = "\n".join(f"{rng.randint(2, 19)}.{i + 1} {c}" for i, c in enumerate(clauses))
    return f"Contract clause {case_id} (supplier draft from {rng.choice(COMPANIES)}):\n{numbered}"


_CASES: dict[str, Callable[[random.Random, str], str]] = {
    "transaction": _transaction,
    "email": _email,
    "clause": _clause,
}


def case_rows(seed: int, count: int) -> list[dict[str, Any]]:
    """`count` cases, kinds rotating; each row carries its policy and both token counts."""
    policies = {kind: policy_text(kind) for kind in _CASES}
    policy_tokens = {kind: tokens.count_text(text) for kind, text in policies.items()}
    rows = []
    for i in range(count):
        kind = tuple(_CASES)[i % len(_CASES)]
        case_id = f"{kind[:2].upper()}-{i:05d}"
        case = _CASES[kind](_rng(seed, f"case-{kind}", i), case_id)
        rows.append(
            {
                "id": case_id,
                "kind": kind,
                "policy": policies[kind],
                "case": case,
                "policy_tokens": policy_tokens[kind],
                "case_tokens": tokens.count_text(case),
            }
        )
    return rows


# on-disk cache


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "loadlib" / "data"


def cache_path(cache_dir: Path, kind: str, params: dict[str, Any]) -> Path:
    """`<dir>/<kind>-<hash of version, seed and parameters>.jsonl`."""
    key = orjson.dumps({"v": FORMAT_VERSION, "kind": kind, **params}, option=orjson.OPT_SORT_KEYS)
    return cache_dir / f"{kind}-{hashlib.sha256(key).hexdigest()[:16]}.jsonl"


def cached(
    kind: str, params: dict[str, Any], build: Callable[[], list[dict[str, Any]]], cache_dir: Path | None
) -> Path:
    """The cache file of this data set, generated (and counted) only when it is not there yet."""
    path = cache_path(cache_dir or default_cache_dir(), kind, params)
    if not path.exists():
        write_jsonl(path, build())
    return path
