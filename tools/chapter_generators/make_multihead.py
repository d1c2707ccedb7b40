"""Generate chapters/multihead_attention.ipynb (outputs are filled in by `make execute`).

Usage: python make_multihead.py chapters/multihead_attention.ipynb
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
# Multi-head attention

One attention layer gives every query a single probability distribution over the keys, and returns one
weighted average of the values. But a word has many relations at once: in "Ein Mädchen bricht ein Brett mit
einem Tritt" (*a girl breaks a board with a kick*) the verb *bricht* relates to its subject *Mädchen*, to its
object *Brett* and to the neighbouring words that complete it. Seed 000 puts it this way: a single attention
"can only capture one kind of relation", while language mixes syntactic relations (subject–verb) with semantic
ones (synonyms, coreference). **Multi-head attention** (多头注意力, *duōtóu zhùyìlì*) runs several attentions
side by side, each in its own smaller subspace, and combines their results; seed 001 calls each of these
independent attention computations a "head" (头, *tóu*).

In this chapter you will

1. read the paper's equation and see why the heads are narrower than the model;
2. execute seed 001's worked example (3 tokens, $d_\text{model} = 8$, 2 heads of $d_k = 4$) step by step:
   split, attend, concatenate, project — once with a loop over heads, once with `view`/`transpose`, once
   with `einsum`;
3. read `lib`'s `MultiHeadAttention` and check it against PyTorch's `nn.MultiheadAttention`;
4. show that the number of parameters and the cost do not depend on the number of heads;
5. look at the heads of the trained German→English model of this book and measure what they do.
""")

code(r"""
%matplotlib inline
import inspect
import math

import numpy as np
import torch
from IPython.display import Code, display
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from lib.attention import MultiHeadAttention, padding_mask, scaled_dot_product_attention
from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.data import load_multi30k
from lib.exercises import check
from lib.plots import plot_attention, plot_attention_grid
from lib.tokenize import EOS, encode
from lib.transformer import TransformerConfig
from lib.translate import translation_attention

# The knobs of this chapter.
SEED = 0
N_TOKENS, D_MODEL, NUM_HEADS = 3, 8, 2   # seed 001's worked example
RUN = SHIPPED_MODEL                      # the trained German→English model that ships with the book
SENTENCE = 2                             # which Multi30k test sentence to draw (0 .. 999)
torch.manual_seed(SEED)
torch.set_printoptions(precision=4, sci_mode=False, linewidth=110)
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 1. The equation

Vaswani et al. (2017, §3.2.2) define

$$
\text{MultiHead}(Q, K, V) = \text{Concat}(\text{head}_1, \dots, \text{head}_h)\, W^O,
\qquad \text{head}_i = \text{Attention}(Q W_i^Q,\; K W_i^K,\; V W_i^V),
$$

with one set of projections per head, $W_i^Q, W_i^K \in \mathbb{R}^{d_\text{model} \times d_k}$,
$W_i^V \in \mathbb{R}^{d_\text{model} \times d_v}$, and one output projection
$W^O \in \mathbb{R}^{h d_v \times d_\text{model}}$. $\text{Attention}$ is the scaled dot-product attention
$\text{softmax}(Q K^\top / \sqrt{d_k})\, V$ of the previous chapters. In self-attention $Q$, $K$ and $V$
are all the same input $X$; in cross-attention $Q$ comes from the decoder and $K$, $V$ from the encoder.

The paper uses $h = 8$ heads and $d_k = d_v = d_\text{model} / h = 64$. Each head works in a subspace of
$d_k$ features, and the $h$ head outputs, concatenated, are again $h \cdot d_v = d_\text{model}$ wide, so
$W^O$ maps them back into the model's space and the layer's output has the shape of its input. In the
paper's words: "Multi-head attention allows the model to jointly attend to information from different
representation subspaces at different positions. With a single attention head, averaging inhibits this."
A single softmax must choose one mixture of positions per query; with $h$ heads, one query can take
$h$ different mixtures — for example the previous word in one head and the subject in another — and keep
them apart, each in its own $d_v$ columns of the concatenation, until $W^O$ combines them.
""")

code(r"""
base = TransformerConfig.base(vocab_size=37000)
print(f"paper's base model: d_model = {base.d_model}, h = {base.num_heads}, d_k = d_v = {base.d_k}")
print(f"lib's MultiHeadAttention(512, 8).d_k = {MultiHeadAttention(512, 8).d_k}")
""")

code(r"""
assert base.d_model == 512 and base.num_heads == 8 and base.d_k == 64
assert MultiHeadAttention(512, 8).d_k == 64 and 512 // 8 != 8
""", tags=["remove-cell"])

md(r"""
:::{note}
Seed 001's "some original sentences of the paper" list $h = 8$ and "$d_k = d_v = d_\text{model}/h = 8$".
With the paper's $d_\text{model} = 512$ this is $512 / 8 = 64$, as `lib` computes above; 8 is the number of
heads.
:::
""")

