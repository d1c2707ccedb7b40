"""Generate chapters/bert_gpt.ipynb (outputs are filled in by `make execute`).

Usage: python make_bert_gpt.py chapters/bert_gpt.ipynb
"""
import sys

import nbformat as nbf

cells = []


def md(src, tags=()):
    c = nbf.v4.new_markdown_cell(src.strip("\n"))
    if tags:
        c.metadata["tags"] = list(tags)
    cells.append(c)


def code(src, tags=()):
    c = nbf.v4.new_code_cell(src.strip("\n"))
    if tags:
        c.metadata["tags"] = list(tags)
    cells.append(c)


def solution(label, src):
    md(f"""
```{{solution-start}} {label}
:class: dropdown
```
""")
    code(src, tags=["solution"])
    md("""
```{solution-end}
```
""")


# ---------------------------------------------------------------------------------------------------------
md(r"""
# BERT and GPT: encoder-only and decoder-only

Seed 001 is called "天才在左 (BERT)，疯子在右 (GPT)": *the genius on the left (BERT), the madman on the right
(GPT)*. Both are the Transformer of the previous chapter cut in half. **BERT** keeps the encoder: every token
sees the whole sentence, left and right, and the model is trained to fill in blanks. **GPT** keeps the decoder
(without cross-attention): every token sees only what came before, and the model is trained to write the next
word. Both are *pre-trained* on plain text, without labels, and then *fine-tuned* on a small labelled task —
seed 001's "预训练 + 微调" (pre-training + fine-tuning) paradigm.

In this chapter you will

1. put the two attention masks side by side: bidirectional (padding only) and causal;
2. build BERT's input — token + segment + learned position embeddings with `[CLS]` and `[SEP]` — and its two
   pre-training tasks, masked language modelling (15 %, 80/10/10) and next-sentence prediction, measuring the
   masking statistics;
3. pre-train a tiny BERT on the English side of Multi30k and test it on blanks in held-out sentences;
4. fine-tune it on a sentence-level task, after reading seed 001's three ways to use BERT downstream;
5. build GPT from its equations $h_0 = UW_e + W_p$, $P(u) = \operatorname{softmax}(h_n W_e^\top)$, train it, measure
   its perplexity and sample from it at two temperatures;
6. place the book's tiny models next to GPT-1/2/3, BERT, RoBERTa, ERNIE and ELECTRA.

Both models are trained here for about a minute each on a CPU, with step budgets so that the numbers are
reproducible. They are tiny; the point is to see each mechanism work, measured against a baseline.
""")

code(r"""
%matplotlib inline
import inspect
import math
import random
import time

import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import Code, Markdown, display

from lib.attention import causal_mask, padding_mask
from lib.bert import (IGNORE_INDEX, IS_NEXT, Bert, BertClassifier, BertConfig, BertVocab, collate_pairs,
                      make_nsp_pairs, mask_tokens, pack_pair)
from lib.data import load_multi30k
from lib.exercises import check
from lib.gpt import GPT, GPTConfig, generate, lm_loss
from lib.lm import LMTrainConfig, gpt_sequences, pad_batch, train_lm, unigram_counts
from lib.plots import plot_attention, plot_curves, plot_distributions, plot_mask
from lib.tokenize import BOS_ID, EOS_ID, decode, encode, multi30k_tokenizer

# The knobs of this chapter.
SEED = 0
MAX_LEN = 40            # learned positions of both models (99.8 % of Multi30k's English training sentences fit)
BERT_STEPS = 600        # MLM pre-training steps, 64 sentences each
GPT_STEPS = 500         # language-model steps, 32 sentences each
FT_STEPS = 50           # fine-tuning steps, 32 sentences each (1,600 sentences: deliberately few)
FT_TRAIN = 4000         # training sentences of the fine-tuning task
TEMPERATURES = (0.7, 1.3)
torch.set_num_threads(1)  # the same arithmetic on every machine, and fast for models this small
_ = torch.manual_seed(SEED)
np.set_printoptions(precision=4, suppress=True, linewidth=110)

tokenizer = multi30k_tokenizer()                    # the book's joint de/en BPE, 8,000 tokens
V = tokenizer.get_vocab_size()
VOCAB = BertVocab(V)                                # [CLS], [SEP], [MASK] appended: ids 8000, 8001, 8002
train_en = [en for _, en in load_multi30k("train")]
val_en = [en for _, en in load_multi30k("val")]
train_ids = [encode(tokenizer, s) for s in train_en]
val_ids = [encode(tokenizer, s) for s in val_en]
print(f"{len(train_ids):,} training and {len(val_ids):,} validation sentences; vocabulary {V:,} + 3 BERT specials")
""")

code(r"""
assert (V, VOCAB.cls_id, VOCAB.sep_id, VOCAB.mask_id, VOCAB.size) == (8000, 8000, 8001, 8002, 8003)
assert len(train_ids) == 29000 and len(val_ids) == 1014
assert sum(len(s) + 2 <= MAX_LEN for s in train_ids) / len(train_ids) > 0.998
""", tags=["remove-cell"])

md(r"""
BERT needs three tokens that the translation tokenizer does not have: `[CLS]` (the start of every input, whose
output summarises it), `[SEP]` (the end of each sentence) and `[MASK]` (a blank). `lib.bert.BertVocab` appends
them after the tokenizer's 8,000 ids, so every ordinary id keeps its meaning and `<pad>` stays 0.

## 1. Two masks: left-and-right versus left-only

The only architectural difference between the two halves is the self-attention mask (`True` = may attend, as
everywhere in `lib`). BERT's encoder masks only padding: every real token attends to every real token. GPT's
decoder adds the causal mask of the Transformer chapter: position $t$ attends to $0, \dots, t$. Here are both for
the first validation sentence, padded by two positions as it would be in a batch:
""")

