"""The model the simulated site's real vLLM serves: no weights can be downloaded here, so one is made.

A 2-layer LlamaForCausalLM (hidden 128, 2 heads of 64: vLLM's CPU attention takes head sizes 32,
64, 80, 96, 112 and 128), random bfloat16 weights from a fixed seed saved with save_pretrained as
safetensors, a byte-level BPE tokenizer of 2,048 tokens trained here on a fixed text, and a chat
template. About 1.3 MB. Written as a Hugging Face snapshot directory (config.json, the weights, the
tokenizer's files); test/site/realvllm.ts puts it in a node's HF cache under REPO below.

Run with the Python of the vLLM virtualenv (scripts/vllm.sh does, once per content of this file):
    python scripts/tiny-model.py OUT_DIR
"""

import json
import os
import sys

REPO = "sm121-test/tiny-llama"

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

SPECIAL = ["<|begin|>", "<|end|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>"]


def corpus():
    """A fixed text for the tokenizer: the same merges at every run."""
    words = (
        "the quick brown fox jumps over the lazy dog while a small model answers every question "
        "about sparks nodes engines recipes tokens streams metrics caches gateways replicas "
        "hello world serve ready first token chat completion system user assistant"
    ).split()
    lines = []
    for i in range(4000):
        lines.append(" ".join(words[(i * k) % len(words)] for k in range(1, 12)) + f" {i} {i * 7 % 1000}.")
    return lines


def tokenizer(out):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2048,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|begin|>",
        eos_token="<|end|>",
        pad_token="<|pad|>",
        chat_template=CHAT_TEMPLATE,
    )
    fast.save_pretrained(out)
    return fast


def model(out, vocab, tok):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    m = LlamaForCausalLM(config).to(torch.bfloat16)
    m.save_pretrained(out, safe_serialization=True)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tiny-model.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tok = tokenizer(out)
    model(out, len(tok), tok)
    with open(os.path.join(out, "sm121-tiny-model.json"), "w") as f:
        json.dump({"repo": REPO}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
