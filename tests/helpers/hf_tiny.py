"""Tiny random Hugging Face models of many architectures, saved like a user's folder.

No weights can be downloaded here, so each architecture is built from transformers' own
config class with a few layers and heads, random weights, and a tokenizer assembled
locally (word pieces for the encoders, byte-level BPE for decoders and translators), then
written with save_pretrained: the same files a real model folder has.
"""
from __future__ import annotations

from pathlib import Path

import torch

WORDS = ("the a time flies like an arrow fruit banana dog cat sees big small is all you need attention "
         "##s ##ing ##ed play run").split()
CORPUS = ["the big dog sees the small cat .", "time flies like an arrow ; fruit flies like a banana .",
          "attention is all you need , said the paper .", "der große Hund sieht die kleine Katze .",
          "the cat plays with the dog because it is small ."] * 4

# name -> (role, config maker); every one small: 2-3 layers, 4 heads, 32-48 wide.
ARCHITECTURES = ("bert", "roberta", "distilbert", "electra", "gpt2", "gpt_neox", "llama", "qwen2", "qwen3", "mistral",
                 "gemma2", "phi3", "t5", "bart", "marian")
ROLE = {"bert": "encoder", "roberta": "encoder", "distilbert": "encoder", "electra": "encoder", "gpt2": "decoder",
        "gpt_neox": "decoder", "llama": "decoder", "qwen2": "decoder", "qwen3": "decoder", "mistral": "decoder",
        "gemma2": "decoder", "phi3": "decoder", "t5": "encoder-decoder", "bart": "encoder-decoder",
        "marian": "encoder-decoder"}
# A window shorter than the test sentences, so the sliding-window layers (and their narrower
# KV cache while decoding) really differ from full attention.
SLIDING_WINDOW = 4


def _wordpiece_tokenizer():
    from transformers import BertTokenizerFast
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + list(WORDS))}
    return BertTokenizerFast(vocab=vocab, do_lower_case=True)