code(r"""
sentence = val_ids[0]
labels = ["[CLS]", *[tokenizer.id_to_token(i) for i in sentence], "[SEP]", "<pad>", "<pad>"]
ids = torch.tensor([[VOCAB.cls_id, *sentence, VOCAB.sep_id, 0, 0]])
bidirectional = padding_mask(ids, pad_id=0)[0, 0].expand(len(labels), -1)   # (seq, seq): BERT
causal = causal_mask(len(labels))                                            # (seq, seq): GPT
print(val_en[0])
plot_mask(bidirectional, labels, title="BERT: padding mask only (bidirectional)")
""")

code(r"""
plot_mask(causal, ["<s>", *labels[1:-3], "</s>", "<pad>", "<pad>"], title="GPT: causal mask (left to right)")
""")

code(r"""
n = len(labels)
assert int(bidirectional.sum()) == n * (n - 2) and int(causal.sum()) == n * (n + 1) // 2
""", tags=["remove-cell"])

md(r"""
In the left grid every row is blue up to the padding: the representation of a word depends on the words after it
as well as before. In the right grid the upper triangle is grey. A causal model can be trained to predict the
*next* token at every position at once (the answer is never visible); a bidirectional model cannot — each token
could simply look at itself — so BERT needs a different task: hide some tokens and predict them.

## 2. BERT's input: three embeddings added

Seed 001 (after Devlin et al. 2019, Fig. 2): the input vector of each position is the sum of a **token
embedding**, a **segment embedding** (sentence A or B: $E_A$, $E_B$) and a **position embedding**, and, unlike the
Transformer's sinusoids, the positions are *learned* parameters. Every input starts with `[CLS]`; each sentence
ends with `[SEP]`. `lib.bert.pack_pair` builds the ids and segment ids of a pair:
""")

code(r"""
a, b = val_ids[0], val_ids[1]
pair_ids, pair_segments = pack_pair(a, b, VOCAB, MAX_LEN)
names = {VOCAB.cls_id: "[CLS]", VOCAB.sep_id: "[SEP]"}
print(f"{'token':>12} {'id':>6} {'segment':>8} {'position':>9}")
for position, (i, s) in enumerate(zip(pair_ids, pair_segments)):
    print(f"{names.get(i, tokenizer.id_to_token(i)):>12} {i:>6} {s:>8} {position:>9}")
""")

code(r"""
assert pair_ids[0] == VOCAB.cls_id and pair_ids.count(VOCAB.sep_id) == 2 and pair_ids[-1] == VOCAB.sep_id
assert pair_segments == [0] * (len(a) + 2) + [1] * (len(b) + 1)
""", tags=["remove-cell"])

md(r"""
`Bert.embed` is the sum, line for line (the LayerNorm and dropout after it are BERT's, too):
""")

code(r"""
display(Code(inspect.getsource(Bert.embed), language="python"))
""")

md(r"""
## 3. Masked language modelling: 15 %, then 80 / 10 / 10

Seed 001: 15 % of the tokens are chosen; of those, 80 % become `[MASK]`, 10 % a random token, 10 % stay as they
are, and the model must recover the original at all chosen positions. The 10 % + 10 % exist because `[MASK]` never
occurs when the model is later fine-tuned or used; if the model only ever had to predict at `[MASK]`, it would
not need a good representation of the other tokens (Devlin et al. 2019, §3.1 and Appendix C.2). `[CLS]`, `[SEP]`
and padding are never chosen. Here is `lib.bert.mask_tokens` applied to the whole training set once, with the
fractions counted:
""")

code(r"""
all_x, all_seg = collate_pairs([pack_pair(s, None, VOCAB, MAX_LEN) for s in train_ids])
special = VOCAB.special_mask(all_x)
inputs, targets = mask_tokens(all_x, special, V, VOCAB.mask_id, torch.Generator().manual_seed(SEED))
chosen = targets != IGNORE_INDEX
n_chosen = int(chosen.sum())
frac_chosen = n_chosen / int((~special).sum())
frac_mask = int((chosen & (inputs == VOCAB.mask_id)).sum()) / n_chosen
frac_same = int((chosen & (inputs == all_x)).sum()) / n_chosen
frac_random = 1 - frac_mask - frac_same
print(f"{int((~special).sum()):,} maskable tokens, {n_chosen:,} chosen: {frac_chosen:.2%}")
print(f"of the chosen: [MASK] {frac_mask:.2%}, random token {frac_random:.2%}, unchanged {frac_same:.2%}")
print(f"specials chosen: {int((chosen & special).sum())}")
print("example:", " ".join("[MASK]" if i == VOCAB.mask_id else tokenizer.id_to_token(i)
                           for i in inputs[0].tolist() if i not in (0, VOCAB.cls_id, VOCAB.sep_id)))
""")

code(r"""
assert abs(frac_chosen - 0.15) < 0.005 and abs(frac_mask - 0.80) < 0.01
assert abs(frac_random - 0.10) < 0.01 and abs(frac_same - 0.10) < 0.01
assert int((chosen & special).sum()) == 0
""", tags=["remove-cell"])

md(r"""
Over the 29,000 training sentences, 15 % of the maskable tokens are chosen (to within half a percentage point),
and of those 80 % become `[MASK]` and 10 % each are replaced or kept (each within one point); no `[CLS]`,
`[SEP]` or padding is ever chosen. Note that `mask_tokens` labels the positions that are *not* chosen with
−100, PyTorch's `ignore_index`, not with the padding id: only the chosen 15 % contribute to the loss. The masking
is drawn anew for every batch during training (the *dynamic masking* that RoBERTa adopted; the original BERT
fixed it in advance, 10 copies per sentence).

## 4. Next-sentence prediction

BERT's second task (seed 001, "下一句子预测"): given sentences A and B, decide whether B really followed A. Half
of the training pairs are true neighbours (`IsNext`), half pair A with a random sentence (`NotNext`), and the
classifier reads the output at `[CLS]`. `lib.bert.make_nsp_pairs` builds them:
""")

