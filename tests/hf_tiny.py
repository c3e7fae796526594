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
ARCHITECTURES = ("bert", "roberta", "distilbert", "gpt2", "gpt_neox", "llama", "qwen2", "t5", "bart", "marian")
ROLE = {"bert": "encoder", "roberta": "encoder", "distilbert": "encoder", "gpt2": "decoder", "gpt_neox": "decoder",
        "llama": "decoder", "qwen2": "decoder", "t5": "encoder-decoder", "bart": "encoder-decoder",
        "marian": "encoder-decoder"}


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


def _config(arch: str, vocab: int):
    import transformers as tf
    small = dict(vocab_size=vocab)
    if arch == "bert":
        return tf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                             max_position_embeddings=64, **small)
    if arch == "roberta":
        return tf.RobertaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                max_position_embeddings=70, pad_token_id=0, **small)
    if arch == "distilbert":
        return tf.DistilBertConfig(dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64, **small)
    specials = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    if arch == "gpt2":
        return tf.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=64, **small, **specials)
    if arch == "gpt_neox":
        return tf.GPTNeoXConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                max_position_embeddings=64, rotary_pct=0.5, **small, **specials)
    if arch == "llama":   # grouped-query attention: 4 query heads share 2 key/value heads
        return tf.LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                              intermediate_size=64, max_position_embeddings=64, **small, **specials)
    if arch == "qwen2":
        return tf.Qwen2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                              intermediate_size=64, max_position_embeddings=64, **small, **specials)
    if arch == "t5":
        return tf.T5Config(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                           decoder_start_token_id=0, **small, **specials)
    if arch == "bart":
        return tf.BartConfig(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                             decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                             max_position_embeddings=64, decoder_start_token_id=2, forced_eos_token_id=None,
                             **small, **specials)
    if arch == "marian":
        return tf.MarianConfig(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                               decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                               max_position_embeddings=64, decoder_start_token_id=0, forced_eos_token_id=None,
                               **small, **specials)
    raise ValueError(arch)


def tiny_folder(root: Path, arch: str, seed: int = 0) -> Path:
    """Write a tiny random ``arch`` model and its tokenizer to ``root/arch``; return the folder."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    folder = Path(root) / arch
    if (folder / "config.json").exists():
        return folder
    role = ROLE[arch]
    tokenizer = _wordpiece_tokenizer() if role == "encoder" else _bpe_tokenizer(role)
    config = _config(arch, max(len(tokenizer), 64))
    torch.manual_seed(seed)
    maker = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    model = maker.from_config(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
