"""Generate chapters/seq2seq_bottleneck.ipynb (outputs are filled in by `make execute`).

Usage: python make_seq2seq_bottleneck.py chapters/seq2seq_bottleneck.ipynb
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
    """A gated solution: a dropdown whose body is a real code cell tagged `solution`."""
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
# The seq2seq bottleneck

Before attention, neural machine translation read a sentence with one recurrent network and wrote its
translation with another (Sutskever et al. 2014; Cho et al. 2014a). Between the two sat a single vector: the
encoder squeezed the whole source sentence into it, and the decoder had nothing else to go on. Seed 000
names three problems of this design: long-distance dependencies are hard to model (长距离依赖难以建模),
the whole input is compressed into one fixed-length vector (信息压缩瓶颈, *the information-compression
bottleneck*), and a fixed representation cannot adapt to what each output word needs (选择性不足,
*insufficient selectivity*). Its conclusion, "让模型在生成输出的每一步时,能够'选择性地'关注输入序列中最相关的部分"
(*let the model, at every output step, selectively attend to the most relevant part of the input*), is the
idea of the rest of this book.

This chapter makes those problems concrete and measures them. You will

1. write the encoder–decoder with seed 000's symbols and read `lib`'s implementation of it, the fixed-vector
   `Seq2Seq`, and check that the decoder really sees the source only through one vector $C$;
2. follow seed 004's argument about sequential dependency and long paths, including its "0.9¹⁰" estimate,
   and count the steps between the words of seed 003's example "The dog chased the cat" → "狗 追了 猫";
3. train the fixed-vector model to **reverse random sequences** and watch its accuracy collapse as the
   sequences grow, and compare the information in a sequence with what gets through the vector;
4. translate German to English with a fixed-vector model trained on Multi30k and measure BLEU by sentence
   length.
""")

code(r"""
%matplotlib inline
import inspect
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
from IPython.display import Code, display
from torch import nn

from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.data import load_multi30k
from lib.decode import greedy_decode
from lib.exercises import check
from lib.metrics import bleu_by_length, corpus_bleu
from lib.plots import plot_attention, plot_curves
from lib.seq2seq import Seq2Seq, reversal_experiment, sequence_task
from lib.tokenize import EOS_ID, PAD_ID
from lib.translate import translate

# The knobs of this chapter.
SEED = 0
NUM_SYMBOLS = 20                          # the reversal task's alphabet
KEEP = 0.9                                # seed 004: the share of information one step keeps
SHOW_LENGTH = 12                          # the test length drawn by the reversal figure and its widget
FIXED_RUN = Path(SHIPPED_MODEL).parent / "de-en-rnn-fixed"   # the fixed-vector German→English model
LENGTH_EDGES = [1, 8, 11, 14, 18]         # Multi30k source-length buckets, in words
_ = torch.manual_seed(SEED)
torch.set_printoptions(precision=4, sci_mode=False, linewidth=110)
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 1. The encoder–decoder

Seed 000 writes a sequence model's input and output as

$$
\text{Source} = \langle x_1, x_2, \dots, x_m \rangle, \qquad \text{Target} = \langle y_1, y_2, \dots, y_n \rangle,
$$

and the encoder–decoder as two functions:

$$
C = E(x_1, x_2, \dots, x_m), \qquad y_i = D(C, y_1, y_2, \dots, y_{i-1}).
$$

The **encoder** $E$ turns the whole source into one context vector $C$ of fixed size, "旨在捕获输入序列的语义信息"
(*meant to capture the meaning of the input*). The **decoder** $D$ writes the target one token at a time from
$C$ and the tokens it has already written: it is **autoregressive** (自回归). Seed 001 frames translation,
question answering and even classification as such sequence-to-sequence tasks ("Deep learning" → "深度学习").

With recurrent networks, as in seed 000 §1.2, the encoder reads one token per step, $h_j = E(x_j, h_{j-1})$ for
$j = 1, \dots, m$, and its last state becomes the context, $C = h_m$ (Sutskever et al. 2014; Cho et al. 2014a
apply one more layer, $C = \tanh(V h_m)$). The decoder runs a second recurrence over the target, with state
$h'_i$ computed from $h'_{i-1}$, the previous output $y_{i-1}$ and $C$, and predicts $y_i$ from $h'_i$.
Sutskever et al. give $C$ to the decoder only as its first state; Cho et al. also feed it into every step,
which is what seed 000's $y_i = D(C, \dots)$ says.

### The library's fixed-vector model

`lib.seq2seq.Seq2Seq` with `attention=None` is this model, built from the parts that Bahdanau et al. (2015)
call "RNNencdec". The encoder is a **bidirectional** GRU: a forward GRU reads $x_1 \dots x_m$, a backward GRU
reads $x_m \dots x_1$, and the state of token $j$ is $h_j = [\overrightarrow{h}_j; \overleftarrow{h}_j]$. The context
is the forward direction's last state next to the backward direction's last state, which sits at
position 1:

$$
C = [\overrightarrow{h}_m; \overleftarrow{h}_1], \qquad s_0 = \tanh(W_s C), \qquad
s_i = \text{GRU}([E y_{i-1}; C],\ s_{i-1}),
$$

$$
t_i = \tanh(W_o [s_i; C; E y_{i-1}]), \qquad p(y_i \mid y_{<i}, x) = \text{softmax}(t_i E^\top).
$$

$s_i$ is seed 000's decoder state $h'_i$ (the library uses Bahdanau et al.'s letter), $E$ is the embedding
matrix, shared by source, target and output layer. $C$ enters both ways: as the first state (Sutskever) and
at every step (Cho). `Seq2Seq.summary` reads $C$ from the encoder states of a padded batch:
""")

code(r"""
display(Code(inspect.getsource(Seq2Seq.summary), language="python"))
""")

md(r"""
`_start` sets up a sentence's decoder state: $s_0$ and, for the fixed-vector model, the context that every step
will reuse. `_step` is one decoder step; with `self.score is None` the context is the same $C$ at every step, and
the `else` branch is the attention of the next chapter:
""")

code(r"""
display(Code(inspect.getsource(Seq2Seq._start), language="python"))
display(Code(inspect.getsource(Seq2Seq._step), language="python"))
""")