code(r"""
nsp = make_nsp_pairs(val_en, random.Random(SEED))
frac_next = sum(label == IS_NEXT for _, _, label in nsp) / len(nsp)
print(f"{len(nsp)} pairs, IsNext {frac_next:.1%}")
for a_text, b_text, label in nsp[:3]:
    print(f"{'IsNext ' if label == IS_NEXT else 'NotNext'} | {a_text} || {b_text}")
""")

code(r"""
assert len(nsp) == 1013 and abs(frac_next - 0.5) < 0.04
assert all((b_text == val_en[val_en.index(a_text) + 1]) == (label == IS_NEXT) for a_text, b_text, label in nsp[:50])
""", tags=["remove-cell"])

md(r"""
About half of the pairs are `IsNext`, as the recipe says. But look at the examples: in Multi30k, consecutive
sentences describe *different photographs*, so "the next sentence" carries no meaning here and NSP could only be
learned from topic overlap by chance. We therefore pre-train with MLM alone. That is no great loss: RoBERTa (Liu
et al. 2019, §4.2) found that removing NSP matches or slightly improves downstream results, and seed 001 lists
"去除了 NSP 任务" (removing NSP) among RoBERTa's changes.

## 5. Pre-training a tiny BERT

The model: 2 encoder layers, $d_\text{model} = 128$, 4 heads, $d_{ff} = 512$, 40 learned positions, post-LN and
GELU as in BERT, the MLM output layer tied to the token embedding. The loss is the cross-entropy at the chosen
positions only. `lib.lm.train_lm` is the training loop shared with GPT: Adam with the warm-up schedule of the
Transformer chapter, a step budget, a history.
""")

code(r"""
bert_config = BertConfig.tiny(VOCAB.size, max_len=MAX_LEN)
torch.manual_seed(SEED)
bert = Bert(bert_config)
train_rows = [pack_pair(s, None, VOCAB, MAX_LEN) for s in train_ids]
mask_gen = torch.Generator().manual_seed(SEED)


def mlm_step(model, batch):
    x, seg = collate_pairs(batch)
    inp, tgt = mask_tokens(x, VOCAB.special_mask(x), V, VOCAB.mask_id, mask_gen)   # fresh masks every batch
    return model.mlm_loss(model(inp, seg).hidden, tgt)


# held-out: the validation sentences, masked once with their own seed
val_x, val_seg = collate_pairs([pack_pair(s, None, VOCAB, MAX_LEN) for s in val_ids])
val_inp, val_tgt = mask_tokens(val_x, VOCAB.special_mask(val_x), V, VOCAB.mask_id, torch.Generator().manual_seed(1))
print(f"BERT: {bert.num_parameters():,} parameters; {int((val_tgt != IGNORE_INDEX).sum()):,} masked validation positions")
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
start = time.perf_counter()
bert_history = train_lm(bert, train_rows, mlm_step,
                        LMTrainConfig(max_steps=BERT_STEPS, batch_size=64, peak_lr=1e-3, warmup=100, eval_every=100, seed=SEED),
                        val_fn=lambda m: m.mlm_loss(m(val_inp, val_seg).hidden, val_tgt).item(), progress=False)
bert_seconds = time.perf_counter() - start
print(f"{bert_history.steps} steps in {bert_seconds:.0f} s on this machine")
""")

code(r"""
with torch.no_grad():
    hidden = bert(val_inp, val_seg).hidden
    picked = val_tgt != IGNORE_INDEX
    mlm_pred = bert.mlm_logits(hidden[picked]).argmax(-1)
mlm_acc = (mlm_pred == val_tgt[picked]).float().mean().item()
counts = unigram_counts(train_ids, VOCAB.size)
most_frequent = int(counts.argmax())
unigram_acc = (val_tgt[picked] == most_frequent).float().mean().item()
print(f"masked-token accuracy on validation: BERT {mlm_acc:.1%}; "
      f"unigram baseline (always {tokenizer.id_to_token(most_frequent)!r}) {unigram_acc:.1%}")
plot_curves({"training MLM loss": bert_history.curve("train_loss"), "validation MLM loss": bert_history.curve("val_loss")},
            xlabel="step", ylabel="cross-entropy (nats per masked token)", title="Tiny BERT, masked language modelling")
""")

code(r"""
assert BERT_STEPS == 600 and bert_history.steps == 600
assert tokenizer.id_to_token(most_frequent) == "▁a" and 0.05 < unigram_acc < 0.2
assert mlm_acc > unigram_acc + 0.10 and mlm_acc > 2 * unigram_acc
assert bert_history.entries[-1]["val_loss"] < math.log(VOCAB.size) - 3     # far below a uniform guess (9.0 nats)
""", tags=["remove-cell"])

md(r"""
After 600 steps (38,400 sentences, a little more than one pass over the data) the tiny BERT fills more than
twice as many blanks correctly as the best context-free guess — always answering the most frequent token,
`▁a` — on validation sentences it has never seen (the exact figures are printed above). The loss is still
falling: this is the beginning of pre-training, not the end.

**Fill in the blank.** The first five validation sentences, each with the token in the middle replaced by
`[MASK]` (a fixed rule, not chosen by hand), and the model's three most probable fillers:
""")