md(r"""
### One head must average

A small constructed experiment makes the paper's "averaging inhibits this" concrete. Five tokens; the queries
and keys encode only positions (one-hot), the values are random "word contents". The middle token wants to
know both its left and its right neighbour. One head can give both neighbours a high score, but then its
output is their *average* — and an average does not say which word was on which side. Two heads, one for the
left neighbour and one for the right, keep them in separate columns. We swap the two neighbours and see
whether the middle token's output notices:
""")

code(r"""
n, sharp = 5, 20.0                                         # sharp: score scale, so each head picks one key
positions = torch.eye(n)                                   # one-hot position of each token
left = torch.diag(torch.ones(n - 1), 1)                    # key j matches query j + 1: "my left neighbour"
right = torch.diag(torch.ones(n - 1), -1)                  # key j matches query j - 1: "my right neighbour"
contents = torch.randn(n, 4, generator=torch.Generator().manual_seed(SEED))
swapped = contents[[0, 3, 2, 1, 4]]                        # the neighbours of token 2 trade places


def middle_output(values, keys):                           # keys: (heads, n, n); output of token 2, heads concatenated
    q = (sharp * positions).expand(len(keys), n, n)
    out, _ = scaled_dot_product_attention(q, keys, values.expand(len(keys), n, 4))
    return out[:, 2].reshape(-1)


one_head = left + right                                    # a single head that looks both ways
two_heads = torch.stack([left, right])
gap_one = (middle_output(contents, one_head[None]) - middle_output(swapped, one_head[None])).abs().max().item()
gap_two = (middle_output(contents, two_heads) - middle_output(swapped, two_heads)).abs().max().item()
print(f"one head : output of the middle token changes by {gap_one:.4f} when its neighbours swap")
print(f"two heads: output of the middle token changes by {gap_two:.4f}")
""")

code(r"""
assert gap_one < 1e-4 and gap_two > 0.5
""", tags=["remove-cell"])

md(r"""
With one head the middle token cannot tell "x y z" from "z y x"; with two heads it can. Real heads are not
built by hand but learnt, and §5 looks at what the heads of a trained model ended up doing.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 2. Seed 001's example, step by step

Seed 001 works through the shapes for $n = 3$ tokens, $d_\text{model} = 8$ and $h = 2$ heads, so that
$d_k = d_v = 8 / 2 = 4$. Its numbers are not given, so we draw the input and the weights at random (seeded).
We keep the seed's convention: a token is a **row** of $X$, and a projection multiplies from the right,
$Q_i = X W_Q^i$.

**Step 1: the weights.** Each head has its own three $8 \times 4$ matrices; $W_O$ is $8 \times 8$.
""")

code(r"""
g = torch.Generator().manual_seed(SEED)
d_k = D_MODEL // NUM_HEADS                                          # 8 / 2 = 4 features per head
X = torch.randn(N_TOKENS, D_MODEL, generator=g)                     # (3, 8): one row per token


def random_weight(rows, cols):
    return torch.randn(rows, cols, generator=g) / math.sqrt(rows)   # scaled so that X @ W stays of size ~1


W_Q = [random_weight(D_MODEL, d_k) for _ in range(NUM_HEADS)]       # W_Q^1, W_Q^2: (8, 4) each
W_K = [random_weight(D_MODEL, d_k) for _ in range(NUM_HEADS)]
W_V = [random_weight(D_MODEL, d_k) for _ in range(NUM_HEADS)]
W_O = random_weight(NUM_HEADS * d_k, D_MODEL)                       # (8, 8)
print("X", tuple(X.shape), "| W_Q^1", tuple(W_Q[0].shape), "| W_O", tuple(W_O.shape))
""")

md(r"""
**Step 2: each head on its own.** Project, score, softmax, weight the values — exactly single-head attention,
but in 4 dimensions instead of 8, so the scores are divided by $\sqrt{d_k} = \sqrt 4 = 2$.
""")

code(r"""
Z_heads, A_heads = [], []
for i in range(NUM_HEADS):
    Q_i, K_i, V_i = X @ W_Q[i], X @ W_K[i], X @ W_V[i]       # (3, 4) each
    scores_i = Q_i @ K_i.T / math.sqrt(d_k)                   # (3, 3): query row, key column
    A_i = torch.softmax(scores_i, dim=-1)                     # (3, 3): each row sums to 1
    Z_i = A_i @ V_i                                           # (3, 4): the head's output
    Z_heads.append(Z_i)
    A_heads.append(A_i)
    print(f"head {i + 1}: Q, K, V {tuple(Q_i.shape)}  scores {tuple(scores_i.shape)}  Z_{i + 1} {tuple(Z_i.shape)}")
    print(f"A_{i + 1} =\n{A_i}")
""")

md(r"""
The two heads look at the same three tokens and distribute their attention differently, because their
projections differ.

**Step 3: concatenate** (拼接, *pīnjiē*). The head outputs are put side by side, column-wise: row $r$ of $Z$ is row $r$ of
$Z_1$ followed by row $r$ of $Z_2$. Writing $(Z_i)_{rc}$ for row $r$, column $c$ of head $i$'s output, the
concatenation is
""")

