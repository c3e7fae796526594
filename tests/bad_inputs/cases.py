"""The generator of broken and hostile inputs: model files, texts and option values.

Every case is a ``Case``: the category it counts under, a name, the CLI arguments that feed
it to a command, and (for model files) the source the window's loader opens. ``ok`` marks
inputs a model can legitimately take (an emoji, a right-to-left sentence): for those a
normal result is as good as a clean refusal. ``marker`` is a file that exists only if code
shipped inside the input ran.

Categories (the closing note of issue #14 counts per category):
  hf-folder  Hugging Face folders: missing or foreign parts, bad config JSON, wrong shapes
  config     attnscope checkpoints whose config values are out of range or of the wrong type
  nanogpt    nanoGPT ckpt.pt files with broken model_args or model
  memory     sizes that would take unbounded memory or time (layers 10**9, zip bombs, ...)
  code       inputs that try to make attnscope run code (pickles, auto_map)
  metadata   checkpoints whose training metadata names files or absurd split sizes
  garbage    files that load but would give silent garbage (NaN weights, 1 position, no tokenizer)
  damaged    damaged files: empty, truncated, random bytes, wrong dtypes, bad metadata
  text       hostile texts in each of the seven text arguments
  option     out-of-range option values
  recording  recordings with descriptions of the wrong type or size, long ones drawn as PNG, and
             a recording given to the commands that need a model (issue 40)
"""
from __future__ import annotations

import json
import os
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

MARKER_NAME = "CODE_RAN.txt"
SECRET = "SECRET-LINE-7f3a"
BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "checkpoints"


@dataclass
class Case:
    category: str
    name: str
    argv: list[str]
    source: str | None = None   # what the window's loader opens (None: not a model file case)
    ok: bool = False            # a normal result (exit 0) is acceptable too
    loader_ok: bool = False     # the model itself is usable (the command must still refuse)
    marker: str | None = None   # must not exist afterwards (code from the input ran)
    secret: str | None = None   # must not appear in any output (a file the user did not name was read)
    tags: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return self.__dict__.copy()


# ---- the commands a model file is fed through --------------------------------------------
def file_commands(source: str, out: Path, index: int) -> list[str]:
    """One of the commands that open a model, chosen by ``index`` so every command gets its share."""
    choices = [
        ["translate", source, "the dog ."],
        ["generate", source, "the dog"],
        ["export", source, "--text", "the dog", "--out", str(out / f"export-{index}"), "--format", "npz"],
        ["eval", source, "--limit", "5"],
        ["compare", source, "--text", "the dog"],
    ]
    return choices[index % len(choices)]


