"""Generated compliance cases (transactions, e-mails, contract clauses), each with the policy it is reviewed against."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from loadlib.data.text import COMPANIES, COUNTRIES, fill, person, rng_for, slot_values
from loadlib.records import tokens

HIGH_RISK = ("Country A (FATF grey list)", "an offshore jurisdiction", "a sanctioned region")

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
JSON_ANSWER = "Answer only with the JSON object the schema describes."
REVIEW_INSTRUCTIONS = (
    "Review the case below against this policy. Report every rule the case breaks, quoting the evidence "
    "verbatim, with the rule id and a severity. Give the verdict (compliant, violation or needs_review) and a "
    "risk score from 0 to 100. " + JSON_ANSWER
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


def policy_text(kind: str) -> str:
    """The policy a case of `kind` is reviewed against, ending with the review instructions."""
    title, rules = POLICIES[kind]
    return f"# {title}\n\n" + "\n".join(rules) + "\n\n" + REVIEW_INSTRUCTIONS


def _transaction(rng: random.Random, case_id: str) -> str:
    slots = slot_values(rng)
    suspicious = rng.random() < 0.5
    amount = rng.choice((9_850, 9_900, 9_990, 50_000, 120_000)) if suspicious else rng.randint(120, 45_000)
    record = {
        "case_id": case_id,
        "date": slots["date"],
        "amount": amount,
        "currency": "EUR",
        "channel": rng.choice(("SEPA", "SWIFT", "card", "cash deposit", "instant payment")),
        "originator": {"name": person(rng), "country": rng.choice(COUNTRIES)},
        "beneficiary": {
            "name": slots["company"],
            "country": rng.choice(HIGH_RISK) if suspicious and rng.random() < 0.5 else rng.choice(COUNTRIES),
        },
        "purpose": fill(rng.choice(PURPOSES), rng),
        "prior_transfers_7d": rng.randint(2, 5) if suspicious else rng.randint(0, 1),
    }
    return f"Transaction {case_id}:\n" + json.dumps(record, indent=2)


def _email(rng: random.Random, case_id: str) -> str:
    slots = slot_values(rng)
    sender, receiver = person(rng), person(rng)
    body = " ".join(fill(line, rng) for line in rng.sample(EMAIL_LINES, rng.randint(2, 4)))
    return (
        f"E-mail {case_id}\nFrom: {sender} <{sender.split()[0].lower()}@voltmart.example>\n"
        f"To: {receiver} <{receiver.split()[0].lower()}@client.example>\nDate: {slots['date']}\n"
        f"Subject: {rng.choice(('Follow-up', 'Your portfolio', 'Next steps', 'Quick question', 'Re: meeting'))}\n\n"
        f"Dear {receiver.split()[0]},\n\n{body}\n\nBest regards,\n{sender}"
    )


def _clause(rng: random.Random, case_id: str) -> str:
    clauses = [fill(c, rng) for c in rng.sample(CLAUSES, rng.randint(1, 3))]
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
        case = _CASES[kind](rng_for(seed, f"case-{kind}", i), case_id)
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
