"""Support chat: customers hold multi-turn conversations with a support assistant.

Each user runs one conversation at a time: a system prompt, then the customer's turns, each sent with the whole
history, with think time between turns; follow-ups may quote the previous answer. Every request records its turn
number and prompt tokens, so the summary shows how the prompt and TTFT grow with the conversation. A sweep
(--chat-sweep) gives each new conversation the next system-prompt size of a list (100 to 2,000 tokens by default),
so all sizes run side by side under the same load and TTFT p50/p95 per size show what a long system prompt costs.

Prompt tokens are never counted from the whole history: the system prompt and static turns were counted when the
data was generated, a turn that quotes the previous answer is counted alone (a few dozen tokens), and the previous
answer's tokens come from the server's usage (or the count LLMUser makes after the stream ended).
"""

from __future__ import annotations

from locust import task

import functools
import itertools
import random
from dataclasses import dataclass
from typing import Any

from loadlib import data
from loadlib.data import Conversation
from loadlib.errors import ErrorClass
from loadlib.metrics import chat_results as results
from loadlib.records import tokens
from loadlib.records.record import RequestRecord
from loadlib.scenarios.base import ScenarioSpec, ScenarioUser, message_tokens, parse_range, positive
from loadlib.scenarios.conversation import Dialogue, sweep_sizes
from loadlib.settings import Options

NAME = "support_chat"
SLO = ("ttft p95 < 150ms", "error_rate < 1%")


@dataclass(frozen=True)
class ChatContext:
    conversations: tuple[Conversation, ...]
    systems: dict[int, tuple[str, int]]  # system-prompt size -> (text, tokens)
    default_system: int
    sweep: tuple[int, ...]
    turns: int
    think: tuple[float, float]
    max_tokens: int | None


def _signature(opts: Options) -> tuple[Any, ...]:
    return (
        opts.chat_turns,
        opts.chat_conversations,
        opts.chat_system_tokens,
        opts.chat_think_time,
        opts.chat_sweep,
        opts.chat_max_tokens,
        opts.chat_data_file,
        opts.data_seed,
        opts.data_cache_dir,
    )


def build_context(opts: Options) -> ChatContext:
    turns = positive(int(opts.chat_turns), "--chat-turns")
    count = positive(int(opts.chat_conversations), "--chat-conversations")
    system_size = positive(int(opts.chat_system_tokens), "--chat-system-tokens")
    seed = int(opts.data_seed)
    convs = data.conversations(seed, count, turns, str(opts.data_cache_dir or ""), str(opts.chat_data_file or ""))
    sweep = sweep_sizes(opts.chat_sweep)
    systems = {size: data.system_prompt(seed, size) for size in {system_size, *sweep}}
    return ChatContext(
        conversations=convs,
        systems=systems,
        default_system=system_size,
        sweep=sweep,
        turns=turns,
        think=parse_range(opts.chat_think_time, "--chat-think-time"),
        max_tokens=int(opts.chat_max_tokens) or None,
    )


def validate(opts: Options) -> None:
    if opts.chat_data_file:
        data.conversations(0, 1, 1, "", str(opts.chat_data_file))
    sweep_sizes(opts.chat_sweep)
    parse_range(opts.chat_think_time, "--chat-think-time")


SPEC = ScenarioSpec(NAME, build_context, validate, _signature, SLO, results=results.SECTION)


class SupportChatUser(ScenarioUser):
    """A customer talking to support: one conversation after another, a turn per task, think time between."""

    abstract = False
    scenario = NAME
    spec = SPEC
    _conversations = itertools.count()

    def on_start(self) -> None:
        self.ctx = self.data()
        self.rng = random.Random(self.user_index)
        self.dialogue: Dialogue | None = None

    def think_time(self) -> float:
        low, high = self.ctx.think
        return self.rng.uniform(low, high)

    def _new_dialogue(self) -> Dialogue:
        i = next(SupportChatUser._conversations)
        ctx = self.ctx
        step = ctx.sweep[i % len(ctx.sweep)] if ctx.sweep else None
        conv = ctx.conversations[i % len(ctx.conversations)]
        results.conversation(self.found, "started")
        return Dialogue(conv, ctx.systems[step if step is not None else ctx.default_system], step)

    def _count_turn(self, d: Dialogue, turn: int, step: int | None, record: RequestRecord, _result: object) -> None:
        """Each attempt of a turn that ended by itself, as it is recorded (so the turn counts agree with the records
        when the run's end stops the user as the answer arrives); one cut off by the end has no answer to count. The
        prompt's growth is measured within the conversation, from its first turn."""
        if record.status is ErrorClass.CUT_OFF:
            return
        prompt, growth = record.input_tokens, None
        if prompt is not None and turn == 1:
            d.first_prompt = prompt
        elif prompt is not None and d.first_prompt is not None:
            growth = (prompt - d.first_prompt) / (turn - 1)
        ttft = record.ttft_ms if record.ok else None
        results.chat_turn(self.found, turn, prompt, ttft, step, growth)

    @task
    def turn(self) -> None:
        d = self.dialogue
        if d is None or d.done or d.turn >= self.ctx.turns:
            d = self.dialogue = self._new_dialogue()
        user, user_tokens = d.next_message()
        estimate = d.history_tokens + message_tokens("user", user_tokens) + tokens.REPLY_PRIMING
        reply = self.chat(
            [*d.messages, user],
            prompt_tokens_est=estimate,
            turn=d.turn + 1,
            max_tokens=self.ctx.max_tokens,
            on_record=functools.partial(self._count_turn, d, d.turn + 1, d.step),
        )
        record = reply.record
        if not reply.ok:
            results.conversation(self.found, "abandoned")
            self.dialogue = None
            return
        answer = reply.text
        answer_tokens = record.output_tokens
        if answer_tokens is None:
            answer_tokens = tokens.count_text(answer) if answer else 0
        d.answered(user, user_tokens, answer, answer_tokens)
        if d.done or d.turn >= self.ctx.turns:
            results.conversation(self.found, "completed")