code(r"""
Z = torch.cat(Z_heads, dim=-1)                                # (3, 8) = Concat(head_1, head_2)
names = [np.array([[f"(Z{i + 1}){r + 1}{c + 1}" for c in range(d_k)] for r in range(N_TOKENS)])
         for i in range(NUM_HEADS)]
print(np.concatenate(names, axis=1))                          # the same concatenation, on the entries' names
print("Z =", Z, sep="\n")
""")

code(r"""
assert Z.shape == (3, 8)
for r in range(N_TOKENS):
    assert torch.equal(Z[r, :4], Z_heads[0][r]) and torch.equal(Z[r, 4:], Z_heads[1][r])
""", tags=["remove-cell"])

md(r"""
:::{note}
Seed 001 prints the concatenated $3 \times 8$ matrix as rows $Z_{11} \dots Z_{14}, Z_{21} \dots Z_{24}$, then
$Z_{21} \dots Z_{24}, Z_{31} \dots Z_{34}$, then $Z_{31} \dots Z_{34}, Z_{41} \dots Z_{44}$: the first index
mixes rows and heads, and row 4 does not exist for $n = 3$. Each row belongs to one token and holds the two
heads' outputs for that token: row $r$ is $[(Z_1)_{r1}, \dots, (Z_1)_{r4}, (Z_2)_{r1}, \dots, (Z_2)_{r4}]$,
as printed above. (The seed's later encoder walk-through, with $d_\text{model} = 4$ and 2 heads of
$d_k = 2$, labels its concatenation this way: head 1 gives columns 1–2, head 2 columns 3–4.)
:::

**Step 4: project.** $O = Z W_O$ mixes the heads' features and returns to $d_\text{model} = 8$ columns:
""")

code(r"""
O = Z @ W_O                                                   # (3, 8): the layer's output, same shape as X
print("O =", O, sep="\n")
""")

md(r"""
### All heads at once: `view` and `transpose`

A loop over heads is clear but slow. Put the per-head matrices side by side,
$W^Q = [W_Q^1 \mid W_Q^2]$ ($8 \times 8$): then one product $X W^Q$ computes every head's queries, and head
$i$'s queries are columns $i \cdot d_k, \dots, (i+1) d_k - 1$ of it. Splitting the heads is a reshape of the
last axis into (heads, $d_k$) followed by a transpose that puts the heads in front, so that the attention
runs for every head in one batched product. Merging (the Concat) undoes it.
""")

code(r"""
Wq, Wk, Wv = (torch.cat(w, dim=1) for w in (W_Q, W_K, W_V))            # (8, 8) each: [W^1 | W^2]


def split(t):                                                           # (3, 8) -> (heads, 3, d_k)
    return t.view(N_TOKENS, NUM_HEADS, d_k).transpose(0, 1)


q, k, v = split(X @ Wq), split(X @ Wk), split(X @ Wv)                   # (2, 3, 4) each
out, weights = scaled_dot_product_attention(q, k, v)                    # lib's core: (2, 3, 4), (2, 3, 3)
merged = out.transpose(0, 1).reshape(N_TOKENS, D_MODEL)                 # (3, 8): the Concat
O_view = merged @ W_O
print("q", tuple(q.shape), "| weights", tuple(weights.shape), "| merged", tuple(merged.shape))
print(f"largest difference from the loop: {(O_view - O).abs().max():.2e}")
""", tags=["nbval-ignore-output"])

code(r"""
assert torch.allclose(q[1], X @ W_Q[1], atol=1e-6)
assert torch.allclose(weights[0], A_heads[0], atol=1e-6) and torch.allclose(weights[1], A_heads[1], atol=1e-6)
assert torch.allclose(merged, Z, atol=1e-6) and torch.allclose(O_view, O, atol=1e-6)
""", tags=["remove-cell"])

md(r"""
### The same with `einsum`

`torch.einsum` names the axes instead of moving them: `n`, `m` are positions, `d` the model's features, `h`
the head, `k` the feature within a head. The last line also shows what "Concat, then $W^O$" means: split
$W^O$ into $h$ blocks of $d_k$ rows, $W^O_i$; then
$\text{Concat}(\text{head}_1, \dots, \text{head}_h)\, W^O = \sum_i \text{head}_i\, W^O_i$ — each head
writes its own contribution into the output, and the contributions are added.
""")

code(r"""
Wq_h, Wk_h, Wv_h = (w.view(D_MODEL, NUM_HEADS, d_k) for w in (Wq, Wk, Wv))   # (d, h, k): column block i = W^i
q_e = torch.einsum("nd,dhk->hnk", X, Wq_h)                                   # (2, 3, 4)
k_e = torch.einsum("nd,dhk->hnk", X, Wk_h)
v_e = torch.einsum("nd,dhk->hnk", X, Wv_h)
a_e = torch.softmax(torch.einsum("hnk,hmk->hnm", q_e, k_e) / math.sqrt(d_k), dim=-1)   # (2, 3, 3)
z_e = torch.einsum("hnm,hmk->hnk", a_e, v_e)                                 # (2, 3, 4): head outputs
O_einsum = torch.einsum("hnk,hkd->nd", z_e, W_O.view(NUM_HEADS, d_k, D_MODEL))   # sum over heads of head_i W^O_i
einsum_gap = (O_einsum - O_view).abs().max().item()
print(f"einsum vs view/transpose: largest difference {einsum_gap:.2e}")
""", tags=["nbval-ignore-output"])

