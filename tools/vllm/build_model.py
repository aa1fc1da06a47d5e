"""Build the real engine's tiny model offline: a random-weight Llama, a byte-level BPE tokenizer, a chat template.

Run with the engine's own Python (scripts/real_engine.sh's venv, where transformers, tokenizers and torch are):
nothing is downloaded. The weights are random (seeded), so answers are noise, but the engine does everything a
served model does: tokenizes with the template, prefills, batches, caches prefixes in blocks, decodes, counts usage,
refuses a prompt beyond `max_position_embeddings`. The tokenizer is trained on the text given (the project's docs):
English prompts take tokens of English words (about 1.4 times tiktoken's count, with 8,192 entries).

    python build_model.py OUT_DIR TEXT_FILE...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB = 8192
CONTEXT = 4096  # the served context (--max-model-len): long_document's limit on this engine
SPECIAL = ["<|begin|>", "<|end|>", "<|pad|>"]
# Roles as plain text, the answer opened by the generation prompt; string content or a list of text parts (vLLM's
# Anthropic route may hand either).
CHAT_TEMPLATE = (
    "{{ '<|begin|>' }}{% for m in messages %}{{ m['role'] }}:\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|end|>' }}\n{% endfor %}{% if add_generation_prompt %}{{ 'assistant:\n' }}{% endif %}"
)


def tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    """A byte-level BPE of VOCAB entries trained on `texts` (deterministic for the same texts)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|begin|>", eos_token="<|end|>", pad_token="<|pad|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = CONTEXT
    return fast


def model(tok: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    """4 layers, hidden 256, 4 heads of 64: tiny enough for one CPU core, a real Llama to the engine."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=256,
        intermediate_size=768,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=CONTEXT,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    return LlamaForCausalLM(config).to(torch.bfloat16)


def main(out: str, sources: list[str]) -> None:
    texts = [Path(p).read_text(encoding="utf-8", errors="replace") for p in sources]
    tok = tokenizer(texts)
    lm = model(tok)
    Path(out).mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    lm.save_pretrained(out, safe_serialization=True)
    gen = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    Path(out, "generation_config.json").write_text(json.dumps(gen))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: build_model.py OUT_DIR TEXT_FILE...")
    main(sys.argv[1], sys.argv[2:])