code(r"""
def fill_in(token_ids, position):
    x = torch.tensor([[VOCAB.cls_id, *token_ids, VOCAB.sep_id]])
    x[0, position + 1] = VOCAB.mask_id
    with torch.no_grad():
        probs = torch.softmax(bert.mlm_logits(bert(x).hidden[0, position + 1]), -1)
    top = probs.topk(3)
    return [(tokenizer.id_to_token(int(i)), float(p)) for p, i in zip(top.values, top.indices)]


blank_hits = 0
for s in val_ids[:5]:
    pos = len(s) // 2
    shown = " ".join("____" if j == pos else tokenizer.id_to_token(t) for j, t in enumerate(s))
    guesses = fill_in(s, pos)
    blank_hits += guesses[0][0] == tokenizer.id_to_token(s[pos])
    print(f"{shown}\n    truth {tokenizer.id_to_token(s[pos])!r:14} BERT: "
          + ", ".join(f"{t!r} {p:.2f}" for t, p in guesses))
""", tags=["nbval-ignore-output"])

md(r"""
Read these honestly: after one pass over 29,000 captions the model's favourites are still mostly the frequent
short words (`▁a`, `▁the`, `▁in`), with low confidence. It does get blanks right where such a word belongs, and
most of its accuracy comes from exactly these positions; content words (*green*, *jacket*) and the inside of
split words (`▁c|ott|on`) need far more pre-training. The rule "the middle token" also shows why BERT's later
variants (SpanBERT, ERNIE's phrase masking) mask whole words or spans: a lone sub-word piece is often guessable
from its neighbours alone, or not at all.

**What does BERT attend to?** The attention of its last layer for the first validation sentence (head 0). Every
row may spread over the whole sentence, left and right:
""")

code(r"""
x0 = torch.tensor([[VOCAB.cls_id, *val_ids[0], VOCAB.sep_id]])
with torch.no_grad():
    w0 = bert(x0, need_weights=True).weights[-1][0, 0]                 # (seq, seq)
tok0 = ["[CLS]", *[tokenizer.id_to_token(i) for i in val_ids[0]], "[SEP]"]
plot_attention(w0, tok0, tok0, annotate=False, title="tiny BERT, last layer, head 0")
""")

code(r"""
assert torch.allclose(w0.sum(-1), torch.ones(len(tok0))) and float(w0.triu(1).sum()) > 1.0
""", tags=["remove-cell"])

md(r"""
## 6. Fine-tuning: one pre-trained model, many tasks

Seed 001 lists the downstream uses (Devlin et al. 2019, Fig. 4):

- **Classification** of one sentence (topic, sentiment) or of a sentence pair (do they mean the same?): feed
  `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` and put a linear layer $W \in \mathbb{R}^{K \times d}$ on the output at
  `[CLS]`: $P(y) = \operatorname{softmax}(W C)$. `lib.bert.BertClassifier` is exactly this.
- **Question answering by span extraction** (SQuAD): input `[CLS] question [SEP] passage [SEP]`; two learned
  vectors $S, E \in \mathbb{R}^d$ score every passage token $i$ as the answer's start, $\operatorname{softmax}_i(S \cdot T_i)$,
  and end, $\operatorname{softmax}_j(E \cdot T_j)$; the answer is the span $i \le j$ with the highest $S \cdot T_i + E \cdot T_j$.
- **Sequence labelling** (named entities, part of speech): a linear layer on *every* token's output predicts that
  token's label.

In each case, all of BERT's weights are trained further, with a small learning rate, together with the few new
ones. A sentence-level task we can build from Multi30k without any annotation: **is this sentence in its
original word order, or have its words been shuffled?** Half of the sentences are shuffled (at the level of
sub-word tokens; a shuffle that returns the original order is drawn again). A model must have some notion of
English word order to tell the two apart, which MLM pre-training should have given it. The fine-tuned classifier
is compared with the majority baseline (50 %) and with the same classifier trained from a random
initialisation for the same number of steps.
""")

code(r"""
def shuffled(ids, rng):
    if len(set(ids)) < 2:
        return list(ids)
    while True:
        out = list(ids)
        rng.shuffle(out)
        if out != list(ids):
            return out


def order_task(sentences, seed):
    rng = random.Random(seed)
    return [(pack_pair(s if i % 2 == 0 else shuffled(s, rng), None, VOCAB, MAX_LEN), i % 2)   # label 1 = shuffled
            for i, s in enumerate(sentences)]


ft_train, ft_val = order_task(train_ids[:FT_TRAIN], SEED), order_task(val_ids, SEED + 1)
ft_x, ft_seg = collate_pairs([row for row, _ in ft_val])
ft_y = torch.tensor([label for _, label in ft_val])
majority = max(ft_y.float().mean().item(), 1 - ft_y.float().mean().item())


def classify_step(model, batch):
    x, seg = collate_pairs([row for row, _ in batch])
    return F.cross_entropy(model(x, seg), torch.tensor([label for _, label in batch]))


def val_accuracy(model):
    return (model(ft_x, ft_seg).argmax(-1) == ft_y).float().mean().item()


def fine_tune(base):
    torch.manual_seed(SEED)
    clf = BertClassifier(base, num_classes=2)
    history = train_lm(clf, ft_train, classify_step,
                       LMTrainConfig(max_steps=FT_STEPS, batch_size=32, peak_lr=5e-4, warmup=10, eval_every=10, seed=SEED),
                       val_fn=val_accuracy, progress=False)
    return history


import copy
pretrained_ft = fine_tune(copy.deepcopy(bert))
torch.manual_seed(SEED)
scratch_ft = fine_tune(Bert(bert_config))
acc_pre, acc_scratch = pretrained_ft.entries[-1]["val_loss"], scratch_ft.entries[-1]["val_loss"]
print(f"validation accuracy after {FT_STEPS} steps: pre-trained BERT {acc_pre:.1%}, from scratch {acc_scratch:.1%}, "
      f"majority baseline {majority:.1%}")
plot_curves({"pre-trained with MLM": pretrained_ft.curve("val_loss"), "random initialisation": scratch_ft.curve("val_loss"),
             "majority baseline": ([0, FT_STEPS], [majority, majority])},
            xlabel="fine-tuning step", ylabel="validation accuracy", title="Original or shuffled? Fine-tuning from [CLS]")
""")