code(r"""
assert einsum_gap < 1e-6
per_head = [z_e[i] @ W_O[i * d_k:(i + 1) * d_k] for i in range(NUM_HEADS)]
assert torch.allclose(sum(per_head), O, atol=1e-6)
""", tags=["remove-cell"])

md(r"""
The three versions — loop, `view`/`transpose`, `einsum` — agree to rounding error (below $10^{-6}$).
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 3. The library's `MultiHeadAttention`

`lib.attention.MultiHeadAttention` is the `view`/`transpose` version. It holds one `nn.Linear` per
projection, `w_q`, `w_k`, `w_v` and `w_o`, each $d_\text{model} \times d_\text{model}$ (the $h$ per-head
matrices side by side), and splits after projecting:
""")

code(r"""
display(Code(inspect.getsource(MultiHeadAttention.split_heads), language="python"))
display(Code(inspect.getsource(MultiHeadAttention.merge_heads), language="python"))
""")

md(r"""
`attend` projects the queries, splits them, calls the single core `scaled_dot_product_attention` for all heads
at once and merges; `forward` first projects and splits the keys and values (a separate step, so that a
decoder can cache them while it generates one token after the other):
""")

code(r"""
display(Code(inspect.getsource(MultiHeadAttention.attend), language="python"))
display(Code(inspect.getsource(MultiHeadAttention.forward), language="python"))
""")

md(r"""
`nn.Linear` stores its weight as `(out_features, in_features)` and computes $x\, W^\top + b$, so our matrices
$W^Q$ go in transposed. With the seed example's weights copied in (and no biases), `lib` gives the same $O$:
""")

code(r"""
mha = MultiHeadAttention(D_MODEL, NUM_HEADS, bias=False).eval()
with torch.no_grad():
    for linear, w in ((mha.w_q, Wq), (mha.w_k, Wk), (mha.w_v, Wv), (mha.w_o, W_O)):
        linear.weight.copy_(w.T)
    O_lib, weights_lib = mha(X[None], X[None], X[None])        # batch of one: (1, 3, 8), (1, 2, 3, 3)
lib_gap = (O_lib[0] - O).abs().max().item()
print(f"lib output {tuple(O_lib.shape)}, weights {tuple(weights_lib.shape)}; largest difference {lib_gap:.2e}")
""", tags=["nbval-ignore-output"])

code(r"""
assert lib_gap < 1e-6 and torch.allclose(weights_lib[0], weights, atol=1e-6)
""", tags=["remove-cell"])

md(r"""
### Agreement with `torch.nn.MultiheadAttention`

PyTorch has its own implementation. It stores $W^Q$, $W^K$, $W^V$ stacked in one `in_proj_weight` of shape
$(3 d_\text{model}, d_\text{model})$, and its padding mask has the *opposite* meaning of `lib`'s:
`key_padding_mask=True` means "ignore this key", while in `lib` `True` means "may attend". We copy the
weights of a `lib` layer of this book's size ($d_\text{model} = 128$, 4 heads) into a torch layer and compare
both outputs and the per-head weights on a batch of two sequences, the second padded from 4 to 7 tokens:
""")

code(r"""
d_model, heads = 128, 4
ours = MultiHeadAttention(d_model, heads).eval()
theirs = nn.MultiheadAttention(d_model, heads, batch_first=True).eval()
with torch.no_grad():
    theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))  # (384, 128)
    theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
    theirs.out_proj.weight.copy_(ours.w_o.weight)
    theirs.out_proj.bias.copy_(ours.w_o.bias)

x = torch.randn(2, 7, d_model)
keep = padding_mask(torch.tensor([7, 4]))                  # (2, 1, 1, 7), True = may attend
with torch.no_grad():
    out_ours, w_ours = ours(x, x, x, mask=keep)
    out_theirs, w_theirs = theirs(x, x, x, key_padding_mask=~keep[:, 0, 0], average_attn_weights=False)
out_gap = (out_ours - out_theirs).abs().max().item()
weight_gap = (w_ours - w_theirs).abs().max().item()
print(f"outputs {tuple(out_ours.shape)}: largest difference {out_gap:.1e}")
print(f"weights {tuple(w_ours.shape)}: largest difference {weight_gap:.1e}")
print("weight on the 3 padded keys of sequence 2:", w_ours[1, :, :, 4:].abs().max().item())
""", tags=["nbval-ignore-output"])

code(r"""
assert out_gap < 1e-5 and weight_gap < 1e-6
assert w_ours[1, :, :, 4:].abs().max() == 0 and w_theirs[1, :, :, 4:].abs().max() == 0
""", tags=["remove-cell"])