def _bpe_tokenizer(role: str):
    """A byte-level BPE with <pad>=0 <s>=1 </s>=2 <unk>=3; decoders get <s> in front,
    translators </s> at the end (as GPT-2/Llama and T5/BART/Marian frame their input)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    if role == "decoder":
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    else:
        tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")


def _config(arch: str, vocab: int, width: int = 32, layers: int = 2, heads: int = 4, positions: int = 64):
    import transformers as tf
    small = dict(vocab_size=vocab)
    ff, kv = 2 * width, max(1, heads // 2)
    if arch == "bert":
        return tf.BertConfig(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                             intermediate_size=ff, max_position_embeddings=positions, **small)
    if arch == "roberta":
        return tf.RobertaConfig(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                                intermediate_size=ff, max_position_embeddings=positions + 6, pad_token_id=0, **small)
    if arch == "distilbert":
        return tf.DistilBertConfig(dim=width, n_layers=layers, n_heads=heads, hidden_dim=ff,
                                   max_position_embeddings=positions, **small)
    if arch == "electra":   # embeddings narrower than the hidden width, projected up
        return tf.ElectraConfig(embedding_size=width // 2, hidden_size=width, num_hidden_layers=layers,
                                num_attention_heads=heads, intermediate_size=ff, max_position_embeddings=positions,
                                **small)
    specials = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if arch == "gpt2":
        return tf.GPT2Config(n_embd=width, n_layer=layers, n_head=heads, n_positions=positions, **small, **specials)
    if arch == "gpt_neox":
        return tf.GPTNeoXConfig(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                                intermediate_size=ff, max_position_embeddings=positions, rotary_pct=0.5,
                                **small, **specials)
    if arch == "llama":   # grouped-query attention: query heads share half as many key/value heads
        return tf.LlamaConfig(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                              num_key_value_heads=kv, intermediate_size=ff, max_position_embeddings=positions,
                              **small, **specials)
    if arch == "qwen2":   # every query head shares one key/value head
        return tf.Qwen2Config(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads,
                              num_key_value_heads=1, intermediate_size=ff, max_position_embeddings=positions,
                              **small, **specials)
    decoder = dict(hidden_size=width, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=ff,
                   max_position_embeddings=positions, **small, **specials)
    if arch == "qwen3":   # queries and keys RMS-normed per head before rotary
        return tf.Qwen3Config(num_key_value_heads=kv, head_dim=width // heads, **decoder)
    if arch == "mistral":  # every layer attends to the last SLIDING_WINDOW tokens only
        return tf.MistralConfig(num_key_value_heads=kv, head_dim=width // heads, sliding_window=SLIDING_WINDOW,
                                **decoder)
    if arch == "gemma2":  # scores soft-capped by tanh; sliding-window and full layers alternate
        return tf.Gemma2Config(num_key_value_heads=kv, head_dim=width // heads, query_pre_attn_scalar=width // heads,
                               sliding_window=SLIDING_WINDOW, attn_logit_softcapping=2.0,
                               initializer_range=0.3, **decoder)   # scores large enough for the cap to bite
    if arch == "phi3":    # one fused qkv projection
        return tf.Phi3Config(num_key_value_heads=kv, **decoder)
    if arch == "t5":
        return tf.T5Config(d_model=width, d_kv=width // heads, d_ff=ff, num_layers=layers, num_decoder_layers=layers,
                           num_heads=heads, decoder_start_token_id=0, **small, **specials)
    seq2seq = dict(d_model=width, encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=heads,
                   decoder_attention_heads=heads, encoder_ffn_dim=ff, decoder_ffn_dim=ff,
                   max_position_embeddings=positions, forced_eos_token_id=None, **small, **specials)
    if arch == "bart":
        return tf.BartConfig(decoder_start_token_id=2, **seq2seq)
    if arch == "marian":
        return tf.MarianConfig(decoder_start_token_id=0, **seq2seq)
    raise ValueError(arch)


def tiny_folder(root: Path, arch: str, seed: int = 0, **sizes) -> Path:
    """Write a tiny random ``arch`` model and its tokenizer to ``root/arch``; return the folder.
    ``sizes`` (width, layers, heads, positions) make it bigger, for benchmarks."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    folder = Path(root) / arch
    if (folder / "config.json").exists():
        return folder
    role = ROLE[arch]
    tokenizer = _wordpiece_tokenizer() if role == "encoder" else _bpe_tokenizer(role)
    config = _config(arch, max(len(tokenizer), 64), **sizes)
    torch.manual_seed(seed)
    maker = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    model = maker.from_config(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# A small chat template of our own (no real model's): turns between <|user|> / <|system|> and
# <|end|>, and the generation prompt <|assistant|>.
CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")
TURN_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]


def tiny_chat_folder(root: Path) -> Path:
    """The tiny Llama, its tokenizer given the turn tokens and CHAT_TEMPLATE (saved as
    chat_template.jinja beside it), its generation config ending at </s> and <|end|>, and
    <|end|> outweighing every other token: an instruct model whose reply ends at once."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    folder = tiny_folder(root, "llama")
    tok = AutoTokenizer.from_pretrained(str(folder))
    tok.add_special_tokens({"additional_special_tokens": TURN_TOKENS})
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(str(folder))
    model.resize_token_embeddings(len(tok))
    end = tok.convert_tokens_to_ids("<|end|>")
    with torch.no_grad():
        model.lm_head.weight[end] += 50 * model.model.norm.weight
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=[2, end], pad_token_id=0)
    model.save_pretrained(folder)
    return folder


def tiny_bert_folder(tmp_path, hidden, layers, heads):
    """A BERT of ``hidden`` x ``layers`` x ``heads`` with random weights and a word-piece
    tokenizer, saved in ``tmp_path`` like a user's folder."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path / f"bert-{hidden}-{layers}-{heads}"
    folder.mkdir()
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + list(WORDS))}
    torch.manual_seed(hidden + layers + heads)
    config = BertConfig(vocab_size=len(WORDS) + 7, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=2 * hidden, max_position_embeddings=64)
    BertModel(config).save_pretrained(folder)
    BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(folder)
    return folder