code(r"""
assert majority == 0.5 and len(ft_val) == 1014
assert FT_STEPS == 50 and acc_pre > majority + 0.25 and acc_pre > acc_scratch + 0.04
""", tags=["remove-cell"])

md(r"""
After only 50 steps (1,600 labelled sentences), the pre-trained model separates original from shuffled sentences
far better than chance — more than 25 percentage points above the 50 % majority baseline on the held-out
validation sentences — and better than the same network trained for the same 50 steps from random weights (the
exact figures are printed above). That difference is what pre-training buys:
the knowledge of word order that MLM put into the weights transfers to a task it was never trained on.

## 7. GPT: a language model from the decoder

Seed 001 gives GPT-1's equations (Radford et al. 2018, Eq. 1 and 2). The unsupervised objective is the
log-likelihood of each token given the $k$ tokens before it,

$$
L_1(\mathcal{U}) = \sum_i \log P(u_i \mid u_{i-k}, \dots, u_{i-1}; \Theta),
$$

and the model that computes $P$ is a stack of $n$ decoder blocks (self-attention under the causal mask, then the
feed-forward network — no cross-attention, since there is no encoder):

$$
h_0 = U W_e + W_p, \qquad h_l = \texttt{transformer\_block}(h_{l-1})\ \ \forall l \in [1, n], \qquad
P(u) = \operatorname{softmax}(h_n W_e^\top),
$$

with $U$ the one-hot context, $W_e$ the token embedding matrix and $W_p$ the learned position embeddings. The
output layer is $W_e^\top$: the same matrix maps tokens in and out. `lib.gpt.GPT.forward` follows the three lines:
""")

code(r"""
src = inspect.getsource(GPT.forward)
display(Code(src[src.index("        positions"):], language="python"))
""")

md(r"""
Training maximises $L_1$, i.e. minimises `lib.gpt.lm_loss`, the mean of $-\log P(u_i \mid u_{<i})$ over all
positions of each sentence `<s> … </s>`. Our GPT has the same sizes as our BERT (2 layers, $d_\text{model} = 128$)
and uses pre-LN, as GPT-2 does:
""")

code(r"""
gpt_config = GPTConfig.tiny(V, max_len=MAX_LEN)
torch.manual_seed(SEED)
gpt = GPT(gpt_config)
train_seqs, val_seqs = gpt_sequences(train_ids, MAX_LEN), gpt_sequences(val_ids, MAX_LEN)
val_batch = pad_batch(val_seqs)


def lm_step(model, batch):
    x = pad_batch(batch)
    return lm_loss(model(x), x)


# causality, checked on the untrained model: changing the last tokens leaves the earlier logits unchanged
probe = val_batch[:2, :12].clone()
with torch.no_grad():
    before = gpt.eval()(probe)
    probe[:, 8:] = 5
    after = gpt(probe)
print(f"GPT: {gpt.num_parameters():,} parameters; max change of logits 0–7 after editing tokens 8–11: "
      f"{(before[:, :8] - after[:, :8]).abs().max().item():.1e}")
""")

code(r"""
assert torch.allclose(before[:, :8], after[:, :8], atol=1e-5) and not torch.allclose(before[:, 8:], after[:, 8:])
""", tags=["remove-cell"])

code(r"""
# NBVAL_IGNORE_OUTPUT
start = time.perf_counter()
gpt_history = train_lm(gpt, train_seqs, lm_step,
                       LMTrainConfig(max_steps=GPT_STEPS, batch_size=32, peak_lr=2e-3, warmup=100, eval_every=100, seed=SEED),
                       val_fn=lambda m: lm_loss(m(val_batch), val_batch).item(), progress=False)
gpt_seconds = time.perf_counter() - start
print(f"{gpt_history.steps} steps in {gpt_seconds:.0f} s on this machine")
""")

md(r"""
**Perplexity.** $\exp$ of the mean negative log-likelihood per token is the *perplexity*: a model with perplexity
$P$ is, on average, as unsure as if it chose among $P$ equally likely tokens. The baseline is the unigram model,
which ignores the context and predicts every token with its training frequency (add-one smoothed). Both are
measured on the 1,014 validation sentences, every token including `</s>`:
""")

code(r"""
gpt_ppl = math.exp(gpt_history.entries[-1]["val_loss"])
targets = torch.cat([torch.tensor(s[1:]) for s in val_seqs])                 # every predicted token
uni = unigram_counts([s[1:] for s in train_seqs], V) + 1
unigram_ppl = math.exp(-(uni / uni.sum()).log()[targets].mean().item())
print(f"validation perplexity: GPT {gpt_ppl:.1f}, unigram {unigram_ppl:.1f} ({len(targets):,} tokens)")
plot_curves({"training": gpt_history.curve("train_loss"), "validation": gpt_history.curve("val_loss"),
             "unigram baseline": ([0, GPT_STEPS], [math.log(unigram_ppl)] * 2)},
            xlabel="step", ylabel="cross-entropy (nats per token)", title="Tiny GPT, next-token prediction")
""")