md(r"""
Both implementations agree to within $10^{-5}$ on the outputs and $10^{-6}$ on the weights, and both give the
padded keys exactly zero weight. (The library's tests, `tests/test_attention.py`, make the same comparison for cross-attention with a padding mask and for causal self-attention.)
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 4. More heads cost nothing extra

Because the heads split $d_\text{model}$ instead of each getting all of it, the number of heads changes how
the features are grouped, not how many there are:

- **Parameters.** Four $d_\text{model} \times d_\text{model}$ matrices and four bias vectors, whatever $h$:
  $4 d_\text{model}^2 + 4 d_\text{model}$.
- **Cost.** For $n$ tokens the projections take $4 n d_\text{model}^2$ multiply-adds. The scores
  $Q_i K_i^\top$ take $n^2 d_k$ per head, $h \cdot n^2 d_k = n^2 d_\text{model}$ for all heads, and the
  weighted sums the same again. One multiply-add is 2 floating-point operations (FLOPs), so the total is
  $8 n d_\text{model}^2 + 4 n^2 d_\text{model}$ FLOPs — the paper: "the total computational cost is similar to
  that of single-head attention with full dimensionality."

We count both for the paper's $d_\text{model} = 512$ and $n = 100$ tokens; PyTorch's `FlopCounterMode`
records every matrix product that `lib`'s layer runs:
""")

code(r"""
n, d = 100, 512
counts = {}
for h in (1, 2, 4, 8, 16):
    layer = MultiHeadAttention(d, h)
    x = torch.zeros(1, n, d)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        layer(x, x, x)
    counts[h] = (sum(p.numel() for p in layer.parameters()), counter.get_total_flops())
    print(f"h = {h:2d}, d_k = {layer.d_k:3d}: {counts[h][0]:,} parameters, {counts[h][1]:,} FLOPs")
print(f"formulas: 4d² + 4d = {4 * d * d + 4 * d:,} parameters, 8nd² + 4n²d = {8 * n * d * d + 4 * n * n * d:,} FLOPs")
""")

code(r"""
assert all(c == (1_050_624, 230_195_200) for c in counts.values())
assert 4 * d * d + 4 * d == 1_050_624 and 8 * n * d * d + 4 * n * n * d == 230_195_200
assert round(100 * 8 * n * d * d / 230_195_200) == 91
assert sum(p.numel() for p in nn.MultiheadAttention(d, 8).parameters()) == 1_050_624
""", tags=["remove-cell"])

md(r"""
From 1 head of 512 features to 16 heads of 32, the layer keeps its 1,050,624 parameters (PyTorch's
`nn.MultiheadAttention(512, 8)` has the same number) and its 230,195,200 FLOPs for 100 tokens; 91 % of the
FLOPs are the four projections. (Counted FLOPs are the matrix products only; the softmax and the scaling add a
few operations per score. Wall-clock time is a different matter: many small products can run less efficiently
than one large one, which is one reason $d_k$ is rarely made very small.)

Vaswani et al. varied the number of heads at this constant cost (Table 3, rows A): a single head translated
clearly worse than 8 heads, and quality dropped again with too many, very narrow heads.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 5. What the heads of a trained model do

Now a real model: the German→English Transformer that ships with the book (trained on Multi30k in the
capstone chapter: $d_\text{model} = 128$, 4 heads of $d_k = 32$, 3 encoder and 3 decoder layers). We take a
sentence from the Multi30k test set, which the model never saw in training, and draw the encoder's
self-attention: one panel per layer (rows) and head (columns), row = query token, column = key token.
""")

code(r"""
run = load_run(RUN)
model, tokenizer = run.model, run.tokenizer
LAYERS, HEADS = model.config.num_encoder_layers, model.config.num_heads
test_pairs = load_multi30k("test_2016_flickr")
german, reference = test_pairs[SENTENCE]
example = translation_attention(model, tokenizer, german)
print("German:   ", german)
print("reference:", reference)
print("model:    ", example.translation)
print("sub-words:", example.source_tokens)
""")

code(r"""
c = model.config
assert (c.d_model, c.num_heads, c.d_k, c.num_encoder_layers, c.num_decoder_layers) == (128, 4, 32, 3, 3)
assert len(test_pairs) == 1000
attention_params = sum(p.numel() for m in model.modules() if isinstance(m, MultiHeadAttention) for p in m.parameters())
assert attention_params == 9 * (4 * 128 * 128 + 4 * 128) == 594_432 and 4 * 128 * 128 + 4 * 128 == 66_048
""", tags=["remove-cell"])

code(r"""
tokens = example.source_tokens
plot_attention_grid(example.weights.encoder, x_labels=tokens, y_labels=tokens, panel_size=2.4,
                    title=f"Encoder self-attention, test sentence {SENTENCE}")
""")