md(r"""
### One vector, whatever the length

The experiment of §3 trains this model with 64-dimensional embeddings and 128-dimensional states (64 per
direction). We load it now (the first run of this notebook trains it; later runs read it from a cache on disk)
and encode three source sequences of 4, 12 and 30 tokens in one padded
batch. The encoder keeps one state per token; the decoder gets $C$, 128 numbers for each sentence, however long
it is.
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
start = time.perf_counter()
fixed = reversal_experiment(None)          # trains on the first run, then cached on disk
model = fixed.model
print(f"loaded from the cache: {fixed.cached}; training took {fixed.minutes:.1f} min on the machine that ran it;"
      f" this call {time.perf_counter() - start:.1f} s")
""")

code(r"""
sources = [pairs[0][0] for pairs in (sequence_task(1, n, n, NUM_SYMBOLS, seed=SEED) for n in (4, 12, 30))]
src = torch.full((3, 31), PAD_ID)
for row, s in enumerate(sources):
    src[row, : len(s) + 1] = torch.tensor(s + [EOS_ID])              # the tokens, EOS, then padding
with torch.no_grad():
    memory, src_mask, _ = model.encode(src)                           # states h_j, True where a real token is
    C = Seq2Seq.summary(memory, src_mask)
print("source lengths (with EOS):", src_mask.sum(-1).tolist())
print("encoder states:", tuple(memory.shape), " the context C:", tuple(C.shape))
print(f"parameters: {model.num_parameters():,}; config: d_embed={model.config.d_embed}, "
      f"d_hidden={model.config.d_hidden}, attention={model.config.attention}")
""")

code(r"""
assert [len(s) for s in sources] == [4, 12, 30] and src_mask.sum(-1).tolist() == [5, 13, 31]
assert memory.shape == (3, 31, 128) and C.shape == (3, 128)
assert model.config.d_embed == 64 and model.config.d_hidden == 128 and model.config.attention is None
assert torch.all(memory[0, 5:] == 0)                                  # padded positions hold no state
_, last = model.encoder(model.src_embed(src), src_mask.sum(-1))
torch.testing.assert_close(C, last)                                   # C = the GRU's final states
""", tags=["remove-cell"])

md(r"""
Now the claim that matters: **the decoder sees the source only through $C$**. We replace every encoder state by
random numbers, except the two halves that $C$ is read from ($\overrightarrow{h}_m$ and $\overleftarrow{h}_1$), and let
the decoder score the correct reversed target of each sentence (teacher forcing). If anything else reached the
decoder, its output would change:
""")

code(r"""
half = memory.size(-1) // 2
rows, last_token = torch.arange(3), src_mask.sum(-1) - 1
scrambled = torch.randn(memory.shape)
scrambled[rows, last_token, :half] = memory[rows, last_token, :half]    # keep →h_m
scrambled[:, 0, half:] = memory[:, 0, half:]                            # keep ←h_1
targets = torch.full((3, 31), PAD_ID)
for row, s in enumerate(sources):
    targets[row, : len(s) + 1] = torch.tensor([1] + s[::-1])           # BOS, then the reversed source
with torch.no_grad():
    logits, _, _ = model.decode(targets, memory, src_mask)
    logits_scrambled, _, _ = model.decode(targets, scrambled, src_mask)
changed = ((scrambled != memory).any(-1) & src_mask).sum().item()
print(f"encoder states changed: {changed} of {src_mask.sum().item()}")
print("largest change of the decoder's output:", (logits - logits_scrambled).abs().max().item())
""")

code(r"""
assert torch.equal(logits, logits_scrambled)
assert changed == src_mask.sum().item() == 49
""", tags=["remove-cell"])

md(r"""
All 49 states were changed (each keeps at most the half that $C$ is read from), and the output is identical to the
last bit: only $C$ gets through. A longer sentence adds states to `memory`, but nothing to what the decoder reads.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 2. Sequential dependency and long paths

### One token after the other

Seed 004 describes the recurrent encoder as a recursive function: to compute the state of *love* in "I love
you", the cell needs the state computed from *I* ("在我们想要计算 love 的时候,RNNCell 需要传入上一个状态"):

```go
func RecurseRNN(prevState State, tokens []string, t int) State {
    if t == len(tokens) {
        return prevState
    }
    currentState := RNNCell(prevState, tokens[t])
    return RecurseRNN(currentState, tokens, t+1)
}
```

The same function in Python, with the forward GRU of the trained encoder as `RNNCell` (a `GRUCell` holding the
encoder's forward weights), run on the 12-token source of §1:
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
gru = model.encoder.rnn                                   # nn.GRU(64, 64, bidirectional=True)
cell = nn.GRUCell(gru.input_size, gru.hidden_size)
with torch.no_grad():                                     # the forward direction's weights (suffix _l0)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(cell, name).copy_(getattr(gru, f"{name}_l0"))
calls = 0


def rnn_cell(prev_state, token):
    global calls
    calls += 1
    return cell(model.src_embed(torch.tensor([token])), prev_state)


def recurse_rnn(prev_state, tokens, t):                    # seed 004's RecurseRNN, line by line
    if t == len(tokens):
        return prev_state
    current_state = rnn_cell(prev_state, tokens[t])
    return recurse_rnn(current_state, tokens, t + 1)


tokens = sources[1] + [EOS_ID]                             # 12 symbols and EOS
with torch.no_grad():
    h_m = recurse_rnn(torch.zeros(1, gru.hidden_size), tokens, 0)
gap = (h_m[0] - C[1, :half]).abs().max().item()
print(f"{calls} sequential calls; largest difference from →h_m in C: {gap:.1e}")
""")

code(r"""
assert calls == 13 and gap < 1e-5
""", tags=["remove-cell"])