code(r"""
assert GPT_STEPS == 500 and gpt_history.steps == 500
assert round(unigram_ppl) == 326 and gpt_ppl < unigram_ppl / 4
""", tags=["remove-cell"])

md(r"""
The unigram model's perplexity is about 326: without context, the next token is as uncertain as a choice among
hundreds. The tiny GPT brings it below a quarter of that after 500 steps (the exact value is printed above):
the preceding words narrow the next one down enormously.

**Sampling.** `lib.gpt.generate` extends a prompt one token at a time, drawing from
$\operatorname{softmax}(z / T)$ where $z$ are the logits and $T$ the *temperature*; $T \to 0$ (and $T = 0$
exactly) is greedy argmax, $T = 1$ the model's own distribution, $T > 1$ flatter. `top_k` first removes all but
the $k$ most probable tokens. Here is the next-token distribution after the start of the first validation
sentence, at three temperatures:
""")

code(r"""
prompts = [" ".join(s.split()[:3]) for s in val_en[:3]]      # the first three words of real sentences


def next_token_figure(prompt, temps=(0.5, 1.0, 2.0), k=8):
    x = torch.tensor([[BOS_ID, *encode(tokenizer, prompt)]])
    with torch.no_grad():
        logits = gpt(x)[0, -1]
    top = logits.topk(k).indices
    dists = {f"T = {t}": torch.softmax(logits / t, -1)[top] for t in temps}
    return plot_distributions(dists, [tokenizer.id_to_token(int(i)) for i in top],
                              title=f"P(next token | {prompt!r}), the {k} most probable", xlabel="next token")


next_token_figure(prompts[0])
""")

md(r"""
At $T = 0.5$ the probability piles onto the favourite; at $T = 2$ the eight candidates become almost equally likely
(and the thousands of tokens outside the plot share the rest). Continuations of the three prompts, greedy and
sampled at $T = 0.7$ and $T = 1.3$ (one fixed seed per prompt):
""")

code(r"""
def continue_text(prompt, temperature, top_k=None, seed=SEED, n=20):
    x = torch.tensor([BOS_ID, *encode(tokenizer, prompt)])
    out = generate(gpt, x, n, temperature=temperature, top_k=top_k,
                   generator=torch.Generator().manual_seed(seed), eos_id=EOS_ID)
    return decode(tokenizer, out[len(x):])


samples = {}
for prompt in prompts:
    print(f"prompt: {prompt!r}")
    for t in (0.0, *TEMPERATURES):
        samples[prompt, t] = continue_text(prompt, t, seed=SEED + prompts.index(prompt))
        print(f"   T = {t}: {prompt} … {samples[prompt, t]}")
""", tags=["nbval-ignore-output"])

code(r"""
x = torch.tensor([BOS_ID, *encode(tokenizer, prompts[0])])
assert torch.equal(generate(gpt, x, 5, temperature=0), generate(gpt, x, 5, temperature=0.7, top_k=1))
assert all(len(samples[p, t]) > 0 for p in prompts for t in (0.0, *TEMPERATURES))
""", tags=["remove-cell"])

md(r"""
The greedy continuations are fluent and repetitive, the most probable caption for every prompt; at $T = 0.7$ they
stay plausible but vary; at $T = 1.3$ the rarer words and the mistakes multiply. In a running notebook, the
cell below continues any prompt at the temperature and $k$ you choose and draws the next-token distribution;
press **Generate**.
""")

code(r"""
from ipywidgets import FloatSlider, IntSlider, Text, interact_manual


def sampling_view(prompt, temperature, top_k, seed):
    print(prompt, "…", continue_text(prompt, temperature, top_k or None, seed))
    display(next_token_figure(prompt, (max(temperature, 0.05), 1.0)))


interact_manual.options(manual_name="Generate")(
    sampling_view,
    prompt=Text(value=prompts[0], description="prompt", layout={"width": "80%"}),
    temperature=FloatSlider(value=0.7, min=0.0, max=2.0, step=0.1, description="T"),
    top_k=IntSlider(value=0, min=0, max=50, description="top-k (0 = all)"),
    seed=IntSlider(value=0, min=0, max=99, description="seed"),
);
""", tags=["nbval-ignore-output", "remove-output"])

md(r"""
**Fine-tuning GPT.** For a labelled task, GPT-1 (§3.2) feeds the input tokens $x^1, \dots, x^m$ through the
pre-trained model and puts a new linear layer $W_y$ on the last position's final state:
$P(y \mid x^1, \dots, x^m) = \operatorname{softmax}(h_l^m W_y)$, maximising $L_2(\mathcal{C}) = \sum_{(x, y)} \log
P(y \mid x^1, \dots, x^m)$ (seed 001 stops here). The paper then keeps the language-modelling objective as an
auxiliary loss during fine-tuning,

$$
L_3(\mathcal{C}) = L_2(\mathcal{C}) + \lambda \cdot L_1(\mathcal{C}), \qquad \lambda = 0.5,
$$

which "improves generalization of the supervised model, and accelerates convergence" (Radford et al. 2018, Eq. 5).
Inputs that are not a single sentence are turned into one token sequence with delimiters (premise `$`
hypothesis for entailment; both orders for similarity; context `$` answer for each choice in multiple choice),
the same idea as BERT's `[SEP]`. The last token is the GPT counterpart of BERT's `[CLS]`: only it has seen the
whole input.

**GPT-2** (Radford et al. 2019) changed little in the architecture — LayerNorm moved to each block's input plus
a final LayerNorm (our `norm_first=True`), 1,024 positions, 50,257 byte-level BPE tokens — and scaled the model to
1.5 billion parameters and the data to WebText (about 8 million documents, 40 GB), showing that a language model
can perform tasks *zero-shot*, from a prompt alone. **GPT-3** (Brown et al. 2020) scaled to 175 billion
parameters and showed *few-shot* learning from examples in the prompt.

## 8. The models, and ours for scale

Seed 001's table, with the BERT family and the book's two models added. The parameter counts of GPT-1 and
BERT-base are recomputed from `lib`'s own classes at the papers' sizes (built on PyTorch's `meta` device, which
allocates no memory):
""")