md(r"""
(Its 9 multi-head attention layers — one per encoder layer, two per decoder layer — hold 9 × 66,048 = 594,432
parameters, by §4's formula with $d_\text{model} = 128$.) German words are split into sub-words by the tokenizer (`▁` marks the start of a word), and the encoder adds
the end token `</s>`. The panels differ: the heads of one layer do not look at the same places. One sentence
can mislead, though, so we measure over the whole test set (1,000 sentences). For every head and every query
token we ask where its **largest** weight goes: to the previous token, to itself, to the next token, or to the
final `</s>`. (A head that spread its weight evenly would pick each of these for only about one query in
$n$, and a test sentence has 15.3 tokens on average.)
""")

code(r"""
PATTERNS = ["previous token", "same token", "next token", "final </s>"]


@torch.no_grad()
def head_patterns(model, sentences, batch_size=100):
    # (layers, heads, 4): share of query rows whose largest weight is on the previous / same / next token /
    # the final </s>. "previous" counts rows 1..n-1; the others count rows 0..n-2 (row n-1 is </s> itself).
    eos = tokenizer.token_to_id(EOS)
    ids = [encode(tokenizer, s)[: model.config.max_len - 1] + [eos] for s in sentences]
    hits = torch.zeros(LAYERS, HEADS, 4)
    rows = torch.zeros(4)
    for start in range(0, len(ids), batch_size):
        chunk = ids[start:start + batch_size]
        width = max(map(len, chunk))
        src = torch.zeros(len(chunk), width, dtype=torch.long)              # 0 = padding
        for r, seq in enumerate(chunk):
            src[r, :len(seq)] = torch.tensor(seq)
        _, _, enc_weights = model.encode(src, need_weights=True)          # per layer (batch, heads, q, k)
        length = torch.tensor([len(seq) for seq in chunk])[:, None, None]   # (batch, 1, 1)
        pos = torch.arange(width)[None, None, :]                           # query position
        real = pos < length
        targets = [(pos - 1, real & (pos >= 1)), (pos, real & (pos < length - 1)),
                   (pos + 1, real & (pos < length - 1)), (length - 1, real & (pos < length - 1))]
        for p, (target, valid) in enumerate(targets):
            rows[p] += valid[:, 0].sum()
        for layer, w in enumerate(enc_weights):
            top = w.argmax(dim=-1)                                          # (batch, heads, q)
            for p, (target, valid) in enumerate(targets):
                hits[layer, :, p] += ((top == target) & valid).sum(dim=(0, 2))
    return hits / rows, sum(map(len, ids)) / len(ids)


shares, mean_len = head_patterns(model, [de for de, _ in test_pairs])
print(f"{len(test_pairs):,} sentences, {mean_len:.1f} tokens on average")
head_names = [f"layer {l}, head {h}" for l in range(LAYERS) for h in range(HEADS)]
plot_attention(shares.reshape(-1, 4), x_labels=PATTERNS, y_labels=head_names, annotate=True, vmax=1.0,
               xlabel="where the largest weight goes", ylabel="", figsize=(6.5, 5.5),
               title="Share of query tokens, 1,000 test sentences")
""")

md(r"""
What the table shows, honestly: this small model's heads have *tendencies*, not the sharp single-purpose
behaviour reported for some heads of large models (Voita et al. 2019; Clark et al. 2019). No head puts its
largest weight on the previous token for even half of the query tokens. The clearest patterns:

- **Layer 0 looks at the token itself.** In the first layer the query token itself is every head's most common
  choice, for 29 % to 33 % of the rows: the first layer mostly keeps and refines each token's own content.
- **Two heads follow the previous token.** Layer 1, head 2 and layer 2, head 1 pick the previous token for
  35 % and 33 % of the rows — about five times as often as a head that spread its weight evenly would (one row
  in 15.3 on average), and clearly more often than any other head (at most 23 %).
- **One head looks at the end token.** Layer 1, head 3 gives its largest weight to the final `</s>` for 15 %
  of the rows; every other head does so for at most 5 %. Heads of BERT are known to park their attention on the
  separator token `[SEP]` when they have nothing specific to look for (Clark et al. 2019); this head may use
  `</s>` in the same way.
- **The heads of one layer differ.** In layer 1 the previous-token share ranges from 9 % (head 0) to 35 %
  (head 2): the heads do not duplicate each other, which is what having several of them is for.
""")

code(r"""
prev, same, nxt, eos = shares.unbind(-1)                          # each (layers, heads)
pct = lambda x: round(100 * float(x))
assert abs(mean_len - 15.3) < 0.05
assert prev.max() < 0.5
assert all(shares[0, h].argmax() == 1 for h in range(HEADS))      # layer 0: "same token" is every head's top choice
assert (pct(same[0].min()), pct(same[0].max())) == (29, 33)
assert (pct(prev[1, 2]), pct(prev[2, 1])) == (35, 33)
others = [prev[l, h] for l in range(LAYERS) for h in range(HEADS) if (l, h) not in {(1, 2), (2, 1)}]
assert pct(max(others)) == 23 and min(prev[1, 2], prev[2, 1]) * mean_len > 4.5   # "about five times"
assert pct(eos[1, 3]) == 15 and pct(max(eos[l, h] for l in range(LAYERS) for h in range(HEADS) if (l, h) != (1, 3))) <= 5
assert (pct(prev[1].min()), prev[1].argmin().item(), pct(prev[1].max()), prev[1].argmax().item()) == (9, 0, 35, 2)
""", tags=["remove-cell"])