md(r"""
Thirteen calls, each waiting for the one before: $m$ tokens cost $m$ sequential steps however many cores the
machine has. Seed 004 calls this the **span** (串行步数, the number of steps that must run one after the other), as
opposed to the **work** (总计算量, the total arithmetic) and the **wall-clock** time. A recurrent network's span
grows linearly with the sentence; self-attention's is constant ({doc}`self_attention`). Seed 004 compares the RNN
with a linked list, where reaching an element means walking from the start, and attention with a hash map that
reaches any element in one step.

### Long paths lose information

Seed 003 draws the encoder–decoder for "The dog chased the cat" → "狗 追了 猫" (*dog chased cat*) as one chain: the
encoder reads the five English words, hands the context vector to the decoder, and the decoder writes the three
Chinese words one after the other:

```text
The → dog → chased → the → cat → [context vector] → 狗 → 追了 → 猫
```

Count the steps on the way from source word $x_j$ to target word $y_i$. The encoder applies $E$ to $x_j$ at step
$j$ and then at steps $j + 1, \dots, m$ until $C = h_m$: $m - j + 1$ steps. In seed 003's chain the decoder starts
from $C$ and applies $D$ $i$ times to reach $y_i$. The **path length** is

$$
L(j, i) = (m - j + 1) + i .
$$

Seed 004 estimates what long paths cost: "假设每一层卷积都能保留 90% 的信息,那么 10 层之后就只剩下 0.9¹⁰ = 34% 了"
(*suppose every convolution layer keeps 90% of the information; after 10 layers only 0.9¹⁰ = 34% is left*). The
seed makes the argument for stacked convolutions, which need more layers to connect words farther apart; a
recurrent network is the extreme case, with one step per word. With the same assumption, each step on the path
keeping 90%, the share of $x_j$ that reaches $y_i$ is $0.9^{L(j,i)}$:
""")

code(r"""
source_words, target_words = ["The", "dog", "chased", "the", "cat"], ["狗", "追了", "猫"]
m = len(source_words)
path = np.array([[(m - j + 1) + i for j in range(1, m + 1)] for i in range(1, len(target_words) + 1)])
print("path lengths L(j, i), one row per target word:", path, sep="\n")
plot_attention(KEEP ** path, x_labels=source_words, y_labels=target_words, vmin=0, vmax=1, cmap="Blues",
               xlabel="source word x_j", ylabel="target word y_i",
               title="Information left after the path, 0.9^L (seed 003's example)")
""")

code(r"""
assert path[0, 0] == 6 and path[2, 4] == 4 and path.max() == path[2, 0] == 8 and path.min() == path[0, 4] == 2
assert round(KEEP ** 6, 2) == 0.53 and round(KEEP ** 8, 2) == 0.43 and round(KEEP ** 4, 2) == 0.66
assert round(KEEP ** 2, 2) == 0.81
""", tags=["remove-cell"])

md(r"""
*The* reaches *狗* after 6 steps ($0.9^6 = 0.53$) and *猫* after 8 ($0.9^8 = 0.43$); the closest pair is *cat* and
*狗*, 2 steps apart, although *猫* is the word that translates *cat* (4 steps, $0.9^4 = 0.66$). The path lengths
follow the order in which the networks read and write, not which words belong together. Sutskever et al. (2014)
noticed this and fed the source sentence in **reversed** order, which brings the first source words close to the
first target words (an exercise below counts the effect). With attention, every target word reads every source
state directly: $x_j \to h_j \to s_i$, two steps for every pair.

How much is left over longer distances? The seed's own number first:
""")

code(r"""
print(f"0.9^10 = {KEEP ** 10:.4f}")
distance = np.arange(1, 51)
plot_curves({"recurrent network: L = distance": (distance, KEEP ** distance),
             "attention: L = 2": (distance, np.full(distance.shape, KEEP ** 2))},
            xlabel="steps between two words", ylabel="share of information left",
            title="Seed 004's estimate: 0.9 kept per step")
""")

code(r"""
assert f"{KEEP ** 10:.4f}" == "0.3487" and round(100 * KEEP ** 10) == 35 and int(100 * KEEP ** 10) == 34
assert round(100 * KEEP ** 30, 1) == 4.2 and round(100 * KEEP ** 50, 1) == 0.5
""", tags=["remove-cell"])

md(r"""
:::{note}
$0.9^{10} = 0.3487$, which rounds to **35%**; seed 004 writes 34% (the digits cut off rather than rounded).
:::

Over 30 steps $0.9^{30} = 4.2\%$ is left, over 50 steps $0.5\%$. The 90% is a thought experiment, not a property
of real networks: a GRU's or LSTM's gates can carry a piece of information through many steps unchanged, which
is what they were designed for (seed 000: gating "在一定程度上缓解了问题", *eases the problem to some extent*). What
no gate can change is that everything the decoder learns about the source must fit into the fixed $C$. The
experiment measures what that costs.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 3. Experiment 1: reversing random sequences

The cleanest test of how much an encoder–decoder remembers is a task with nothing to understand and nothing to
guess: **reverse a random sequence**. The symbols are drawn uniformly from an alphabet of 20, lengths from 4 to 30;
the target is the source backwards. Every symbol of the source must reach the output, and no symbol can be
predicted from the others. `lib.seq2seq.sequence_task` makes the pairs (symbols are token ids 4 to 23; we print
them as the letters a to t):
""")

code(r"""
def letters(ids):
    return "".join(chr(ord("a") + t - 4) for t in ids)


for source, target in sequence_task(3, 4, 30, NUM_SYMBOLS, seed=SEED):
    print(f"{len(source):2d}  {letters(source):30s} → {letters(target)}")
""")

code(r"""
examples = sequence_task(3, 4, 30, NUM_SYMBOLS, seed=SEED)
assert all(t == s[::-1] and 4 <= len(s) <= 30 and all(4 <= x < 24 for x in s) for s, t in examples)
""", tags=["remove-cell"])

md(r"""
`reversal_experiment(None)` trained the fixed-vector model of §1 on 20,000 such pairs for 600 optimiser steps
(batches of about 2,000 tokens) and then reversed 1,000 fresh test sequences greedily. A step budget, unlike a time
budget, gives the same model on every machine of the same kind; a different CPU or number of threads changes the
last digits of the arithmetic and so the model a little, which is why the numbers below are stated roughly. The
validation loss was measured every few seconds of training, so its points fall at different steps on different
machines:
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
first, final = fixed.history[0], fixed.history[-1]
print(f"validation loss {first['val_loss']:.2f} at step {first['step']} (the first measurement), "
      f"{final['val_loss']:.2f} at step {final['step']}")
plot_curves({"validation loss": ([h["step"] for h in fixed.history], [h["val_loss"] for h in fixed.history])},
            xlabel="optimiser step", ylabel="cross-entropy (nats)", title="Fixed-vector model, reversal task")
""")