class Factory:
    """Writes broken files under ``root``; the good models they derive from are built once."""

    def __init__(self, root: Path, bomb_mib: int = 256):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.bomb_mib = bomb_mib
        self.cases: list[Case] = []
        self._parts: dict[str, tuple[dict, dict]] = {}
        self._hf: Path | None = None

    # ---- bookkeeping -------------------------------------------------------------------
    def add(self, category: str, name: str, source: str | Path, **kw) -> Case:
        source = str(source)
        argv = kw.pop("argv", None) or file_commands(source, self.root / "out", len(self.cases))
        case = Case(category, name, argv, source=source, **kw)
        self.cases.append(case)
        return case

    def path(self, name: str) -> Path:
        return self.root / name

    # ---- attnscope checkpoints -----------------------------------------------------------
    def parts(self, family: str) -> tuple[dict, dict]:
        """(metadata, tensors) of a good random checkpoint of ``family``."""
        if family not in self._parts:
            from safetensors import safe_open

            from attnscope.engine.loading.checkpoint import save_checkpoint
            from attnscope.engine.loading.demo import random_model

            good = save_checkpoint(random_model(family, seed=1), self.path(f"good-{family}.safetensors"))
            with safe_open(str(good), framework="pt") as f:
                self._parts[family] = (dict(f.metadata()), {k: f.get_tensor(k) for k in f.keys()})
        meta, tensors = self._parts[family]
        return dict(meta), dict(tensors)

    def checkpoint(self, name: str, family: str, config: dict | None = None, meta: dict | None = None,
                   tensors=None, drop: tuple = ()) -> Path:
        from safetensors.torch import save_file

        m, t = self.parts(family)
        if config:
            c = json.loads(m["config"])
            c.update(config)
            m["config"] = json.dumps(c)
        m.update(meta or {})
        for key in drop:
            m.pop(key, None)
        if tensors is not None:
            t = tensors(t)
        path = self.path(name)
        save_file(t, str(path), metadata=m)
        return path

    def consistent(self, name: str, family: str, **config) -> Path:
        """A checkpoint whose tensors match an odd but buildable config (e.g. 1 position)."""
        from attnscope.engine.loading.checkpoint import checkpoint_metadata
        from attnscope.engine.loading.demo import random_model
        from attnscope.engine.loading.loaded import LoadedModel
        from attnscope.engine.models import FAMILIES
        from safetensors.torch import save_file

        base = random_model(family, seed=2)
        model_cls, config_cls = FAMILIES[family]
        import dataclasses
        cfg = config_cls(**{**dataclasses.asdict(base.model.config), **config})
        model = model_cls(cfg)
        loaded = LoadedModel(name, family, model, base.tokenizer)
        path = self.path(name)
        seen, state = set(), {}
        for k, v in model.state_dict().items():
            key = (v.data_ptr(), tuple(v.shape))
            if key not in seen:
                seen.add(key)
                state[k] = v.contiguous()
        save_file(state, str(path), metadata=checkpoint_metadata(loaded))
        return path

    # ---- PyTorch / nanoGPT files ----------------------------------------------------------
    def nanogpt_parts(self) -> tuple[dict, dict]:
        import torch  # noqa: F401

        _, tensors = self.parts("gpt")
        c = json.loads(self.parts("gpt")[0]["config"])
        args = {k: c[k] for k in ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size")}
        args["dropout"] = 0.0
        return args, tensors

    def torch_file(self, name: str, obj) -> Path:
        import torch

        path = self.path(name)
        torch.save(obj, path)
        return path

    def zip_bomb(self, name: str, mib: int) -> Path:
        """A torch-style zip whose data.pkl inflates to ``mib`` MiB of zeros."""
        path = self.path(name)
        chunk = bytes(1 << 20)
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/version", "3\n")
            info = zipfile.ZipInfo("archive/data.pkl")
            info.compress_type = zipfile.ZIP_DEFLATED
            with z.open(info, "w", force_zip64=True) as f:
                for _ in range(mib):
                    f.write(chunk)
        return path

    # ---- Hugging Face folders ---------------------------------------------------------------
    WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "the", "a", "dog", "cat", "sees", "big",
             "small", "time", "flies", "like", "an", "arrow", "##s", "##ing"]

    def hf_base(self) -> Path:
        if self._hf is None:
            import torch
            from transformers import BertConfig, BertModel, BertTokenizerFast

            folder = self.path("hf-base")
            torch.manual_seed(0)
            config = BertConfig(vocab_size=len(self.WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=32)
            BertModel(config).save_pretrained(folder)
            BertTokenizerFast(vocab={t: i for i, t in enumerate(self.WORDS)}, do_lower_case=True).save_pretrained(folder)
            self._hf = folder
        return self._hf

    def hf(self, name: str, config: dict | None = None, remove: tuple = (), weights=None,
           files: dict | None = None, raw_config: str | None = None) -> Path:
        folder = self.path(name)
        shutil.copytree(self.hf_base(), folder)
        if config is not None:
            c = json.loads((folder / "config.json").read_text())
            c.update(config)
            (folder / "config.json").write_text(json.dumps(c))
        if raw_config is not None:
            (folder / "config.json").write_text(raw_config)
        if weights is not None:
            from safetensors.torch import load_file, save_file
            t = load_file(str(folder / "model.safetensors"))
            save_file(weights(t), str(folder / "model.safetensors"), metadata={"format": "pt"})
        for rel in remove:
            p = folder / rel
            shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
        for rel, content in (files or {}).items():
            p = folder / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content)
        return folder

    def hf_sharded(self, name: str, change=None, fmt: str = "safetensors") -> Path:
        """The base BERT saved in shards (``fmt``: safetensors or bin, with its index), then
        ``change(folder, index)`` applied (index: the parsed index.json, written back after)."""
        from tests.helpers.hf_sharded import save_sharded
        import transformers

        folder = self.path(name)
        model = transformers.BertModel.from_pretrained(str(self.hf_base()))
        tokenizer = transformers.BertTokenizerFast.from_pretrained(str(self.hf_base()))
        save_sharded(model, tokenizer, folder, fmt, max_shard_size="10KB")
        index_file = folder / ("model.safetensors.index.json" if fmt == "safetensors" else "pytorch_model.bin.index.json")
        index = json.loads(index_file.read_text())
        if change is not None:
            text = change(folder, index)
            index_file.write_text(text if isinstance(text, str) else json.dumps(index))
        return folder

    def hf_other(self, name: str, kind: str) -> Path:
        import torch
        folder = self.path(name)
        torch.manual_seed(0)
        if kind == "gpt2":
            from transformers import GPT2Config, GPT2Model
            GPT2Model(GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=1, n_head=2)).save_pretrained(folder)
        else:
            from transformers import T5Config, T5Model
            T5Model(T5Config(vocab_size=50, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2)).save_pretrained(folder)
        return folder


def _tokenizer_with_gap(f: Factory) -> str:
    """The gpt tokenizer with one word's id moved far past the last row: as many tokens as rows."""
    tok = json.loads(f.parts("gpt")[0]["tokenizer"])
    vocab = tok["model"]["vocab"]
    vocab[next(w for w in vocab if w.isalpha())] = 100_000
    return json.dumps(tok)


def _code_file(marker: Path) -> str:
    return f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"


def _nan(key):
    def change(t):
        t = dict(t)
        t[key] = t[key].clone()
        t[key].view(-1)[0] = float("nan")
        return t
    return change


def _inf(key):
    def change(t):
        t = dict(t)
        t[key] = t[key].clone()
        t[key].view(-1)[-1] = float("inf")
        return t
    return change


def _as(dtype, key):
    def change(t):
        t = dict(t)
        t[key] = t[key].to(dtype)
        return t
    return change