md(r"""
### Explore: any sentence, layer and head

The function below draws one head's attention for one test sentence: the encoder's self-attention, the
decoder's (causal) self-attention, or the decoder's cross-attention to the source, where the rows are labelled
with the English token each decoder position predicted. First the default view, as on this website:
""")

code(r"""
cross = example.weights.cross[LAYERS - 1][0, 0]                              # (seq_t, seq_s)
aligned = {example.target_tokens[t]: example.source_tokens[int(cross[t].argmax())] for t in range(len(cross))}
assert aligned["▁girl"] == "▁Mädchen" and aligned["▁board"] == "▁Brett" and aligned["▁karate"] == "▁Karate"
""", tags=["remove-cell"])

code(r"""
KINDS = {"encoder self-attention": "encoder", "decoder self-attention": "decoder", "cross-attention": "cross"}


def head_view(sentence=SENTENCE, kind="encoder self-attention", layer=0, head=0):
    ta = translation_attention(model, tokenizer, test_pairs[sentence][0])
    w = getattr(ta.weights, KINDS[kind])[layer][0, head]                       # (seq_q, seq_k)
    decoder_inputs = ["<s>"] + ta.target_tokens[:-1]
    x_labels = {"encoder": ta.source_tokens, "decoder": decoder_inputs, "cross": ta.source_tokens}[KINDS[kind]]
    y_labels = ta.source_tokens if KINDS[kind] == "encoder" else ta.target_tokens
    return plot_attention(w, x_labels=x_labels, y_labels=y_labels, annotate=False,
                          ylabel="query" if KINDS[kind] == "encoder" else "query (the token it predicts)",
                          title=f"sentence {sentence}, {kind}, layer {layer}, head {head}")


head_view(SENTENCE, "cross-attention", LAYERS - 1, 0)
""")

md(r"""
This cross-attention head of the last decoder layer reads the source almost like a dictionary: the rows that
predict *girl*, *karate* and *board* put their largest weight on *Mädchen*, *Karate* and *Brett*.
""")

md(r"""
In a running notebook, the cell below lets you choose a sentence, the kind of attention, a layer and a head;
press **Draw** to update the figure.
""")