code(r"""
assert fixed.steps == 600 and fixed.settings["max_len"] == 30 and fixed.settings["min_len"] == 4
assert final["step"] == 600 and final["val_loss"] < min(1.6, first["val_loss"] - 0.5)
import lib.seq2seq
assert "sequence_task(20_000," in inspect.getsource(lib.seq2seq._train_reversal)  # "20,000 such pairs"
assert "max_tokens=2000" in inspect.getsource(lib.seq2seq._train_reversal)        # "batches of about 2,000 tokens"
""", tags=["remove-cell"])

md(r"""
### Accuracy by length

Two measures, per source length: **token accuracy**, the share of target positions predicted correctly (a missing
or extra token counts as wrong), and **sequence accuracy**, the share of sequences reversed without a single error.
A model that guesses uniformly gets a token right with probability $1/20 = 0.05$.
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
acc = fixed.accuracy
print("length  token  sequence  count")
for n, tok, seq, count in zip(acc.lengths, acc.token, acc.sequence, acc.count):
    print(f"{n:6d}  {tok:5.2f}  {seq:8.2f}  {count:5d}")
""")

code(r"""
chance = 1 / NUM_SYMBOLS
plot_curves({"token accuracy": (acc.lengths, acc.token),
             "sequence accuracy": (acc.lengths, acc.sequence),
             "chance (1/20)": (acc.lengths, [chance] * len(acc.lengths))},
            xlabel="sequence length n", ylabel="accuracy", figsize=(6, 3.6),
            title="Reversing random sequences through one vector C")
""")

code(r"""
token = dict(zip(acc.lengths, acc.token))
sequence = dict(zip(acc.lengths, acc.sequence))
assert acc.lengths == list(range(4, 31)) and sum(acc.count) == 1000
mean_token = lambda lo, hi: np.mean([token[n] for n in range(lo, hi + 1)])
# averages over a few lengths: the model (hence each length's accuracy) changes a little with the number of
# CPU threads that trained it; these averages and the claims below hold for every model we trained
assert min(token[n] for n in (4, 5, 6)) > 0.85 and token[4] > 0.95 and sequence[4] > 0.9
assert abs(mean_token(4, 6) - 0.95) < 0.05 and abs(mean_token(10, 14) - 0.42) < 0.06
assert abs(mean_token(25, 30) - 0.2) < 0.05
assert np.mean([token[n] for n in (28, 29, 30)]) < 0.3                                     # brief: < 0.4 at the longest
assert all(sequence[n] == 0 for n in range(15, 31))
assert all(token[n] < 0.4 for n in range(15, 31)) and all(token[n] > chance for n in acc.lengths)
assert chance == 0.05
""", tags=["remove-cell"])

md(r"""
The model is nearly perfect on the shortest sequences (token accuracy about 0.95 on average over lengths 4 to 6,
and almost every length-4 sequence is reversed without an error). Then it collapses: about 0.4 over lengths 10 to
14, about 0.2 over lengths 25 to 30, and no sequence of 15 symbols or more comes out without an error. Nothing about the task gets
harder with length except one thing: there is more to remember, and it must all pass through the same 128
numbers.

### Where the errors are

Which symbols survive? We decode the 1,000 test sequences again (the same greedy decoding as the table above)
and measure the accuracy at each target position, for three lengths:
""")

code(r"""
test_pairs = sequence_task(1000, 4, 30, NUM_SYMBOLS, seed=SEED + 2)   # the experiment's test set
outputs = []
for start in range(0, len(test_pairs), 200):                          # as accuracy_by_length batches them
    chunk = test_pairs[start:start + 200]
    width = max(len(s) for s, _ in chunk) + 1
    batch = torch.full((len(chunk), width), PAD_ID)
    for row, (s, _) in enumerate(chunk):
        batch[row, : len(s) + 1] = torch.tensor(s + [EOS_ID])
    outputs += greedy_decode(model, batch, max_len=width + 5)


def correct_matrix(length):
    # (sequences of this length, length): 1 where output position i equals target position i
    return np.array([[float(i < len(out) and out[i] == target[i]) for i in range(length)]
                     for (source, target), out in zip(test_pairs, outputs) if len(source) == length])


by_position = {n: correct_matrix(n).mean(0) for n in (6, 12, 20, 30)}
plot_curves({f"length {n}": (np.arange(1, n + 1), by_position[n]) for n in by_position},
            xlabel="target position i (i = 1: the source's last symbol)", ylabel="token accuracy",
            figsize=(6, 3.6), title="Accuracy at each output position")
""")

code(r"""
recomputed = [correct_matrix(n) for n in acc.lengths]
assert all(len(c) == k for c, k in zip(recomputed, acc.count))
# the positional accuracy agrees with the experiment's token accuracy where output and target lengths match
assert abs(np.mean([c.mean() for c in recomputed]) - np.mean(acc.token)) < 0.02
p30 = by_position[30]
assert p30[:3].mean() > 0.5 and p30[9:].mean() < 0.15 and p30[:5].mean() > 3 * p30[9:].mean()
assert by_position[20][:3].mean() > 0.5 and by_position[20][9:].mean() < 0.15
assert by_position[6].min() > 0.75
assert by_position[20][-5:].mean() < 0.25 and by_position[30][-5:].mean() < 0.25
""", tags=["remove-cell"])

