"""Generated support-chat data: multi-turn customer conversations and the support assistant's system prompt."""

from __future__ import annotations

from typing import Any

from loadlib.data.jsonl import PREVIOUS
from loadlib.data.text import cut_to_tokens, fill, rng_for, slot_values
from loadlib.records import tokens

TOPICS = ("order", "product", "account")

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


def conversation_rows(seed: int, count: int, turns: int) -> list[dict[str, Any]]:
    """`count` conversations of `turns` user turns each: a first message on an order, product or account issue,
    then follow-ups, some quoting the previous answer (`{previous}`, filled in at run time)."""
    rows = []
    for i in range(count):
        rng = rng_for(seed, "conversation", i)
        topic = TOPICS[i % len(TOPICS)]
        slots = slot_values(rng)
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
    rng = rng_for(seed, "system", target_tokens)
    lines: list[str] = []
    length = 0
    while length < target_tokens * 6 + 200:
        line = fill(SUPPORT_POLICY_LINES[len(lines) % len(SUPPORT_POLICY_LINES)], rng)
        lines.append(line)
        length += len(line) + 1
    text = cut_to_tokens("\n".join(lines), target_tokens, " ").rstrip()
    return text, tokens.count_text(text)