code(r"""
from ipywidgets import Dropdown, IntSlider, interact_manual

interact_manual.options(manual_name="Draw")(
    lambda sentence, kind, layer, head: display(head_view(sentence, kind, layer, head)),
    sentence=IntSlider(value=SENTENCE, min=0, max=len(test_pairs) - 1, description="sentence"),
    kind=Dropdown(options=list(KINDS), value="cross-attention", description="attention"),
    layer=IntSlider(value=LAYERS - 1, min=0, max=LAYERS - 1, description="layer"),
    head=IntSlider(value=0, min=0, max=HEADS - 1, description="head"),
);
""", tags=["nbval-ignore-output", "remove-output"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Summary

- $\text{MultiHead}(Q, K, V) = \text{Concat}(\text{head}_1, \dots, \text{head}_h) W^O$: $h$ scaled
  dot-product attentions, each in a subspace of $d_k = d_\text{model} / h$ features (64 in the paper's base
  model), side by side, then one output projection.
- In code the heads are one $d_\text{model} \times d_\text{model}$ projection whose output is reshaped to
  `(batch, heads, seq, d_k)`; the Concat is the inverse reshape. Loop, `view`/`transpose` and `einsum`
  versions agree, and `lib`'s layer equals `torch.nn.MultiheadAttention` with copied weights.
- Concat followed by $W^O$ is a sum over heads of $\text{head}_i W^O_i$.
- Parameters ($4 d_\text{model}^2 + 4 d_\text{model}$) and FLOPs ($8 n d_\text{model}^2 + 4 n^2 d_\text{model}$)
  do not depend on $h$.
- In the trained translation model the heads of one layer attend differently; the clearest patterns are "the token itself"
  (all heads of layer 0), "the previous token" (two heads, about a third of the rows each) and "the final
  `</s>`" (one head) — tendencies, measured over 1,000 test sentences, not rules.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Exercises

Each exercise ends with a call to `check`, which tests your answer against `lib` and prints ✅ or a hint.
""")

md(r"""
:::{exercise}
:label: mha-split-heads

Write `split_heads(x, num_heads)` that turns a tensor of shape `(batch, seq, d_model)` into
`(batch, heads, seq, d_k)`, where head $i$ gets the features $i \cdot d_k, \dots, (i+1) d_k - 1$ of every token
(the columns of $W_i^Q$ in §2). Do not use `lib`. Finish with `check("mha_split_heads", split_heads)`.
:::
""")

solution("mha-split-heads", r"""
def split_heads(x, num_heads):
    batch, seq, d_model = x.shape
    d_k = d_model // num_heads
    return x.view(batch, seq, num_heads, d_k).transpose(1, 2)   # split the features, then heads before positions


assert check("mha_split_heads", split_heads)  # prints ✅; the assert makes `make test` fail if this solution ever stops passing
""")

md(r"""
:::{exercise}
:label: mha-d-k

Write `d_k(d_model, num_heads)` that returns the number of features per head, and raises a `ValueError` when
the heads cannot split $d_\text{model}$ evenly. What does it give for seed 001's worked example, for its encoder
walk-through ($d_\text{model} = 4$, 2 heads), for the paper's base model (512, 8) and big model (1024, 16), and
for this book's model (128, 4)? Finish with `check("mha_d_k", d_k)`.
:::
""")

solution("mha-d-k", r"""
def d_k(d_model, num_heads):
    if d_model % num_heads != 0:
        raise ValueError(f"num_heads ({num_heads}) must divide d_model ({d_model})")
    return d_model // num_heads                   # (8, 2) → 4, (4, 2) → 2, (512, 8) → 64, (1024, 16) → 64, (128, 4) → 32


assert check("mha_d_k", d_k)
""")

md(r"""
:::{exercise}
:label: mha-num-parameters

Write `num_parameters(d_model, num_heads, bias)` that returns the number of trainable parameters of one
multi-head attention layer (four projections; with `bias=True` each has a bias vector), without building the
layer. Finish with `check("mha_num_parameters", num_parameters)`.
:::
""")

solution("mha-num-parameters", r"""
def num_parameters(d_model, num_heads, bias=True):
    weights = 4 * d_model * d_model             # W^Q, W^K, W^V, W^O: h blocks of d_model × d_k side by side
    return weights + (4 * d_model if bias else 0)


assert check("mha_num_parameters", num_parameters)
""")

md(r"""
:::{exercise}
:label: mha-einsum

Write multi-head self-attention with `torch.einsum`: `multihead(x, w_q, w_k, w_v, w_o, num_heads)` takes
`x` of shape `(seq, d_model)` and four `(d_model, d_model)` matrices used as in §2 ($Q = x\, W^Q$, no biases),
and returns the `(seq, d_model)` output. Use no loop over heads. Finish with
`check("mha_einsum", multihead)`.
:::
""")

solution("mha-einsum", r"""
def multihead(x, w_q, w_k, w_v, w_o, num_heads):
    seq, d_model = x.shape
    d_k = d_model // num_heads
    q, k, v = (torch.einsum("nd,dhk->hnk", x, w.view(d_model, num_heads, d_k)) for w in (w_q, w_k, w_v))
    a = torch.softmax(torch.einsum("hnk,hmk->hnm", q, k) / math.sqrt(d_k), dim=-1)
    heads = torch.einsum("hnm,hmk->hnk", a, v)                                    # (heads, seq, d_k)
    return torch.einsum("hnk,hkd->nd", heads, w_o.view(num_heads, d_k, d_model))  # Concat, then W^O


assert check("mha_einsum", multihead)
""")

md(r"""
:::{exercise}
:label: mha-one-head

Section 4 showed that one head of 512 features and 8 heads of 64 cost the same. So why not use 512 heads of one
feature each? Think about what a single score $q \cdot k / \sqrt{d_k}$ can express when $d_k = 1$.
:::

:::{solution} mha-one-head
:class: dropdown

With $d_k = 1$ every score is a product of two numbers, $q_i k_j$. For a fixed query the softmax over $j$ then
only ranks the keys by one number $k_j$, scaled by $q_i$: a query can prefer the keys with the largest $k_j$
(when $q_i > 0$) or the smallest (when $q_i < 0$), and nothing else. A head cannot look for "the previous
word" or "the subject", which needs a comparison in several dimensions. Michel et al. (2019) and Voita et al.
(2019) also found that many heads of a trained model can be removed with little loss, so more and narrower
heads are not automatically better: $d_k$ = 64 with 8 or 16 heads is the usual compromise.
:::
""")

md(r"""
## References

- Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N., Kaiser, Ł. and Polosukhin, I.
  (2017). Attention Is All You Need. *NeurIPS*. arXiv:1706.03762. §3.2.2 (multi-head attention), Table 3
  rows (A) (number of heads).
- Voita, E., Talbot, D., Moiseev, F., Sennrich, R. and Titov, I. (2019). Analyzing Multi-Head Self-Attention:
  Specialized Heads Do the Heavy Lifting, the Rest Can Be Pruned. *ACL*.
- Michel, P., Levy, O. and Neubig, G. (2019). Are Sixteen Heads Really Better than One? *NeurIPS*.
- Clark, K., Khandelwal, U., Levy, O. and Manning, C. D. (2019). What Does BERT Look At? An Analysis of BERT's
  Attention. *BlackboxNLP*.
- Elliott, D., Frank, S., Sima'an, K. and Specia, L. (2016). Multi30K: Multilingual English-German Image
  Descriptions. *Workshop on Vision and Language*.
""")

nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, sys.argv[1])