md(r"""
For the longer sequences the picture is the same. The first few outputs, which are the **last symbols the encoder read**,
are mostly right: above 50% for the first three positions of length-20 and length-30 sequences. From about the
tenth position on, accuracy sits below 15%, close to the 5% of a blind guess. The forward GRU's state keeps the
recent symbols and overwrites the older ones, and the decoder, which can consult nothing but $C$, reproduces what
survived and then guesses. The backward half of $C$, $\overleftarrow{h}_1$, read the source's *first* symbols last
and could have served the end of the target, but the last five positions of length-20 and length-30 outputs are
right less than 25% of the time: within 600 steps the model has made little use of it.

### How many bits get through?

A random sequence of $n$ symbols out of 20 holds $n \log_2 20 \approx 4.32\,n$ bits: 17 bits at length 4, 130 bits
at length 30. How many of them reach the output? The token accuracy gives a lower bound. If a symbol is predicted
wrongly with probability $p$, Fano's inequality (Cover and Thomas 2006, §2.10) says that the output still carries
at least $\log_2 20 - H_2(p) - p \log_2 19$ bits about it, where $H_2(p) = -p \log_2 p - (1-p) \log_2 (1-p)$; for a
sequence of independent symbols the bounds add up:

$$
I(\text{source}; \text{output}) \;\ge\; n \left[\log_2 20 - H_2(p) - p \log_2 19\right], \qquad p = 1 - \text{token accuracy}.
$$

Here $p$ is the error rate averaged over the positions; the bracket is convex in $p$, so using the average instead of
each position's own rate can only lower the bound.
""")

code(r"""
def fano_bits(accuracy, n, num_symbols=NUM_SYMBOLS):
    # a lower bound on the bits a length-n output carries about its source (0 when the bound is negative)
    p = 1 - accuracy
    h2 = 0.0 if p in (0.0, 1.0) else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
    return max(0.0, n * (math.log2(num_symbols) - h2 - p * math.log2(num_symbols - 1)))


bits_in = [n * math.log2(NUM_SYMBOLS) for n in acc.lengths]
bits_out = [fano_bits(a, n) for a, n in zip(acc.token, acc.lengths)]
print(f"log2(20) = {math.log2(NUM_SYMBOLS):.2f} bits per symbol; a length-30 sequence holds {bits_in[-1]:.1f} bits")
print(f"C holds {model.config.d_hidden} float32 numbers = {model.config.d_hidden * 32} bits of storage")
plot_curves({"bits in the source, n·log2 20": (acc.lengths, bits_in),
             "bits that reach the output (lower bound)": (acc.lengths, bits_out)},
            xlabel="sequence length n", ylabel="bits", figsize=(6, 3.6),
            title="Information in the sequence vs information delivered")
""")

code(r"""
peak = int(np.argmax(bits_out))
assert f"{math.log2(20):.2f}" == "4.32" and round(4 * math.log2(20)) == 17 and round(30 * math.log2(20)) == 130
assert f"{bits_in[-1]:.1f}" == "129.7" and model.config.d_hidden * 32 == 4096
assert 18 < bits_out[peak] < 28 and acc.lengths[peak] <= 9                      # "20 to 25 bits", reached early
assert math.floor(18 / math.log2(20)) == 4 and math.floor(28 / math.log2(20)) == 6
assert bits_out[-1] < 10 and all(b < 12 for b in bits_out[acc.lengths.index(15):])
assert math.floor(4096 / math.log2(20)) == 947 and 4 < 20 / math.log2(20) < 5
""", tags=["remove-cell"])

md(r"""
The bound peaks at about 20 to 25 bits, reached at a length below 10: the information in 4 to 6 random symbols,
which is where the accuracy curves bend. For longer sequences it delivers *less*, under 10 bits at length 30, because the
symbols it has to remember crowd each other out of the state. The source's information grows in a straight line;
what the vector delivers does not grow at all.

It is not the raw storage that runs out. $C$ is 128 `float32` numbers, 4,096 bits, enough in principle for 947
random symbols. What runs out is what a recurrent network learns to write into a fixed vector and read back: an
encoding that survives 30 GRU updates on one side and is decoded one symbol at a time on the other. A bigger vector
and a longer training budget move the bend to longer sequences; they cannot remove it, because for any fixed
size of $C$ there are sentences with more to say. Bahdanau et al. (2015, Fig. 2) show exactly this for translation,
and the next chapter trains the attention model on this same task.

### Explore: the outputs of one length

Each row below is one test sequence of length 12, each column a target position; green marks a correct symbol. The
first rows are printed as letters.
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
def reversal_view(length=SHOW_LENGTH, examples=3):
    rows = [k for k, (source, _) in enumerate(test_pairs) if len(source) == length]
    for k in rows[:examples]:
        target, out = test_pairs[k][1], outputs[k]
        marks = "".join("·" if i < len(out) and out[i] == target[i] else "^" for i in range(length))
        print(f"target {letters(target)}\noutput {letters(out)}\n       {marks}   (^ = wrong)")
    return plot_attention(correct_matrix(length), x_labels=[str(i) for i in range(1, length + 1)],
                          cmap="RdYlGn", vmin=0, vmax=1, annotate=False, colorbar=False,
                          xlabel="target position i", ylabel="test sequence",
                          title=f"Length {length}: correct (green) and wrong (red) outputs")


reversal_view(SHOW_LENGTH)
""")

md(r"""
Comparing position by position is strict: when the model skips or repeats a symbol, every later symbol is shifted and
counts as wrong even where it is the right symbol, so the symbols themselves survive a little better than their order.
(The bound on the bits that get through stays valid: it holds for any way of reading the output.) In a running
notebook, the cell below lets you pick another length; press **Draw** to update the figure.
""")