code(r"""
with torch.device("meta"):
    gpt1_params = GPT(GPTConfig.gpt1()).num_parameters()
    bert_base_params = Bert(BertConfig.base()).num_parameters()
print(f"lib GPT at GPT-1's sizes: {gpt1_params:,} parameters (paper: 117 M)")
print(f"lib Bert at BERT-base's sizes: {bert_base_params:,} parameters (paper: 110 M)")
print(f"this chapter: tiny BERT {bert.num_parameters():,}, tiny GPT {gpt.num_parameters():,}")
""")

code(r"""
assert 116e6 < gpt1_params < 118e6 and 108e6 < bert_base_params < 111e6
assert bert.num_parameters() == 1_468_101 and gpt.num_parameters() == 1_425_920
assert round(117e6 / gpt.num_parameters(), -1) == 80 and round(175e9 / gpt.num_parameters(), -4) == 120_000
train_tokens = sum(len(s) for s in train_ids)
assert round(train_tokens / 1e6, 1) == 0.4 and 0.5e-6 < train_tokens / 300e9 < 2e-6   # "a millionth"
""", tags=["remove-cell"])

md(r"""
| model | parameters | layers, $d_\text{model}$, context | pre-training data | what it introduced |
| --- | --- | --- | --- | --- |
| GPT (Radford et al. 2018) | 117 M | 12, 768, 512 | BooksCorpus (~7,000 books, ~800 M words) | generative pre-training + discriminative fine-tuning |
| BERT-base / large (Devlin et al. 2019) | 110 M / 340 M | 12, 768 / 24, 1,024; 512 | BooksCorpus + English Wikipedia (800 M + 2,500 M words) | bidirectional MLM + NSP |
| GPT-2 (Radford et al. 2019) | 1.5 B | 48, 1,600, 1,024 | WebText (~8 M web pages, 40 GB) | zero-shot task transfer |
| RoBERTa (Liu et al. 2019) | 355 M (large) | as BERT-large | 160 GB of text | more data, larger batches, longer training, dynamic masking, no NSP |
| ERNIE (Sun et al. 2019) | 110 M | as BERT-base | Chinese Wikipedia, Baike, news, forums | knowledge masking of whole phrases and entities |
| ELECTRA (Clark et al. 2020) | 14 M – 335 M | small to large | as BERT / as XLNet | replaced-token detection with a small generator |
| GPT-3 (Brown et al. 2020) | 175 B | 96, 12,288, 2,048 | 300 B tokens from Common Crawl, WebText2, Books1/2, Wikipedia | few-shot learning in the prompt |
| **this chapter's BERT** | **1.47 M** | 2, 128, 40 | Multi30k English, 29,000 captions (~0.4 M tokens) | — |
| **this chapter's GPT** | **1.43 M** | 2, 128, 40 | the same | — |

The book's models are about 80 times smaller than GPT-1 and 120,000 times smaller than GPT-3, and were trained on
a millionth of GPT-3's tokens — yet the mechanisms measured above are the same.

```{note}
Two corrections to seed 001's descriptions. (1) GPT-3's "训练数据量 45TB" (45 TB of training data) is the
compressed Common Crawl *before* filtering; after filtering it was 570 GB, and the model was trained on 300 billion
tokens (Brown et al. 2020, §2.2). (2) ELECTRA is described as "基于对抗生成网络的思路" (based on the idea of
GANs). Its generator is a small masked language model trained by maximum likelihood, not adversarially to fool
the discriminator; the authors note the GAN resemblance and explain why it is not one (Clark et al. 2020, §2).
```
""")

md(r"""
## Summary

- BERT is the Transformer's encoder (padding mask only: every token sees left and right); GPT is its decoder
  without cross-attention (causal mask). The two masks are the whole architectural difference.
- BERT's input is token + segment + learned position embeddings, `[CLS] A [SEP] B [SEP]`. Its masked language
  model chooses 15 % of the tokens and replaces 80 % of those with `[MASK]`, 10 % with a random token and keeps
  10 %; measured over the 29,000 training sentences, the fractions come out within a point of these.
- Next-sentence prediction makes 50 % `IsNext` pairs; Multi30k has no documents, so we used MLM alone, as
  RoBERTa does.
- A 1.5 M-parameter BERT pre-trained for 600 steps fills masked validation tokens correctly more than twice as
  often as the unigram baseline, and fine-tuning it from `[CLS]` to detect shuffled sentences beats both the
  majority baseline (by more than 25 points) and the same model trained from scratch.
- GPT: $h_0 = UW_e + W_p$, $P(u) = \operatorname{softmax}(h_n W_e^\top)$, trained to maximise
  $L_1 = \sum_i \log P(u_i \mid u_{<i})$; the tiny GPT's validation perplexity is below a quarter of the unigram
  model's 326. Temperature and top-$k$ shape its samples; $T = 0$ and $k = 1$ are greedy decoding. Fine-tuning
  adds a head and optimises $L_2 + \lambda L_1$.
- Seed 001 gives three uses of a fine-tuned BERT: classification from `[CLS]`, span extraction with start/end
  vectors, and per-token labelling.
""")

md(r"""
## Exercises

Each exercise ends with a call to `check`, which tests your answer against `lib` and prints ✅ or a hint.
""")