# ---- model files ---------------------------------------------------------------------------------
def build_files(f: Factory) -> None:
    import torch

    marker = f.root / MARKER_NAME

    # config values, per family: wrong values the model would crash on or compute nonsense with
    bad_configs = {
        "translator": [("n_head", 0), ("n_head", -4), ("n_head", 3), ("d_model", -8), ("src_vocab_size", 0),
                       ("src_vocab_size", -5), ("max_len", 0), ("n_decoder_layers", -1), ("d_ff", 0),
                       ("dropout", float("nan")), ("dropout", 1.5), ("pad_id", 100000), ("pad_id", -1),
                       ("norm_first", "yes"), ("n_head", "4"), ("d_model", 64.5), ("share_embeddings", "no"),
                       ("n_encoder_layers", True)],
        "gpt": [("n_head", 0), ("vocab_size", 0), ("vocab_size", -1), ("block_size", 0), ("position", "sinusoidal"),
                ("rope_base", 0), ("rope_base", float("nan")), ("bias", "false"), ("dropout", -0.5), ("n_layer", 0),
                ("n_head", -4), ("n_embd", None)],
        "bert": [("num_attention_heads", 0), ("hidden_size", -64), ("max_position_embeddings", 1),
                 ("type_vocab_size", 0), ("layer_norm_eps", 0), ("layer_norm_eps", float("nan")),
                 ("pad_token_id", 100000), ("intermediate_size", -1), ("vocab_size", [1, 2])],
    }
    for family, changes in bad_configs.items():
        for key, value in changes:
            name = f"cfg-{family}-{key}-{str(value).replace(' ', '')}.safetensors"
            f.add("config", f"{family} {key}={value!r}", f.checkpoint(name, family, config={key: value}))
    f.add("config", "gpt rope with odd head size", f.checkpoint("cfg-gpt-rope-odd.safetensors", "gpt",
                                                                config={"position": "rope", "n_head": 64}))
    f.add("config", "config missing a field", f.checkpoint("cfg-missing.safetensors", "gpt",
                                                          meta={"config": json.dumps({"n_layer": 2})}))
    f.add("config", "config is a list", f.checkpoint("cfg-list.safetensors", "gpt", meta={"config": "[1, 2]"}))
    f.add("config", "config is not JSON", f.checkpoint("cfg-nojson.safetensors", "gpt", meta={"config": "{n_layer: 2"}))
    f.add("config", "config is null", f.checkpoint("cfg-null.safetensors", "bert", meta={"config": "null"}))
    f.add("config", "tokenizer ids beyond the vocabulary",
          f.consistent("cfg-gpt-small-vocab.safetensors", "gpt", vocab_size=10))
    f.add("config", "translator tokenizer ids beyond the target vocabulary",
          f.consistent("cfg-tr-small-vocab.safetensors", "translator", src_vocab_size=12, tgt_vocab_size=12))
    f.add("config", "tokenizer with a gap: an id beyond the embedding though its count fits",
          f.checkpoint("cfg-gpt-tok-gap.safetensors", "gpt", meta={"tokenizer": _tokenizer_with_gap(f)}))

    # unbounded memory or time
    huge = [("translator", "max_len", 10**9), ("translator", "n_encoder_layers", 10**9), ("translator", "d_model", 10**9),
            ("translator", "tgt_vocab_size", 10**12), ("gpt", "n_layer", 10**9), ("gpt", "vocab_size", 10**12),
            ("gpt", "n_embd", 10**9), ("gpt", "block_size", 10**9), ("bert", "num_hidden_layers", 10**6),
            ("bert", "vocab_size", 10**12), ("bert", "max_position_embeddings", 10**9), ("bert", "intermediate_size", 10**10),
            ("gpt", "n_layer", 120), ("translator", "d_ff", 2**31)]
    for family, key, value in huge:
        config = {key: value}
        if (key, value) == ("n_layer", 120):  # within every single bound, far beyond any memory: 1.6 TB
            config = {"n_layer": 120, "n_embd": 32768, "n_head": 64}
        f.add("memory", f"{family} {key}={value}", f.checkpoint(f"mem-{family}-{key}-{value}.safetensors", family,
                                                               config=config))
    f.add("memory", "zip bomb .pt", f.zip_bomb("bomb.pt", f.bomb_mib))
    args, state = f.nanogpt_parts()
    f.add("memory", "nanoGPT n_layer=10**9", f.torch_file("nano-layers.pt", {"model_args": {**args, "n_layer": 10**9},
                                                                               "model": state}))
    f.add("memory", "nanoGPT block_size=10**9", f.torch_file("nano-block.pt", {"model_args": {**args, "block_size": 10**9},
                                                                                "model": state}))
    f.add("memory", "HF num_hidden_layers=10**6", f.hf("hf-layers", config={"num_hidden_layers": 10**6}))
    f.add("memory", "HF hidden_size=10**9", f.hf("hf-hidden", config={"hidden_size": 10**9}))
    f.add("memory", "HF max_position_embeddings=10**9", f.hf("hf-positions", config={"max_position_embeddings": 10**9}))
    f.add("memory", "HF vocab_size=10**12", f.hf("hf-vocab", config={"vocab_size": 10**12}))
    bomb_dir = f.hf("hf-bomb", remove=("model.safetensors",))
    shutil.copy(f.zip_bomb("bomb-inner.bin", f.bomb_mib), bomb_dir / "pytorch_model.bin")
    f.add("memory", "HF pytorch_model.bin zip bomb", bomb_dir)
    f.add("memory", "training train_pairs=10**9",
          f.checkpoint("meta-pairs.safetensors", "translator", meta={"training": json.dumps({"train_pairs": 10**9})}),
          argv=["eval", str(f.path("meta-pairs.safetensors")), "--limit", "5"], loader_ok=True)

    # nanoGPT files
    nano = [
        ("model is a tensor", {"model_args": args, "model": torch.zeros(3)}),
        ("model is a list", {"model_args": args, "model": [1, 2]}),
        ("model_args is a list", {"model_args": [1, 2], "model": state}),
        ("model_args is a string", {"model_args": "n_layer=2", "model": state}),
        ("model_args lacks vocab_size", {"model_args": {k: v for k, v in args.items() if k != "vocab_size"}, "model": state}),
        ("n_head=0", {"model_args": {**args, "n_head": 0}, "model": state}),
        ("vocab_size=-1", {"model_args": {**args, "vocab_size": -1}, "model": state}),
        ("n_embd not divisible", {"model_args": {**args, "n_head": 5}, "model": state}),
        ("model holds a string", {"model_args": args, "model": {**state, "transformer.ln_f.weight": "weights"}}),
        ("dropout is text", {"model_args": {**args, "dropout": "x"}, "model": state}),
        ("block_size=0", {"model_args": {**args, "block_size": 0}, "model": state}),
        ("NaN weights", {"model_args": args, "model": _nan("transformer.wte.weight")(state)}),
        ("empty model", {"model_args": args, "model": {}}),
        ("not a dict", [args, state]),
    ]
    for i, (name, obj) in enumerate(nano):
        f.add("nanogpt" if name != "NaN weights" else "garbage", f"nanoGPT {name}", f.torch_file(f"nano-{i}.pt", obj))

    # code
    class Payload:
        def __reduce__(self):
            return (os.system, (f"echo ran > {marker}",))

    f.add("code", "pickle that runs a shell command", f.torch_file("evil.pt", {"model": Payload()}), marker=str(marker))
    f.add("code", "nanoGPT model_args that runs code", f.torch_file("evil-nano.pt", {"model_args": Payload(), "model": state}),
          marker=str(marker))
    f.add("code", "bare pickle .pkl", f.torch_file("evil.pkl", Payload()), marker=str(marker))
    auto = {"auto_map": {"AutoConfig": "custom.MyConfig", "AutoModel": "custom.MyModel"}}
    f.add("code", "HF auto_map bert", f.hf("hf-automap", config=auto, files={"custom.py": _code_file(marker)}),
          marker=str(marker), ok=True)
    f.add("code", "HF auto_map custom model_type", f.hf("hf-automap-custom", config={**auto, "model_type": "my-model"},
                                                        files={"custom.py": _code_file(marker)}), marker=str(marker))
    tok_cfg = json.loads((f.hf_base() / "tokenizer_config.json").read_text())
    tok_cfg["auto_map"] = {"AutoTokenizer": ["custom_tok.MyTokenizer", None]}
    tok_cfg["tokenizer_class"] = "MyTokenizer"
    f.add("code", "HF tokenizer auto_map", f.hf("hf-automap-tok", files={"tokenizer_config.json": json.dumps(tok_cfg),
                                                                        "custom_tok.py": _code_file(marker)}),
          marker=str(marker), ok=True)
    evil_bin = f.hf("hf-evil-bin", remove=("model.safetensors",))
    shutil.copy(f.torch_file("evil-inner.bin", {"model": Payload()}), evil_bin / "pytorch_model.bin")
    f.add("code", "HF pytorch_model.bin pickle", evil_bin, marker=str(marker))

    # metadata naming files
    secret_tsv = f.path("secret.tsv")
    secret_tsv.write_text("\n".join(f"{SECRET} {i}\tgeheim {i}" for i in range(60)))
    secret_txt = f.path("secret.txt")
    secret_txt.write_text("\n".join(f"{SECRET} line {i} of a private file" for i in range(60)))
    for family, target in (("translator", secret_tsv), ("gpt", secret_txt)):
        p = f.checkpoint(f"meta-corpus-{family}.safetensors", family,
                         meta={"training": json.dumps({"corpus_path": str(target), "seed": 0})})
        f.add("metadata", f"{family} corpus_path names a local file", p, argv=["eval", str(p), "--limit", "5"],
              secret=SECRET, loader_ok=True)
    for name, training in (("training is a list", "[1, 2]"), ("training is not JSON", "{oops"),
                           ("seed is a list", json.dumps({"seed": [1]})), ("train_pairs negative", json.dumps({"train_pairs": -5})),
                           ("train_pairs text", json.dumps({"train_pairs": "many"})),
                           ("corpus_path is /dev/zero", json.dumps({"corpus_path": "/dev/zero"}))):
        p = f.checkpoint(f"meta-{len(f.cases)}.safetensors", "translator", meta={"training": training})
        f.add("metadata", name, p, argv=["eval", str(p), "--limit", "5"], loader_ok=True)

    # silent garbage
    for family, key in (("translator", "src_embed.weight"), ("gpt", "transformer.wte.weight"),
                        ("bert", "layers.0.attention.c_attn.weight")):
        f.add("garbage", f"{family} NaN weights", f.checkpoint(f"nan-{family}.safetensors", family, tensors=_nan(key)))
        f.add("garbage", f"{family} Inf weights", f.checkpoint(f"inf-{family}.safetensors", family, tensors=_inf(key)))
    f.add("garbage", "translator max_len=1", f.checkpoint("tr-maxlen1.safetensors", "translator", config={"max_len": 1}),
          argv=["translate", str(f.path("tr-maxlen1.safetensors")), "the dog ."])
    f.add("garbage", "gpt block_size=1", f.consistent("gpt-block1.safetensors", "gpt", block_size=1),
          argv=["generate", str(f.path("gpt-block1.safetensors")), "the dog"])
    f.add("garbage", "HF NaN BERT", f.hf("hf-nan", weights=_nan("encoder.layer.0.attention.self.query.weight")),
          argv=["compare", str(f.path("hf-nan")), "--text", "the dog"])
    f.add("garbage", "HF Inf BERT", f.hf("hf-inf", weights=_inf("embeddings.word_embeddings.weight")),
          argv=["export", str(f.path("hf-inf")), "--text", "the dog", "--out", str(f.root / "out" / "inf"),
                "--format", "npz"])
    f.add("garbage", "HF folder without tokenizer files",
          f.hf("hf-notok", remove=("tokenizer.json", "tokenizer_config.json", "vocab.txt")),
          argv=["compare", str(f.path("hf-notok")), "--text", "the dog"])
    f.add("garbage", "HF max_position_embeddings=1", f.hf("hf-pos1", config={"max_position_embeddings": 1},
                                                          weights=lambda t: {**t, "embeddings.position_embeddings.weight":
                                                                             t["embeddings.position_embeddings.weight"][:1].clone()}),
          argv=["compare", str(f.path("hf-pos1")), "--text", "the dog"])

    # Hugging Face folders
    empty = f.path("hf-empty")
    empty.mkdir()
    f.add("hf-folder", "empty folder", empty)
    f.add("hf-folder", "config.json only", f.hf("hf-config-only", remove=("model.safetensors",)))
    f.add("hf-folder", "GPT-2 folder", f.hf_other("hf-gpt2", "gpt2"))
    f.add("hf-folder", "T5 folder", f.hf_other("hf-t5", "t5"))
    f.add("hf-folder", "config is not JSON", f.hf("hf-badjson", raw_config="{\"model_type\": \"bert\", "))
    f.add("hf-folder", "config is a list", f.hf("hf-list", raw_config="[1, 2, 3]"))
    f.add("hf-folder", "config is binary", f.hf("hf-binary", raw_config="\x00\x01\x02"))
    f.add("hf-folder", "config lacks model_type", f.hf("hf-notype", raw_config=json.dumps({"hidden_size": 16})))
    f.add("hf-folder", "mismatched shapes", f.hf("hf-shapes", config={"hidden_size": 32, "intermediate_size": 64}))
    f.add("hf-folder", "config heads=0", f.hf("hf-heads0", config={"num_attention_heads": 0}))
    f.add("hf-folder", "config heads=3", f.hf("hf-heads3", config={"num_attention_heads": 3}))
    f.add("hf-folder", "config heads=-4", f.hf("hf-heads-neg", config={"num_attention_heads": -4}))
    f.add("hf-folder", "config vocab=0", f.hf("hf-vocab0", config={"vocab_size": 0}))
    f.add("hf-folder", "config vocab=-1", f.hf("hf-vocab-neg", config={"vocab_size": -1}))
    f.add("hf-folder", "config pad_token_id out of range", f.hf("hf-pad", config={"pad_token_id": 10**6}))
    f.add("hf-folder", "config type_vocab_size=0", f.hf("hf-types0", config={"type_vocab_size": 0}))
    f.add("hf-folder", "config layer_norm_eps text", f.hf("hf-eps", config={"layer_norm_eps": "small"}))
    f.add("hf-folder", "config layers text", f.hf("hf-layers-text", config={"num_hidden_layers": "two"}))
    f.add("hf-folder", "config hidden_act unknown", f.hf("hf-act", config={"hidden_act": "sparkle"}))
    base_bytes = (f.hf_base() / "model.safetensors").read_bytes()
    f.add("hf-folder", "truncated weights", f.hf("hf-trunc", files={"model.safetensors": base_bytes[: len(base_bytes) // 2]}))
    f.add("hf-folder", "empty weights", f.hf("hf-empty-weights", files={"model.safetensors": b""}))
    f.add("hf-folder", "random weights bytes", f.hf("hf-random", files={"model.safetensors": os.urandom(4096)}))
    f.add("hf-folder", "weights lack a layer", f.hf("hf-missing", weights=lambda t: {k: v for k, v in t.items()
                                                                                      if ".layer.1." not in k}))
    f.add("hf-folder", "weights of int dtype", f.hf("hf-int", weights=lambda t: {k: (v * 100).to(torch.int32)
                                                                                 for k, v in t.items()}))
    f.add("hf-folder", "tokenizer.json garbage", f.hf("hf-badtok", remove=("vocab.txt",),
                                                      files={"tokenizer.json": "{\"not\": \"a tokenizer\"}"}))
    f.add("hf-folder", "tokenizer beyond the vocabulary",
          f.hf("hf-tokbig", config={"vocab_size": 10}, weights=lambda t: {
              **t, "embeddings.word_embeddings.weight": t["embeddings.word_embeddings.weight"][:10].clone()}))
    cfg_dir = f.hf("hf-config-dir", remove=("config.json",))
    (cfg_dir / "config.json").mkdir()
    f.add("hf-folder", "config.json is a folder", cfg_dir)
    w_dir = f.hf("hf-weights-dir", remove=("model.safetensors",))
    (w_dir / "model.safetensors").mkdir()
    f.add("hf-folder", "model.safetensors is a folder", w_dir)
    zero = f.hf("hf-devzero", remove=("model.safetensors",))
    os.symlink("/dev/zero", zero / "model.safetensors")
    f.add("hf-folder", "model.safetensors links to /dev/zero", zero)
    f.add("hf-folder", "huge config.json", f.hf("hf-bigconfig", config={"junk": "x" * (3 << 20)}))
    # sharded folders (issue 31): the index and every shard checked before anything loads
    def shards(index):
        return sorted(set(index["weight_map"].values()))

    def outside(folder, index):
        index["weight_map"][next(iter(index["weight_map"]))] = "../../outside.safetensors"

    def missing(folder, index):
        (folder / shards(index)[1]).unlink()

    def truncated(folder, index):
        shard = folder / shards(index)[-1]
        shard.write_bytes(shard.read_bytes()[:-512])

    def disagrees(folder, index):
        first = next(iter(index["weight_map"]))
        index["weight_map"][first] = next(s for s in shards(index) if s != index["weight_map"][first])

    def twice(folder, index):
        first = next(iter(index["weight_map"]))
        return json.dumps(index).replace('"weight_map": {', '"weight_map": {' + json.dumps(first) + ": "
                                         + json.dumps(shards(index)[0]) + ", ", 1)

    f.add("hf-folder", "sharded (usable)", f.hf_sharded("hf-sharded"), ok=True)
    f.add("hf-folder", "index names a file outside the folder", f.hf_sharded("hf-shard-outside", outside))
    f.add("hf-folder", "a shard is missing", f.hf_sharded("hf-shard-missing", missing))
    f.add("hf-folder", "a shard is truncated", f.hf_sharded("hf-shard-truncated", truncated))
    f.add("hf-folder", "a shard's header disagrees with the index", f.hf_sharded("hf-shard-disagrees", disagrees))
    f.add("hf-folder", "the index names a tensor twice", f.hf_sharded("hf-shard-twice", twice))
    f.add("hf-folder", "a .bin shard is missing", f.hf_sharded("hf-bin-missing", missing, fmt="bin"))
    f.add("hf-folder", "a .bin shard is truncated", f.hf_sharded("hf-bin-truncated", truncated, fmt="bin"))
    f.add("hf-folder", "relative positions (usable)", f.hf("hf-relative", config={"position_embedding_type": "relative_key"}),
          ok=True)

    # damaged files
    for name, data in (("empty.safetensors", b""), ("empty.pt", b""), ("empty", b""), ("random.safetensors", os.urandom(2048)),
                       ("random.pt", os.urandom(2048)), ("random.bin", b"\x80" + os.urandom(2047)),
                       ("text.pt", b"hello, I am text"), ("notes.txt", b"just some notes\n"),
                       ("header-huge.safetensors", (1 << 60).to_bytes(8, "little") + b"{}"),
                       ("header-json.safetensors", (20).to_bytes(8, "little") + b"{\"a\": [1, 2,,,]}    "),
                       ("header-offsets.safetensors", _offsets_beyond_file()),
                       ("nul-bytes.safetensors", bytes(4096))):
        p = f.path(name)
        p.write_bytes(data)
        f.add("damaged", name, p)
    good = f.path("good-gpt.safetensors")
    f.parts("gpt")
    data = good.read_bytes()
    for frac in (0.1, 0.5, 0.99):
        p = f.path(f"trunc-{frac}.safetensors")
        p.write_bytes(data[: int(len(data) * frac)])
        f.add("damaged", f"safetensors truncated to {frac:.0%}", p)
    nano_good = f.torch_file("nano-good.pt", {"model_args": args, "model": state})
    raw = nano_good.read_bytes()
    for frac in (0.3, 0.9):
        p = f.path(f"trunc-{frac}.pt")
        p.write_bytes(raw[: int(len(raw) * frac)])
        f.add("damaged", f"torch file truncated to {frac:.0%}", p)
    other_zip = f.path("other.pt")
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("readme.txt", "not a model")
    f.add("damaged", "a zip that is not a torch file", other_zip)
    fifo = f.path("pipe.safetensors")
    os.mkfifo(fifo)
    f.add("damaged", "a named pipe", fifo)
    link = f.path("zero.safetensors")
    os.symlink("/dev/zero", link)
    f.add("damaged", "a link to /dev/zero", link)
    f.add("damaged", "missing file", f.path("absent.safetensors"))
    for name, meta in (("format_version text", {"format_version": "abc"}), ("format_version 99", {"format_version": "99"}),
                       ("family hf-bert", {"family": "hf-bert"}), ("family unknown", {"family": "mamba"}),
                       ("tokenizer garbage", {"tokenizer": "{not json"}), ("tokenizer empty object", {"tokenizer": "{}"}),
                       ("target tokenizer garbage", {"target_tokenizer": "[]"})):
        fam = "translator" if "target" in name else "gpt"
        f.add("damaged", name, f.checkpoint(f"dmg-{len(f.cases)}.safetensors", fam, meta=meta))
    f.add("damaged", "no family", f.checkpoint("dmg-nofamily.safetensors", "gpt", drop=("family",)))
    f.add("damaged", "no tokenizer", f.checkpoint("dmg-notok.safetensors", "gpt", drop=("tokenizer",)))
    f.add("damaged", "no config", f.checkpoint("dmg-noconfig.safetensors", "bert", drop=("config",)))
    f.add("damaged", "foreign safetensors", f.checkpoint("dmg-foreign.safetensors", "gpt", drop=("format",)))
    f.add("damaged", "int weights", f.checkpoint("dmg-int.safetensors", "gpt", tensors=_as(torch.int64, "transformer.ln_f.weight")))
    f.add("damaged", "bool weights", f.checkpoint("dmg-bool.safetensors", "gpt", tensors=_as(torch.bool, "transformer.ln_f.weight")))
    f.add("damaged", "float16 weights (usable)", f.checkpoint("dmg-half.safetensors", "gpt", tensors=_as(torch.float16, "transformer.ln_f.weight")),
          argv=["generate", str(f.path("dmg-half.safetensors")), "the dog", "--max-new-tokens", "3"], ok=True)
    f.add("damaged", "shape mismatch", f.checkpoint("dmg-shape.safetensors", "bert",
                                                    tensors=lambda t: {**t, "embeddings.LayerNorm.weight": torch.ones(3)}))
    f.add("damaged", "extra and missing tensors", f.checkpoint(
        "dmg-names.safetensors", "translator", tensors=lambda t: {**{k: v for k, v in t.items() if k != "generator.bias"},
                                                                  "extra": torch.zeros(2)}))
    f.add("damaged", "bare state dict", f.torch_file("bare.pt", state))
    f.add("damaged", "torch file holding a number", f.torch_file("number.pt", 42))
    f.add("damaged", "attnscope .pt with bad metadata", f.torch_file("bad-meta.pt", {"attnscope": {"family": "gpt"}, "model": state}))


def _offsets_beyond_file() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [1000, 1000], "data_offsets": [0, 4_000_000]}}).encode()
    header += b" " * (-len(header) % 8)
    return len(header).to_bytes(8, "little") + header + bytes(64)


# ---- texts -----------------------------------------------------------------------------------------
TEXTS = [
    ("empty", ""), ("blank", "   \t "), ("newlines", "\r\n\r\n"),
    ("invalid UTF-8", "caf\udce9 \udcff\udcfe"), ("lone surrogate", "abc\ud800def"),
    ("NUL", "the\x00dog"), ("escape codes", "\x1b[31mred\x1b[0m \x07\x08"), ("emoji", "the dog 😀🤖🧠 ."),
    ("right to left", "مرحبا بالعالم \u202eevil"), ("combining marks", "e\u0301\u0301\u0301\u0301 the dog"),
    ("zero width", "\u200b\u200d\ufeff\u2060"), ("special tokens", "[PAD] [EOS] [BOS] [UNK] [CLS] [SEP] [MASK]"),
    ("long", "the dog sees the cat . " * 3000), ("one long word", "x" * 100_000),
    ("format strings", "%s %n {0} ${HOME} $(touch /tmp/x) `id`"), ("only punctuation", ". , ! ? ; :"),
    ("wide characters", "ﷺ 𒐫 ꧅ 𝕏"),
]


def build_texts(f: Factory) -> None:
    hf = str(f.hf_base())
    tr, gpt = str(BUNDLED / "translator.safetensors"), str(BUNDLED / "gpt.safetensors")
    out = f.root / "out"
    slots = [
        ("translate", lambda t: ["translate", tr, t]),
        ("generate", lambda t: ["generate", gpt, t, "--max-new-tokens", "5"]),
        ("export --text", lambda t: ["export", "random-translator", "--text", t, "--out", str(out / "t"), "--format", "npz"]),
        ("export --target", lambda t: ["export", "random-translator", "--text", "the dog", "--target", t, "--out",
                                       str(out / "t"), "--format", "npz"]),
        ("export --pair", lambda t: ["export", "random-bert", "--text", "the dog", "--pair", t, "--out", str(out / "t"),
                                     "--format", "npz"]),
        ("compare --text", lambda t: ["compare", hf, "--text", t]),
        ("compare --pair", lambda t: ["compare", hf, "--text", "the dog", "--pair", t]),
    ]
    for slot, make in slots:
        for name, text in TEXTS:
            f.cases.append(Case("text", f"{slot}: {name}", make(text), ok=True))


def build_options(f: Factory) -> None:
    tr, gpt = str(BUNDLED / "translator.safetensors"), str(BUNDLED / "gpt.safetensors")
    out = f.root / "out"
    existing = f.path("existing-file.txt")
    existing.write_text("keep me")
    f.path("existing.safetensors").write_text("a file of the user's")
    a_dir = f.path("a-folder")
    a_dir.mkdir(exist_ok=True)
    train = ["train", "translator", "--size", "tiny", "--steps", "5", "--train-pairs", "200", "--eval-limit", "5", "--quiet"]
    export = ["export", "random-translator", "--text", "the dog", "--out", str(out / "o")]
    options = [
        ("--temperature nan", ["translate", tr, "the dog", "--strategy", "sample", "--temperature", "nan"]),
        ("--temperature inf", ["translate", tr, "the dog", "--strategy", "sample", "--temperature", "inf"]),
        ("--temperature -1", ["translate", tr, "the dog", "--strategy", "sample", "--temperature", "-1"]),
        ("--top-p 0", ["translate", tr, "the dog", "--strategy", "sample", "--top-p", "0"]),
        ("--top-p 1.5", ["generate", gpt, "the dog", "--strategy", "sample", "--top-p", "1.5"]),
        ("--top-k -1", ["translate", tr, "the dog", "--strategy", "sample", "--top-k", "-1"]),
        ("--beam-width 100000", ["translate", tr, "the dog", "--strategy", "beam", "--beam-width", "100000"]),
        ("--beam-width 0", ["translate", tr, "the dog", "--strategy", "beam", "--beam-width", "0"]),
        ("--max-new-tokens -5", ["generate", gpt, "the dog", "--max-new-tokens", "-5"]),
        ("--seed -1", ["generate", gpt, "the dog", "--strategy", "sample", "--seed", "-1"]),
        ("export --size abc", export + ["--size", "abc"]),
        ("export --size 60000x60000", export + ["--size", "60000x60000"]),
        ("export --size 0x0", export + ["--size", "0x0"]),
        ("export --out an existing file", ["export", "random-translator", "--text", "the dog", "--out", str(existing)]),
        ("export --out unwritable", ["export", "random-translator", "--text", "the dog", "--out", "/proc/attnscope-out"]),
        ("export --layer 99", export + ["--layer", "99"]),
        ("export --head -1", export + ["--head", "-1"]),
        ("train --out a folder", train + ["--out", str(a_dir)]),
        ("train --out wrong suffix", train + ["--out", str(f.path("model.txt"))]),
        ("train --out unwritable", train + ["--out", "/proc/attnscope/x.safetensors"]),
        ("train --steps 0", train[:4] + ["0"] + train[5:] + ["--out", str(f.path("s0.safetensors"))]),
        ("train --lr nan", train + ["--lr", "nan", "--out", str(f.path("lr.safetensors"))]),
        ("eval --limit 0", ["eval", tr, "--limit", "0"]),
        ("--device quantum", ["--device", "quantum", "translate", tr, "the dog"]),
        # issue 40: a range stays two numbers, refused against the text's length and the model's layers
        ("--knockout 0:0@0-1000000000", ["intervene", gpt, "--text", "the dog", "--knockout", "0:0@0-1000000000"]),
        ("--knockout 0-1000000000:0@0", ["intervene", gpt, "--text", "the dog", "--knockout", "0-1000000000:0@0"]),
        ("--knockout 0:0-1000000000@all", ["intervene", gpt, "--text", "the dog", "--knockout", "0:0-1000000000@all"]),
        ("--ablate 0.99", ["intervene", gpt, "--text", "the dog", "--ablate", "0.99"]),
        ("lens --text-file missing", ["lens", gpt, "--text-file", str(f.path("absent.txt"))]),
        ("generate text and --text-file", ["generate", gpt, "the dog", "--text-file", str(existing)]),
        ("generate --system without --chat", ["generate", gpt, "the dog", "--system", "be brief"]),
        ("generate --chat without a template", ["generate", gpt, "the dog", "--chat"]),
        ("record --out the model itself", ["record", str(f.path("good-gpt.safetensors")), "--text", "the dog", "--out",
                                           str(f.path("good-gpt.safetensors"))]),
        ("record --out an existing file", ["record", "random-gpt", "--text", "the dog", "--out",
                                           str(f.path("existing.safetensors"))]),
    ]
    for name, argv in options:
        f.cases.append(Case("option", name, argv))


# ---- recordings (issue 40) -------------------------------------------------------------------------
def synthetic_recording(path: Path, positions: int, layers: int = 2, heads: int = 2, dim: int = 8,
                        meta: dict | None = None) -> Path:
    """A valid recording of a causal decoder over ``positions`` tokens (random queries and keys,
    no mask: as a Hugging Face model's recording is), written directly, with ``meta`` changed."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(0)
    tensors, sites = {}, []
    for layer in range(layers):
        for part in ("q", "k"):
            tensors[f"decoder self/{layer}/{part}"] = torch.randn(1, heads, positions, dim, generator=g)
        sites.append({"kind": "decoder self", "layer": layer, "scale": dim ** -0.5, "softcap": None, "window": None,
                      "causal": True})
    tokens = [f"t{i % 97}" for i in range(positions)]
    description = {"format": "attnscope-recording", "version": 1, "model_name": "synthetic", "family": "hf-llama",
                   "source_tokens": [], "target_tokens": tokens, "pieces": {"source": [], "target": tokens},
                   "groups": {}, "notes": [], "sites": sites, **(meta or {})}
    save_file(tensors, str(path), metadata={"attnscope": json.dumps(description)})
    return path


def build_recordings(f: Factory) -> None:
    """Recordings whose description has fields of the wrong type or size, long recordings drawn
    as PNG, and a recording handed to the commands that need a model."""
    out = f.root / "out"
    bad_meta = {
        "pieces a list": {"pieces": [1, 2]}, "pieces of numbers": {"pieces": {"target": [1, 2]}},
        "groups a string": {"groups": "abc"}, "groups a list": {"groups": [1]},
        "groups out of range": {"groups": {"source": [], "target": [0, 99, 5, 3, 4, 5, 6, 7]}},
        "groups of one side": {"groups": {"target": [0, 1, 2, 3, 4, 5, 6, 7]}},
        "groups not numbers": {"groups": {"source": [], "target": ["a"] * 8}},
        "notes a string": {"notes": "abc"}, "sites a dict": {"sites": {"a": 1}}, "sites of strings": {"sites": ["x"]},
        "model_name a list": {"model_name": [1]}, "tokens missing": {"target_tokens": None},
        "more pieces than tokens": {"pieces": {"source": [], "target": ["x"] * 9}},
    }
    for name, meta in bad_meta.items():
        path = synthetic_recording(f.path(f"rec-{name.replace(' ', '-')}.safetensors"), 8, meta=meta)
        for fmt in ("npz", "png"):
            f.cases.append(Case("recording", f"recording {name} ({fmt})",
                                ["export", str(path), "--out", str(out / "rec"), "--format", fmt]))
    good = synthetic_recording(f.path("rec-good.safetensors"), 8)
    for command in (["heads", str(good)], ["lens", str(good), "--text", "the dog"],
                    ["intervene", str(good), "--text", "the dog", "--ablate", "0.0"],
                    ["record", str(good), "--text", "the dog", "--out", str(out / "again.safetensors")]):
        f.add("recording", f"a recording given to {command[0]}", good, argv=command)
    long = synthetic_recording(f.path("rec-60000.safetensors"), 60_000)
    f.cases.append(Case("recording", "60,000-position recording as a PNG grid past --max-seconds",
                        ["export", str(long), "--out", str(out / "long"), "--max-seconds", "5"]))
    f.cases.append(Case("recording", "20,000-position recording as a PNG of one head",
                        ["export", str(synthetic_recording(f.path("rec-20000.safetensors"), 20_000)), "--out",
                         str(out / "long"), "--view", "head"], ok=True))


def build_all(root: Path, bomb_mib: int = 256) -> list[Case]:
    f = Factory(root, bomb_mib)
    build_files(f)
    build_texts(f)
    build_options(f)
    build_recordings(f)
    return f.cases