code(r"""
from ipywidgets import IntSlider, interact_manual

_ = interact_manual.options(manual_name="Draw")(
    lambda length: display(reversal_view(length)),
    length=IntSlider(value=SHOW_LENGTH, min=4, max=30, description="length"),
)
""", tags=["nbval-ignore-output", "remove-output"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 4. Experiment 2: German→English on Multi30k

Does the bottleneck matter for real sentences? The book ships a fixed-vector model, `models/de-en-rnn-fixed`,
trained on Multi30k's 29,000 German–English caption pairs (Elliott et al. 2016) with the book's tokenizer and
training loop: the same `Seq2Seq` class, bigger (256-dimensional embeddings and states), trained for 1,500
optimiser steps of about 3,000 tokens each on one CPU thread. `results.json` records the command that made it, and
`history.json` the validation loss once a minute:
""")

code(r"""
run = load_run(FIXED_RUN)
fixed_mt = run.model
print(run.results["command"])
print(f"{run.results['steps']} steps, {run.results['minutes']:.1f} minutes of training; "
      f"{fixed_mt.num_parameters():,} parameters; attention = {run.config.attention}")
plot_curves({"validation loss": ([h["minutes"] for h in run.history], [h["val_loss"] for h in run.history])},
            xlabel="training minutes", ylabel="cross-entropy (nats)", title="Fixed-vector model, Multi30k de→en")
""")


code(r"""
assert run.config.attention is None and run.config.d_embed == 256 and run.config.d_hidden == 256
assert run.train_config.max_tokens == 3000 and run.train_config.max_steps == 1500
gaps = np.diff([h["minutes"] for h in run.history])
assert len(run.history) == 27 and np.all(np.abs(gaps - 1) < 0.1)                 # "once a minute"
assert len(load_multi30k("train")) == 29_000
assert run.results["steps"] == 1500 and run.results["threads"] == 1 and round(run.results["minutes"]) == 27
assert run.history[-1]["val_loss"] < run.history[-2]["val_loss"] < run.history[0]["val_loss"] - 4
""", tags=["remove-cell"])

md(r"""
We translate the 1,000 sentences of the test set (`test_2016_flickr`) greedily, in batches of similar length, and
score them with sacreBLEU against the one reference translation each sentence has:
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
test = load_multi30k("test_2016_flickr")
sources, references = [de for de, _ in test], [en for _, en in test]
start = time.perf_counter()
hypotheses = translate(fixed_mt, run.tokenizer, sources)          # greedy decoding, 100 sentences per batch
print(f"translated {len(sources):,} sentences in {time.perf_counter() - start:.1f} s")
""")

code(r"""
bleu = corpus_bleu(hypotheses, references)
print(bleu)
print(f"n-gram precisions (%): {', '.join(f'{p:.1f}' for p in bleu.precisions)}; "
      f"brevity penalty {bleu.brevity_penalty:.2f}")
print(f"recorded by the training run: {run.results['test_bleu_greedy']}")
""")

code(r"""
transformer = json.loads((Path(SHIPPED_MODEL) / "results.json").read_text())
transformer_bleu = transformer["test_bleu_greedy"]
assert transformer["minutes"] == 40 and transformer["threads"] == 2
attention_run = json.loads((FIXED_RUN.parent / "de-en-rnn-attention" / "results.json").read_text())
assert attention_run["steps"] == 1500 and attention_run["command"].replace("additive", "none").split("--out")[0] \
    == run.results["command"].split("--out")[0]
assert f"{attention_run['test_bleu_greedy']:.1f}" == "26.4"
assert len(test) == 1000 and abs(bleu.score - run.results["test_bleu_greedy"]) < 0.05
assert f"{bleu.score:.1f}" == "14.8" and round(bleu.precisions[0]) == 48 and bleu.brevity_penalty == 1.0
assert transformer_bleu == 36.79 and round(transformer_bleu / bleu.score, 1) == 2.5
""", tags=["remove-cell"])

md(r"""
A test BLEU of 14.8: about half of the words it writes (48%) also occur in the reference, few of its longer n-grams
do. For scale, the Transformer that ships with the book, `models/de-en`, reaches 36.8 greedy after 40 minutes on two
cores, 2.5 times as much. That is not a fair comparison (a different architecture, budget and number of threads).
The fair one is the same recurrent model with attention, trained with the same command for the same 1,500 steps:
it reaches 26.4 (`models/de-en-rnn-attention`), and the next chapter looks at it closely.

### BLEU by source length

If the fixed vector is a bottleneck, long sentences should suffer most. We group the test sentences by the number
of words in the German source and compute BLEU for each group, as Cho et al. (2014b) and Bahdanau et al. (2015,
Fig. 2) did:
""")

code(r"""
lengths = [len(de.split()) for de in sources]
buckets = bleu_by_length(hypotheses, references, lengths, LENGTH_EDGES)
print("source words  sentences   BLEU  brevity penalty")
for b in buckets:
    print(f"{b.label:>12}  {b.count:9d}  {b.bleu.score:5.2f}  {b.bleu.brevity_penalty:15.2f}")
mean_length = [np.mean([n for n in lengths if b.low <= n <= b.high]) for b in buckets]
plot_curves({"fixed-vector GRU": (mean_length, [b.bleu.score for b in buckets])},
            xlabel="source length in words (mean of the bucket)", ylabel="BLEU",
            title="Multi30k test BLEU by source length")
""")

code(r"""
scores = [round(b.bleu.score, 1) for b in buckets]
assert [b.label for b in buckets] == ["1–7", "8–10", "11–13", "14–17", "18+"]
assert [b.count for b in buckets] == [172, 356, 264, 157, 51] and max(lengths) == 30
assert scores == [17.1, 17.0, 14.7, 12.5, 10.0], scores
assert all(b.bleu.brevity_penalty == 1.0 for b in buckets)
assert round(100 * (1 - buckets[-1].bleu.score / buckets[0].bleu.score)) == 41
""", tags=["remove-cell"])

md(r"""
BLEU falls from 17.1 for sentences of up to 7 words to 10.0 for the 51 sentences of 18 words or more, 41% lower. The
brevity penalty is 1.00 in every bucket: the model does not write shorter translations of longer sentences; it
writes translations of the right length with less of the right content. Here are the first four test sentences
(not chosen) and the longest one, 30 words:
""")

code(r"""
longest = int(np.argmax(lengths))
for k in [0, 1, 2, 3, longest]:
    print(f"[{k}] {lengths[k]} words\n  de:   {sources[k]}\n  ref:  {references[k]}\n  out:  {hypotheses[k]}\n")
""")

code(r"""
assert longest == 959 and lengths[longest] == 30
assert hypotheses[0] == "A man in a hat and a hat is working on the street."
assert hypotheses[2] == "A girl in a pink shirt is getting ready to a man in a pool."
assert hypotheses[1].startswith("A ") and hypotheses[3].startswith("Five people in") and "boat" in hypotheses[3]
out = hypotheses[longest]
assert out.startswith("A man in a") and "stage" in out and out.endswith("in the background.")
assert not any(word in out for word in ("guitar", "singer", "striped", "pants"))
""", tags=["remove-cell"])

md(r"""
The outputs read like captions, and their beginnings often match: *A man in a …*, *Five people in …*. Then the
content drifts away from the source: the orange hat becomes "a hat and a hat", the girl breaking a board with a kick
is "getting ready to a man in a pool", the snowmobiles become a boat. In the longest sentence the model keeps the
man, the stage and "in the background" and loses the guitar, the singer and the striped trousers.

Be careful with what these numbers can carry. The model was trained for 1,500 steps (27 minutes on one thread of a
shared two-core machine), far from convergence: the validation loss in the curve above is still falling, so part of
its weakness is just too little training. The fall of BLEU with length is real in this test set, but long sentences
are also harder for every model: they have more rare words and more structure to get right. The evidence that the
*vector* is the problem is the comparison with a model that has the same budget and the same parts but no fixed
vector (26.4 against 14.8), and that is the next chapter's experiment. Experiment 1, where length is the only thing
that changes, isolates the bottleneck more cleanly.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 5. Why the fixed vector is a bottleneck

Back to seed 000's three problems, with what this chapter measured:

- **The information-compression bottleneck** (信息压缩瓶颈). Everything the decoder knows about the source is $C$:
  §1 replaced every other encoder state by noise and the output did not change by a single bit. $C$ has the same size
  for 4 symbols and for 30, while the information in a random sequence grows as $4.32\,n$ bits. The reversal
  experiment shows the result: about 20 to 25 bits get through, the content of 4 to 6 symbols, and the accuracy collapses
  beyond that length (the accuracy-by-length figure of §3).
- **Long-distance dependencies** (长距离依赖). Information travels along the recurrence: from $x_j$ to $y_i$ it passes
  $m - j + 1 + i$ steps in seed 003's chain, and seed 004's "0.9 per step" leaves $0.9^{10} \approx 35\%$ after ten.
  The reversal model keeps the last symbols it read and loses the older ones (the by-position figure).
- **Insufficient selectivity** (选择性不足). Every decoder step receives the same $C$, whether it is writing the first
  word or the last. To write *猫* the decoder cannot look at *cat*; it can only hope that *cat* is still readable in
  $C$.

The remedy follows from the diagnosis. Keep all the encoder states $h_1, \dots, h_m$, which the encoder computes anyway
and the fixed-vector model throws away, and let every decoder step compute its own context as a weighted sum of them,
with weights that say which source words matter for the word being written:

$$
C_i = \sum_{j=1}^{m} \alpha_{ij} h_j .
$$

The path from any source word to any target word is then two steps long, and the amount of source the decoder can
consult grows with the sentence. That is **attention** (Bahdanau et al. 2015), the subject of the next chapter,
{doc}`bahdanau_attention`, which trains it on the same reversal task and the same Multi30k budget.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Summary

- An encoder–decoder computes $C = E(x_1, \dots, x_m)$ and writes $y_i = D(C, y_1, \dots, y_{i-1})$ (seed 000).
  `lib`'s fixed-vector `Seq2Seq` uses a bidirectional GRU and $C = [\overrightarrow{h}_m; \overleftarrow{h}_1]$, which
  starts the decoder and enters every step. The decoder's output depends on the encoder states only through $C$.
- A recurrent network reads one token after the other (seed 004's `RecurseRNN`): $m$ tokens take $m$ sequential
  steps, and the path from $x_j$ to $y_i$ is $m - j + 1 + i$ steps in seed 003's chain. If each step kept 90%,
  $0.9^{10} = 0.349$ would be left after ten (35%; the seed says 34%).
- Reversing random sequences of 20 symbols, the fixed-vector model (128-number $C$, 600 steps) has token accuracy
  about 0.95 for lengths 4 to 6, about 0.4 for lengths 10 to 14 and 0.2 for lengths 25 to 30; no sequence of 15 or
  more symbols comes out right. It reproduces the last symbols it read and guesses the rest.
- A random sequence holds $n \log_2 20 = 4.32\,n$ bits; by Fano's inequality at most about 20 to 25 bits reach the output,
  far below the 4,096 bits that 128 `float32` numbers could store.
- On Multi30k, a fixed-vector GRU trained for 1,500 steps reaches 14.8 test BLEU (greedy), falling from 17.1 for
  sentences of up to 7 words to 10.0 for 18 words or more; the same model with attention reaches 26.4.
- Attention removes the single vector: each output step reads a weighted sum of all encoder states
  ({doc}`bahdanau_attention`).
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Exercises

Each exercise ends with a call to `check`, which tests your answer and prints ✅ or a hint.
""")

md(r"""
:::{exercise}
:label: bottleneck-summary

Write `summary(memory, mask)` that returns the fixed vector $C = [\overrightarrow{h}_m; \overleftarrow{h}_1]$ of every
sentence in a right-padded batch, without `Seq2Seq.summary`. `memory` is `(batch, seq, d_hidden)`, the forward
direction in the first `d_hidden / 2` features of each state, the backward direction in the rest; `mask` is
`(batch, seq)`, `True` for real tokens; padded positions of `memory` are zero. Careful with the sentences that are
shorter than the batch. Test it on §1's `memory` and `src_mask` (it must give `C`), then finish with
`check("bottleneck_summary", summary)`.
:::
""")

solution("bottleneck-summary", r"""
def summary(memory, mask):
    half = memory.size(-1) // 2
    last = mask.sum(-1) - 1                                          # index of each sentence's last real token
    forward_last = memory[torch.arange(memory.size(0)), last, :half]  # →h_m: not memory[:, -1], which may be padding
    backward_first = memory[:, 0, half:]                              # ←h_1: the backward GRU ends at position 0
    return torch.cat([forward_last, backward_first], dim=-1)


torch.testing.assert_close(summary(memory, src_mask), C)
assert check("bottleneck_summary", summary)  # prints ✅; the assert makes `make test` fail if this solution ever stops passing
""")

md(r"""
:::{exercise}
:label: bottleneck-path-length

Write `path_length(m, j, i, every_step)`: the number of recurrent steps (applications of $E$ or $D$) on the path from
source word $x_j$ to target word $y_i$ of an encoder–decoder with a unidirectional encoder and $C = h_m$, positions
counted from 1. With `every_step=False`, $C$ is only the decoder's first state (seed 003's chain, Sutskever et al.);
with `every_step=True`, $C$ is also an input of every decoder step (seed 000's $y_i = D(C, \dots)$, Cho et al., and
`lib`'s model). Print both matrices for seed 003's example. Finish with
`check("bottleneck_path_length", path_length)`.
:::
""")

solution("bottleneck-path-length", r"""
def path_length(m, j, i, every_step):
    encoder_steps = m - j + 1                     # E reads x_j at step j, then steps j + 1 … m lead to C = h_m
    decoder_steps = 1 if every_step else i        # C enters step i directly, or travels through h'_1 … h'_i
    return encoder_steps + decoder_steps


for every_step in (False, True):
    print(f"every_step={every_step}:")
    print(np.array([[path_length(5, j, i, every_step) for j in range(1, 6)] for i in range(1, 4)]))
assert check("bottleneck_path_length", path_length)
""")

md(r"""
With $C$ at every step the decoder's half of the path shrinks to one step, but the encoder's half stays: the first
source word is still $m$ steps away from $C$, and $C$ is still one vector.
""")

md(r"""
:::{exercise}
:label: bottleneck-capacity

Write `max_symbols(bits, num_symbols)`: the length of the longest random sequence over `num_symbols` equally likely
symbols that `bits` bits can store. How many of the reversal task's symbols fit into the 20 to 25 bits that reach
the output in §3, and how many into the 4,096 bits of 128 `float32` numbers? Finish with
`check("bottleneck_capacity", max_symbols)`.
:::
""")

solution("bottleneck-capacity", r"""
def max_symbols(bits, num_symbols):
    return math.floor(bits / math.log2(num_symbols))    # each symbol needs log2(num_symbols) bits; whole symbols only


print(max_symbols(20, NUM_SYMBOLS), max_symbols(25, NUM_SYMBOLS), max_symbols(4096, NUM_SYMBOLS))
assert check("bottleneck_capacity", max_symbols)
""")

md(r"""
20 to 25 bits hold 4 or 5 symbols, and that is where the model's sequence accuracy starts to fall: it reverses more
than 90% of the length-4 sequences without an error, fewer than 90% from length 7 on. The 4,096 bits of storage would
hold 947: the limit is not the storage but what a trained GRU manages to write into it and read back.
""")

code(r"""
assert math.floor(20 / math.log2(20)) == 4 and math.floor(25 / math.log2(20)) == 5
assert sequence[4] > 0.9 and all(sequence[n] < 0.9 for n in range(7, 31))
""", tags=["remove-cell"])

md(r"""
:::{exercise}
:label: bottleneck-reverse-source

Sutskever et al. (2014) fed the source sentence to the encoder **backwards**, $x_m, \dots, x_1$, and gained several
BLEU points. Using seed 003's chain, compute the path lengths of "The dog chased the cat" → "狗 追了 猫" with the
reversed source. Which pairs get closer, which farther, and what happens to the average path length? Why can this
trick help, and why does it not remove the bottleneck?
:::

:::{solution} bottleneck-reverse-source
:class: dropdown

Reversed, $x_j$ is read at encoder step $m - j + 1$ and has $j - 1$ more steps to go until $C$, so the path to $y_i$ is
$L = j + i$. *The* → *狗* shrinks from 6 to 2 steps and *cat* → *猫* grows from 4 to 8. The average over all pairs does
not change (the path lengths are only reordered; both average $(m + 1)/2 + (n + 1)/2 = 5$ steps here), but in
English→French, the pair Sutskever et al. used, the first words of a sentence usually translate into the first words
of its translation, so the reversal creates many *short* dependencies at the start of the sentence, which makes the
model easier to train (their own explanation, §3.3). It does nothing about the size of $C$: a long sentence still has
more to say than one vector can carry, and the end of the source is now far from the end of the target.

```python
print(np.array([[j + i for j in range(1, 6)] for i in range(1, 4)]))
```
:::
""")

code(r"""
reversed_path = np.array([[j + i for j in range(1, 6)] for i in range(1, 4)])
assert reversed_path[0, 0] == 2 and reversed_path[2, 4] == 8 and path[0, 0] == 6 and path[2, 4] == 4
assert reversed_path.mean() == path.mean() == (5 + 1) / 2 + (3 + 1) / 2 == 5
""", tags=["remove-cell"])

md(r"""
## References

- Sutskever, I., Vinyals, O. and Le, Q. V. (2014). Sequence to Sequence Learning with Neural Networks. *NeurIPS*.
  §2 (the model), §3.3 (reversing the source sentences).
- Cho, K., van Merriënboer, B., Gulcehre, C., Bahdanau, D., Bougares, F., Schwenk, H. and Bengio, Y. (2014a).
  Learning Phrase Representations using RNN Encoder–Decoder for Statistical Machine Translation. *EMNLP*. §2 (the
  encoder–decoder with $c$ at every decoder step; the GRU).
- Cho, K., van Merriënboer, B., Bahdanau, D. and Bengio, Y. (2014b). On the Properties of Neural Machine Translation:
  Encoder–Decoder Approaches. *SSST-8*. (Translation quality falls with sentence length.)
- Bahdanau, D., Cho, K. and Bengio, Y. (2015). Neural Machine Translation by Jointly Learning to Align and Translate.
  *ICLR*. §2 (RNN encoder–decoder), Fig. 2 (BLEU by sentence length, RNNencdec vs RNNsearch).
- Vaswani, A. et al. (2017). Attention Is All You Need. *NeurIPS*. arXiv:1706.03762. §4 and Table 1 (maximum path
  lengths: O(n) recurrent, O(1) self-attention).
- Cover, T. M. and Thomas, J. A. (2006). *Elements of Information Theory*, 2nd ed. Wiley. §2.10 (Fano's inequality).
- Papineni, K., Roukos, S., Ward, T. and Zhu, W.-J. (2002). BLEU: a Method for Automatic Evaluation of Machine
  Translation. *ACL*. Post, M. (2018). A Call for Clarity in Reporting BLEU Scores. *WMT* (sacreBLEU).
- Elliott, D., Frank, S., Sima'an, K. and Specia, L. (2016). Multi30K: Multilingual English-German Image
  Descriptions. *Workshop on Vision and Language*.
""")

nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, sys.argv[1])
