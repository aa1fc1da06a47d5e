"""Generated long documents: contracts, annual reports and policies of a target token size, in numbered sections."""

from __future__ import annotations

import random
from typing import Any

from loadlib.data.text import COMPANIES, REGIONS, SEGMENTS, cut_to_tokens, fill, rng_for, slot_values
from loadlib.records import tokens

DOC_KINDS = ("contract", "annual_report", "policy")

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


def _doc_title(kind: str, rng: random.Random) -> str:
    slots = slot_values(rng)
    if kind == "contract":
        return f"Master Services Agreement between {slots['company']} and {rng.choice(COMPANIES)}"
    if kind == "annual_report":
        return f"{slots['company']} Annual Report {slots['year']}"
    return f"{slots['company']} {rng.choice(('Information Security', 'Data Protection', 'Anti-Bribery'))} Policy"


def _section(kind: str, number: int, rng: random.Random) -> str:
    """One numbered section with a heading, numbered clauses (contracts) or paragraphs (reports, policies)."""
    if kind == "contract":
        heading = CONTRACT_SECTIONS[(number - 1) % len(CONTRACT_SECTIONS)]
        sentences: tuple[str, ...] = CONTRACT_SENTENCES
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
        body = " ".join(fill(rng.choice(sentences), rng) for _ in range(rng.randint(3, 6)))
        parts.append(f"{number}.{p + 1} {body}" if kind != "annual_report" else body)
    return "\n\n".join(parts)


def document_text(seed: int, kind: str, index: int, target_tokens: int) -> str:
    """A document of `kind` with at most `target_tokens` tokens, cut at the end of a paragraph."""
    rng = rng_for(seed, f"document-{kind}-{target_tokens}", index)
    parts = [f"# {_doc_title(kind, rng)}"]
    length = len(parts[0])
    number = 0
    while length < target_tokens * 6 + 400:  # these texts run ~5 characters per o200k token; overshoot, then cut
        number += 1
        section = _section(kind, number, rng)
        parts.append(section)
        length += len(section) + 2
    return cut_to_tokens("\n\n".join(parts), target_tokens, "\n\n").rstrip()


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
