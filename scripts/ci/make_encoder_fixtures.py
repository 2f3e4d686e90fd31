#!/usr/bin/env python3
"""Builds the encoder parity fixtures under tests/fixtures/encoders/.

Run it through scripts/ci/encoder-pyenv.sh (which installs torch, transformers and
sentence-transformers from PyPI into target/encoder-venv):

    scripts/ci/encoder-pyenv.sh python scripts/ci/make_encoder_fixtures.py [--minilm DIR]

It writes, for a tiny random-weight BERT and a tiny random-weight MPNet:
  - the model as a sentence-transformers / Hugging Face folder (config.json,
    model.safetensors, tokenizer.json, modules.json, ...), and
  - reference.json: sentence embeddings computed by sentence-transformers, and
    static word vectors computed by the X-Class recipe (`static_representations.py`
    of the X-Class repository, which EpiMine's reference code runs), re-implemented
    here on the Hugging Face slow tokenizer and model.
With --minilm DIR (a folder holding sentence-transformers/all-MiniLM-L6-v2, e.g.
the one `epimine models fetch` fills) it also writes minilm-reference.json with the
real model's outputs for a few sentences.

The tiny models' weights are drawn with a large spread (not the 0.02 of a fresh
init) so that attention is far from uniform: a wrong mask, position or relative
position bias changes the outputs well beyond the tests' tolerance. The script
checks that for each model before writing anything.
"""

import argparse
import json
import math
import os
import re
import shutil
import string
import sys
import tempfile

import numpy as np
import torch

torch.set_num_threads(1)

from sentence_transformers import SentenceTransformer, models  # noqa: E402
from transformers import (  # noqa: E402
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertModel,
    BertTokenizer,
    MPNetConfig,
    MPNetModel,
    MPNetTokenizer,
)
# The slow (pure Python) BERT tokenizer pieces X-Class calls: `tokenizer.basic_tokenizer` and
# `tokenizer.wordpiece_tokenizer` (transformers 5 keeps them in the legacy module).
from transformers.models.bert.tokenization_bert_legacy import (  # noqa: E402
    BasicTokenizer,
    WordpieceTokenizer,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "encoders")

# Sentences for the sentence-embedding parity: different lengths (padding inside a batch),
# punctuation, accents and curly quotes (normalisation), and one longer than the tiny models'
# max_seq_length (truncation).
SENTENCES = [
    "Protesters stormed the legislature on Tuesday.",
    "Police fired tear gas; dozens were arrested!",
    "The flood waters rose quickly (about 3 metres) and the river burst its banks.",
    "Café owners said the “curfew” hurt business, but the mayor’s office disagreed.",
    "Arrests followed.",
    "a",
    "The government said the army would restore order, while the opposition called for "
    "a general strike, and rescue teams searched collapsed buildings for survivors after "
    "the earthquake struck the coastal city before dawn on Sunday morning.",
    "Rescue teams searched collapsed buildings for survivors.",
]

# Texts of one "key event" for the static word vectors. The last one is long: more than 510
# word pieces, so the X-Class chunking (510 pieces, overlap 255) makes several chunks.
WORD_TEXTS = [
    "Protesters stormed the legislature on Tuesday; police fired tear gas.",
    "The police said 40 protesters were arrested after the legislature was stormed.",
    "U.S.-backed forces (about 3,000) entered the city, officials said.",
    "Rescue teams searched the collapsed buildings -- the mayor's office said 12 survived!",
    " ".join(
        [
            "the river burst its banks and the flood waters rose quickly while rescue teams "
            "searched for survivors and officials said the army would restore order after "
            "protesters stormed the legislature and police fired tear gas at the crowd",
        ]
        * 14
    ),
]

VOCAB_WORDS = sorted(
    set(
        w
        for t in SENTENCES + WORD_TEXTS
        for w in re.findall(r"[a-z]+", t.lower())
        if len(w) > 3 and not w.startswith("s")  # leave some words to the piece fallback
    )
)


def vocab_tokens(specials):
    chars = list(string.ascii_lowercase + string.digits + string.punctuation) + [
        "“",
        "”",
        "’",
    ]
    return specials + chars + ["##" + c for c in string.ascii_lowercase + string.digits] + VOCAB_WORDS