md(r"""
:::{exercise}
:label: bg-pair-inputs

Write `pair_inputs(a, b, cls_id, sep_id)` that returns BERT's input for the sentence pair `a`, `b` (lists of token
ids): the ids of `[CLS] a [SEP] b [SEP]` and the matching segment ids. Finish with
`check("bert_pair_inputs", pair_inputs)`.
:::
""")

solution("bg-pair-inputs", r"""
def pair_inputs(a, b, cls_id, sep_id):
    ids = [cls_id, *a, sep_id, *b, sep_id]
    segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)    # [CLS], A and its [SEP] are segment A
    return ids, segments


assert check("bert_pair_inputs", pair_inputs)  # prints ✅; the assert makes `make test` fail if this solution ever stops passing
""")

md(r"""
:::{exercise}
:label: bg-perplexity

Write `perplexity(log_probs)`: given the natural-log probabilities a language model gave to each token of a text
(a NumPy array), return the perplexity. What is it for a model that gives every token probability 1/4? Finish
with `check("lm_perplexity", perplexity)`.
:::
""")

solution("bg-perplexity", r"""
def perplexity(log_probs):
    return math.exp(-np.mean(log_probs))       # exp of the mean negative log-likelihood per token


assert check("lm_perplexity", perplexity)
""")

md(r"""
:::{exercise}
:label: bg-sample-probs

Write `sample_probs(logits, temperature, k)`: the probability vector from which `lib.gpt.generate` draws the next
token for temperature $T > 0$ and `top_k = k` (a NumPy array of logits in, probabilities out). Finish with
`check("sample_probs", sample_probs)`.
:::
""")

solution("bg-sample-probs", r"""
def sample_probs(logits, temperature, k):
    z = logits / temperature                               # temperature first
    z = np.where(z >= np.sort(z)[-k], z, -np.inf)          # keep the k largest
    e = np.exp(z - z.max())
    return e / e.sum()                                     # softmax over the survivors


assert check("sample_probs", sample_probs)
""")

md(r"""
:::{exercise}
:label: bg-param-count

Write `gpt_params(vocab_size, d_model, num_layers, d_ff, max_len)` that counts the parameters of `lib.gpt.GPT`
with post-LN (`norm_first=False`, no final LayerNorm): token and position embeddings, and per layer the four
attention projections (with biases), the two FFN layers (with biases) and two LayerNorms. The output layer is tied.
Check that GPT-1's sizes give about 117 M. Finish with `check("gpt_param_count", gpt_params)`.
:::
""")

solution("bg-param-count", r"""
def gpt_params(vocab_size, d_model, num_layers, d_ff, max_len):
    d = d_model
    attention = 4 * (d * d + d)                  # W_Q, W_K, W_V, W_O and their biases
    ffn = d * d_ff + d_ff + d_ff * d + d
    norms = 2 * 2 * d                            # two LayerNorms, γ and β each
    return vocab_size * d + max_len * d + num_layers * (attention + ffn + norms)


assert check("gpt_param_count", gpt_params)
""")

md(r"""
:::{exercise}
:label: bg-span

Seed 001's third use of BERT is question answering: start and end scores $s_i = S \cdot T_i$, $e_j = E \cdot T_j$
for every passage token. Explain why the best span is *not* simply (argmax of $s$, argmax of $e$), and how to find
the best valid span of at most $L$ tokens in $O(nL)$ time.
:::

:::{solution} bg-span
:class: dropdown

The two argmaxes are chosen independently, so the end can come before the start, or the span can be absurdly long.
A valid span needs $i \le j < i + L$. Score every valid pair by $s_i + e_j$ (the log of the product of the two
softmax probabilities, up to a constant) and take the maximum: for each start $i$, look at the $L$ ends
$j = i, \dots, i + L - 1$ — $n L$ pairs in all. Devlin et al. (2019, §4.2) score spans exactly this way.
:::
""")

md(r"""
## References

- Devlin, J., Chang, M.-W., Lee, K. and Toutanova, K. (2019). BERT: Pre-training of Deep Bidirectional Transformers
  for Language Understanding. *NAACL*. §3 and Fig. 2 (input), §3.1 (MLM, NSP), §3.2 and Fig. 4 (fine-tuning),
  Appendix C.2 (the 80/10/10 ablation).
- Radford, A., Narasimhan, K., Salimans, T. and Sutskever, I. (2018). Improving Language Understanding by
  Generative Pre-Training. OpenAI. Eq. (1)–(5).
- Radford, A., Wu, J., Child, R., Luan, D., Amodei, D. and Sutskever, I. (2019). Language Models are Unsupervised
  Multitask Learners. OpenAI.
- Brown, T. B. et al. (2020). Language Models are Few-Shot Learners. *NeurIPS*. arXiv:2005.14165.
- Liu, Y. et al. (2019). RoBERTa: A Robustly Optimized BERT Pretraining Approach. arXiv:1907.11692.
- Sun, Y. et al. (2019). ERNIE: Enhanced Representation through Knowledge Integration. arXiv:1904.09223.
- Clark, K., Luong, M.-T., Le, Q. V. and Manning, C. D. (2020). ELECTRA: Pre-training Text Encoders as
  Discriminators Rather Than Generators. *ICLR*.
- Fan, A., Lewis, M. and Dauphin, Y. (2018). Hierarchical Neural Story Generation. *ACL* (top-$k$ sampling).
- Vaswani, A. et al. (2017). Attention Is All You Need. *NeurIPS*. arXiv:1706.03762.
- Elliott, D., Frank, S., Sima'an, K. and Specia, L. (2016). Multi30K: Multilingual English-German Image
  Descriptions. *Workshop on Vision and Language*.
""")

nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, sys.argv[1])