def randomize(model, seed):
    """Large-spread random weights: LayerNorm scales around 1, everything else N(0, 0.35)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif "relative_attention_bias" in name:
                p.copy_(2.0 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.35 * torch.randn(p.shape, generator=g))


def cos(a, b):
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---- X-Class static representations (static_representations.py), on the HF slow tokenizer ----


class XClassTokenizer:
    """The parts of a slow BERT tokenizer X-Class uses, over any WordPiece vocabulary; `fast` gives
    the special tokens ([CLS]/[SEP] for BERT, <s>/</s> for MPNet)."""

    def __init__(self, vocab, fast):
        self.vocab = vocab
        self.fast = fast
        self.all_special_tokens = fast.all_special_tokens
        self.basic_tokenizer = BasicTokenizer(do_lower_case=True, never_split=self.all_special_tokens)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=vocab, unk_token=str(fast.unk_token))

    def encode(self, text, add_special_tokens=True):
        return self.fast.encode(text, add_special_tokens=add_special_tokens)

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab.get(t, self.vocab[str(self.fast.unk_token)]) for t in tokens]


def clean_str(text):
    """X-Class's cleaning: characters outside [A-Za-z0-9(),.!?"'] become spaces."""
    text = re.sub(r"[^A-Za-z0-9(),.!?\"\']", " ", text)
    text = re.sub(r"\s{2,}", " ", text)
    return text.strip()


def prepare_sentence(tokenizer, text, model_max_tokens=512):
    max_tokens = model_max_tokens - 2
    sliding_window_size = max_tokens // 2
    sos_id, eos_id = tokenizer.encode("", add_special_tokens=True)
    tokenized_text = tokenizer.basic_tokenizer.tokenize(text, never_split=tokenizer.all_special_tokens)
    tokenized_to_id_indicies = []
    tokenids_chunks = []
    tokenids_chunk = []
    for token in tokenized_text + [None]:
        if token is not None:
            tokens = tokenizer.wordpiece_tokenizer.tokenize(token)
        if token is None or len(tokenids_chunk) + len(tokens) > max_tokens:
            tokenids_chunks.append([sos_id] + tokenids_chunk + [eos_id])
            if sliding_window_size > 0:
                tokenids_chunk = tokenids_chunk[-sliding_window_size:]
            else:
                tokenids_chunk = []
        if token is not None:
            tokenized_to_id_indicies.append(
                (len(tokenids_chunks), len(tokenids_chunk), len(tokenids_chunk) + len(tokens))
            )
            tokenids_chunk.extend(tokenizer.convert_tokens_to_ids(tokens))
    return tokenized_text, tokenized_to_id_indicies, tokenids_chunks


def static_word_vectors(model, tokenizer, texts, layer):
    """word -> (count, mean vector), words made only of punctuation dropped."""
    sums, counts = {}, {}
    for text in texts:
        words, spans, chunks = prepare_sentence(tokenizer, clean_str(text))
        layer_embeddings = []
        for chunk in chunks:
            with torch.no_grad():
                out = model(torch.tensor([chunk]), output_hidden_states=True)
            layer_embeddings.append(out.hidden_states[layer][0].numpy()[1:-1])
        for word, (c, s, e) in zip(words, spans):
            if word.translate(str.maketrans("", "", string.punctuation)) == "":
                continue
            v = layer_embeddings[c][s:e].astype(np.float64).mean(axis=0)
            sums[word] = sums.get(word, 0) + v
            counts[word] = counts.get(word, 0) + 1
    return {w: (counts[w], (sums[w] / counts[w]).tolist()) for w in sorted(sums)}


# ---- fixtures ----


def save_sentence_model(hf_dir, out_dir, max_seq_length, normalize):
    transformer = models.Transformer(hf_dir, max_seq_length=max_seq_length)
    pooling = models.Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    modules = [transformer, pooling] + ([models.Normalize()] if normalize else [])
    st = SentenceTransformer(modules=modules, device="cpu")
    st.save(out_dir)


def to_legacy_layout(out_dir, max_seq_length, dim):
    """Rewrite the sentence-transformers files in the layout of sentence-transformers 2.x, the one
    all-MiniLM-L6-v2 and all-mpnet-base-v2 are published in (the other tiny model keeps the
    current layout, so both are tested)."""
    with open(os.path.join(out_dir, "modules.json")) as f:
        modules = json.load(f)
    for m in modules:
        m["type"] = "sentence_transformers.models." + m["type"].rsplit(".", 1)[1]
    with open(os.path.join(out_dir, "modules.json"), "w") as f:
        json.dump(modules, f, indent=2)
    with open(os.path.join(out_dir, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": max_seq_length, "do_lower_case": False}, f, indent=2)
    with open(os.path.join(out_dir, "1_Pooling", "config.json"), "w") as f:
        json.dump(
            {
                "word_embedding_dimension": dim,
                "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True,
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            },
            f,
            indent=2,
        )
    # The tokenizer's own limit stays at the model's, as in the published models.
    path = os.path.join(out_dir, "tokenizer_config.json")
    with open(path) as f:
        tc = json.load(f)
    tc["model_max_length"] = 512
    with open(path, "w") as f:
        json.dump(tc, f, indent=2)


def plant_fixed_padding(out_dir, length):
    """Give tokenizer.json fixed padding and truncation, as all-MiniLM-L6-v2's has (the Rust
    side must override both; sentence-transformers does)."""
    path = os.path.join(out_dir, "tokenizer.json")
    with open(path) as f:
        tok = json.load(f)
    tok["truncation"] = {"direction": "Right", "max_length": length, "strategy": "LongestFirst", "stride": 0}
    pad_id = tok["model"]["vocab"].get("[PAD]", tok["model"]["vocab"].get("<pad>"))
    pad_token = "[PAD]" if "[PAD]" in tok["model"]["vocab"] else "<pad>"
    tok["padding"] = {
        "strategy": {"Fixed": length},
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": pad_id,
        "pad_type_id": 0,
        "pad_token": pad_token,
    }
    with open(path, "w") as f:
        json.dump(tok, f, ensure_ascii=False, indent=2)


def sensitivity(model, tokenizer, name):
    """The fixtures must be able to catch a broken mask or position bias."""
    texts = SENTENCES[:3]
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        ref = model(**enc).last_hidden_state
        unmasked = model(input_ids=enc["input_ids"]).last_hidden_state
    m = enc["attention_mask"].bool()
    worst = min(cos(ref[i][m[i]], unmasked[i][m[i]]) for i in range(len(texts)))
    print(f"{name}: cosine when padding is not masked: {worst:.4f}")
    assert worst < 0.99, "fixture too weak: ignoring the mask barely changes the output"
    if hasattr(model.encoder, "relative_attention_bias"):
        saved = model.encoder.relative_attention_bias.weight.clone()
        with torch.no_grad():
            model.encoder.relative_attention_bias.weight.zero_()
            nobias = model(**enc).last_hidden_state
            model.encoder.relative_attention_bias.weight.copy_(saved)
        worst = min(cos(ref[i][m[i]], nobias[i][m[i]]) for i in range(len(texts)))
        print(f"{name}: cosine without the relative position bias: {worst:.4f}")
        assert worst < 0.99, "fixture too weak: the relative position bias barely matters"


def build(kind, seed):
    work = tempfile.mkdtemp()
    out_dir = os.path.join(OUT, f"tiny-{kind}")
    shutil.rmtree(out_dir, ignore_errors=True)
    if kind == "bert":
        vocab = vocab_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        vocab_ids = {t: i for i, t in enumerate(vocab)}
        fast = BertTokenizer(vocab=dict(vocab_ids), do_lower_case=True)
        slow = XClassTokenizer(vocab_ids, fast)
        config = BertConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=512,
            type_vocab_size=2,
            layer_norm_eps=1e-12,
        )
        model = BertModel(config, add_pooling_layer=False)
        max_seq_length, normalize = 24, True
    else:
        vocab = vocab_tokens(["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>"])
        vocab_ids = {t: i for i, t in enumerate(vocab)}
        fast = MPNetTokenizer(vocab=dict(vocab_ids), do_lower_case=True)
        slow = XClassTokenizer(vocab_ids, fast)
        config = MPNetConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=514,
            relative_attention_num_buckets=32,
            layer_norm_eps=1e-5,
        )
        model = MPNetModel(config, add_pooling_layer=False)
        max_seq_length, normalize = 20, False
    randomize(model, seed)
    model.eval()
    sensitivity(model, fast, kind)
    hf_dir = os.path.join(work, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    fast.save_pretrained(hf_dir)
    save_sentence_model(hf_dir, out_dir, max_seq_length, normalize)
    for junk in ("README.md",):
        p = os.path.join(out_dir, junk)
        if os.path.exists(p):
            os.remove(p)
    if kind == "mpnet":
        to_legacy_layout(out_dir, max_seq_length, config.hidden_size)
    plant_fixed_padding(out_dir, 8)
    # The reference comes from the folder as committed.
    st = SentenceTransformer(out_dir, device="cpu")
    assert st.max_seq_length == max_seq_length, st.max_seq_length

    sentences = st.encode(SENTENCES, batch_size=3, convert_to_numpy=True)
    lengths = [min(len(fast(s)["input_ids"]), max_seq_length) for s in SENTENCES]
    hf = AutoModel.from_pretrained(out_dir).eval()
    layers = [config.num_hidden_layers, 1]
    words = {str(layer): static_word_vectors(hf, slow, WORD_TEXTS, layer) for layer in layers}
    n_chunks = [len(prepare_sentence(slow, clean_str(t))[2]) for t in WORD_TEXTS]
    assert max(n_chunks) >= 3, n_chunks
    ref = {
        "generated_by": "scripts/ci/make_encoder_fixtures.py",
        "max_seq_length": max_seq_length,
        "normalize": normalize,
        "sentences": SENTENCES,
        "sentence_token_counts": lengths,
        "sentence_embeddings": sentences.tolist(),
        "word_texts": WORD_TEXTS,
        "word_chunks_per_text": n_chunks,
        "words": {
            layer: [{"word": w, "count": c, "vector": v} for w, (c, v) in table.items()]
            for layer, table in words.items()
        },
    }
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump(ref, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"{kind}: {len(SENTENCES)} sentences (tokens {lengths}), "
          f"{len(words[str(layers[0])])} words, chunks per text {n_chunks} -> {out_dir}")
    shutil.rmtree(work)


MINILM_SENTENCES = [
    "Protesters stormed the legislature on Tuesday.",
    "Police fired tear gas and arrested dozens of people in the capital.",
    "The river burst its banks after three days of heavy rain.",
    "Rescue teams searched collapsed buildings for survivors.",
    "Café owners said the “curfew” hurt business.",
]

MINILM_WORD_TEXTS = [
    "Protesters stormed the legislature on Tuesday; police fired tear gas.",
    "The police said 40 protesters were arrested after the legislature was stormed.",
]


def build_minilm(model_dir):
    st = SentenceTransformer(model_dir, device="cpu")
    emb = st.encode(MINILM_SENTENCES, batch_size=32, convert_to_numpy=True)
    fast = AutoTokenizer.from_pretrained(model_dir)
    slow = XClassTokenizer(dict(fast.get_vocab()), fast)
    hf = AutoModel.from_pretrained(model_dir).eval()
    words = static_word_vectors(hf, slow, MINILM_WORD_TEXTS, hf.config.num_hidden_layers)
    ref = {
        "generated_by": "scripts/ci/make_encoder_fixtures.py --minilm",
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "sentences": MINILM_SENTENCES,
        "sentence_embeddings": [[round(x, 7) for x in v] for v in emb.tolist()],
        "word_texts": MINILM_WORD_TEXTS,
        "words": [
            {"word": w, "count": c, "vector": [round(x, 7) for x in v]} for w, (c, v) in words.items()
        ],
    }
    path = os.path.join(OUT, "minilm-reference.json")
    with open(path, "w") as f:
        json.dump(ref, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"minilm: {len(MINILM_SENTENCES)} sentences, {len(words)} words -> {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minilm", help="folder with all-MiniLM-L6-v2 (sentence-transformers layout)")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    build("bert", seed=1)
    build("mpnet", seed=2)
    if args.minilm:
        build_minilm(args.minilm)


if __name__ == "__main__":
    sys.exit(main())
