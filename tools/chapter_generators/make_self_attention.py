"""Generate chapters/self_attention.ipynb (outputs are filled in by `make execute`).

Usage: python make_self_attention.py chapters/self_attention.ipynb
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
# Self-attention

In Bahdanau attention the decoder asks and the encoder answers: the query is the decoder's state, the keys and
values are the encoder's states of *another* sentence. But the meaning of a word also depends on the words
around it in its *own* sentence. In "Eine Frau verwendet eine Bohrmaschine während ein Mann sie fotografiert"
(*a woman uses a drill while a man photographs her*) the word *sie* means nothing until it is connected to
*Frau*. Seed 000 states the idea of **self-attention** (自注意力, *zì zhùyìlì*) in two lines: queries, keys and
values all come from the same input sequence, and the representation of every position is updated by
interacting with all positions. Seed 004 puts it more vividly: let every word of a sentence scan the other
words of the same sentence and take from them what is most useful to itself (让句子里的每一个词都去扫描同一句里的
其他词，获得对自己最有用的信息). Unlike a convolution, which sees a small window, or a recurrent network, which
passes information one step at a time, one self-attention layer connects every position to every other.

In this chapter you will

1. meet the query, the key and the value, and read attention as a *soft dictionary look-up* (seed 004);
2. compute self-attention step by step in NumPy on seed 001's 我 / 爱 / 机器 / 学习 (*I / love / machine /
   learning*) with $d_\text{model} = 4$, and check it against `lib` and PyTorch;
3. read the score matrix the right way round and mask it;
4. see why the scores are divided by $\sqrt{d_k}$: seed 001's variance argument, then an experiment;
5. look at the self-attention of the book's trained German→English model, including seed 004's sentence
   "The animal didn't cross the street because it was too tired";
6. measure what self-attention costs: $O(n^2 \cdot d)$ time and $O(n^2)$ memory.
""")

code(r"""
%matplotlib inline
import inspect
import math

import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import Code, display
from matplotlib.figure import Figure
from torch.utils.flop_counter import FlopCounterMode

from lib.attention import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention
from lib.checkpoint import SHIPPED_MODEL, load_run
from lib.cost import attention_cost, attention_flops, attention_weight_bytes
from lib.data import load_multi30k
from lib.exercises import check
from lib.plots import plot_attention, plot_attention_grid, plot_curves, plot_mask
from lib.translate import translation_attention

# The knobs of this chapter.
SEED = 0
TOKENS = ["我", "爱", "机器", "学习"]                  # seed 001's example sentence
GLOSS = ["I", "love", "machine", "learning"]          # its English glosses (the labels of the figures)
D_MODEL = D_K = 4                                     # seed 001: "假设这里维度为 4" (suppose the width is 4)
D_KS = [4, 16, 64, 256, 1024]                         # key widths of the √d_k experiment
N_KEYS = 32                                           # keys per softmax row in that experiment
RUN = SHIPPED_MODEL                                   # the trained German→English model of the book
SENTENCE = 24                                         # a Multi30k test sentence (0 .. 999)
COREF_DE = "Das Tier überquerte die Straße nicht, weil es zu müde war."   # seed 004's sentence in German
COREF_EN = "The animal didn't cross the street because it was too tired."  # seed 004's sentence
COST_LENGTHS = [128, 256, 512, 1024, 2048, 4096]      # sequence lengths n of the cost measurement
COST_HEADS, COST_D_K = 4, 64
_ = torch.manual_seed(SEED)
np.set_printoptions(precision=4, suppress=True, linewidth=110)
torch.set_printoptions(precision=4, sci_mode=False, linewidth=110)


def log2_axis(fig, ticks):
    # plot_curves has a linear x axis; the sizes of this chapter double, so use a log axis labelled with them.
    ax = fig.axes[0]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    return fig
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 1. Query, key and value

Seed 000 reads attention as a *query* (查询) process with three parts:

- the **query** $q$ is "the current need or question": what the position that is being computed is looking
  for;
- the **key** $k_j$ is the "identifier" of element $j$, the thing the query is compared with;
- the **value** $v_j$ is the element's actual "content", what is handed back. In Bahdanau attention the value
  is the key itself ($v_j = h_j$); in the Transformer it is a separate linear map, "so that the model can store
  and retrieve information different from what it matches on".

Seed 004 gives a table of examples: the query of 爱 (*love*) could say "I am a verb, I am looking for my
subject"; the keys say "I am a subject / verb / object"; the values are the words' contents, 我 / 爱 / 你. The
query and the key are compared by a dot product, so they must have the same width $d_k$; the value may have
another width $d_v$.

In **self-attention** all three are linear projections of the *same* sequence. Stack its $n$ token vectors as
the rows of $X \in \mathbb{R}^{n \times d_\text{model}}$; then (seeds 000, 002 and 003)

$$
Q = X W^Q, \qquad K = X W^K, \qquad V = X W^V, \qquad
W^Q, W^K \in \mathbb{R}^{d_\text{model} \times d_k},\; W^V \in \mathbb{R}^{d_\text{model} \times d_v},
$$

and the output is the scaled dot-product attention of Vaswani et al. (2017, Eq. 1):

$$
\text{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V .
$$

Row by row (seed 000, §2.2): query $i$ scores every key, $\text{score}(q_i, k_j) = q_i \cdot k_j / \sqrt{d_k}$;
a softmax over $j$ turns the scores of row $i$ into weights $\alpha_{ij}$ that are positive and sum to 1, "the
degree to which position $i$ depends on position $j$"; the output of position $i$ is the weighted sum of the
values, $z_i = \sum_j \alpha_{ij} v_j$. Each step is a few lines of code, and §3 runs them one by one.

A projection is a matrix product per token. Seed 001's first worked example is one: the embedding of 我,
one-hot $E_1 = [1, 0, 0, 0]$, plus a position vector $P_1 = [0, 0.1, 0.2, 0.3]$ gives $x_1 = [1, 0.1, 0.2, 0.3]$,
and a $2 \times 4$ matrix maps it to $[0.82, 1.07]$. Read that matrix as $(W^Q)^\top$ with $d_k = 2$, and
$[0.82, 1.07]$ is the query of 我. A row vector times $W^Q$ gives the same numbers:
""")

code(r"""
x1 = np.array([1.0, 0.0, 0.0, 0.0]) + np.array([0.0, 0.1, 0.2, 0.3])   # E_1 + P_1 (seed 001)
W_Q_seed = np.array([[0.5, 0.2, 0.0, 1.0],
                     [1.0, 0.0, 0.2, 0.1]]).T                        # (d_model 4, d_k 2)
q1 = x1 @ W_Q_seed                                                   # the query of 我: (d_k,) = (2,)
print("x_1 =", x1, "  q_1 = x_1 W^Q =", q1)
""")

code(r"""
assert np.allclose(x1, [1.0, 0.1, 0.2, 0.3]) and np.allclose(q1, [0.82, 1.07])
""", tags=["remove-cell"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 2. A soft dictionary look-up

Seed 004 explains the difference between a recurrent network and attention with two data structures. A
recurrent network is like a **linked list**: to reach a word you walk from the start, one step after the other.
Attention is like a **hash map**: whether two words are 5 or 500 words apart, one look-up reaches the other
directly. "But", the seed adds, "the pointers of a hash map are written in advance, while the 'pointers' of
attention must first be computed": every word first scores itself and every other word ($Q K^\top$, all pairs),
turns the scores into a row of **soft pointers** (the weights), and then reads the values with them. A hash map
"with one extra step: search the keys first, then fetch the value".

A Python `dict` makes a *hard* look-up: a key either matches exactly or not at all.
""")

code(r"""
table = {"我": 1.0, "爱": 2.0, "机器": 3.0, "学习": 4.0}     # key -> value
print("table['机器'] =", table["机器"])
try:
    table["爱机器"]
except KeyError as err:
    print("table['爱机器'] raises KeyError:", err)
""")

md(r"""
The same table as attention: each key becomes a vector (here one-hot, $d_k = 4$), each value a vector (here
one number, $d_v = 1$), and the query is the one-hot vector of the wanted key, multiplied by a *sharpness*
$\beta$. Its score with the matching key is $\beta / \sqrt{d_k} = \beta / 2$, with every other key 0. The
output is the weighted average of **all** the values:
""")

code(r"""
keys = torch.eye(4)                                        # (4 keys, d_k = 4): one-hot, in the order of `table`
values = torch.tensor(list(table.values()))[:, None]       # (4, d_v = 1)


def soft_lookup(query):
    out, w = scaled_dot_product_attention(query[None], keys, values)   # query: (d_k,) -> (1, d_k)
    return out.item(), w[0]


betas = [0, 1, 2, 4, 8, 12, 16, 20]
lookups = {beta: soft_lookup(beta * keys[2]) for beta in betas}    # keys[2] is the key of 机器
for beta, (out, w) in lookups.items():
    print(f"β = {beta:2d}: weights {np.round(w.numpy(), 4)}  output {out:.5f}")
""")

code(r"""
assert lookups[0][0] == 2.5 and torch.allclose(lookups[0][1], torch.full((4,), 0.25))
w1 = math.exp(0.5) / (math.exp(0.5) + 3)
assert abs(lookups[1][1][2].item() - w1) < 1e-6 and round(w1, 3) == 0.355
assert lookups[20][1][2] > 0.9998 and abs(lookups[20][0] - 3.0) < 1e-4
assert all(lookups[a][1][2] < lookups[b][1][2] for a, b in zip(betas, betas[1:]))
""", tags=["remove-cell"])

md(r"""
At $\beta = 0$ every key scores 0, all four weights are 0.25 and the output is the plain average 2.5. As $\beta$
grows, the weight moves onto the matching key — $e^{\beta/2} / (e^{\beta/2} + 3)$, already 0.355 at
$\beta = 1$ — and at $\beta = 20$ the output differs from the hard answer `table['机器'] = 3.0` by less than
$10^{-4}$. **A hard look-up is the limit of a soft one.**
""")

code(r"""
plot_curves({"soft look-up (attention)": (betas, [lookups[b][0] for b in betas]),
             "hard look-up (the Python dict)": (betas, [table["机器"]] * len(betas))},
            xlabel="sharpness β of the query", ylabel="value returned",
            title="A one-hot query, made sharper")
""")

md(r"""
The soft version can do what the dictionary cannot: a query *between* two keys gets a blend of their values,
and every weight has a gradient, so a network can learn where to look. Asking for "爱机器" (the sum of the two
one-hot keys):
""")

code(r"""
blend, blend_w = soft_lookup(20 * (keys[1] + keys[2]))
print(f"weights {np.round(blend_w.numpy(), 4)}  output {blend:.4f}")
""")

code(r"""
assert abs(blend - 2.5) < 1e-4 and abs(blend_w[1] - 0.5) < 1e-4 and abs(blend_w[2] - 0.5) < 1e-4
""", tags=["remove-cell"])

md(r"""
— half of 爱's value and half of 机器's, 2.5, where the dictionary raised a `KeyError`. In self-attention the
keys are not one-hot vectors chosen by hand but learnt projections $x_j W^K$ of the words, and the queries
$x_i W^Q$ are learnt too: the network decides what each word looks for and what it offers.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 3. Self-attention step by step

Seed 001 works through self-attention for the sentence 我爱机器学习, tokenised as 我 / 爱 / 机器 / 学习 (*I /
love / machine / learning*): "suppose the width is 4, so we get four 4 × 1 vectors" (BERT, it adds, uses 768).
The seed gives no numbers for the embeddings and the weights, so we draw them at random (seeded). One head,
$d_\text{model} = d_k = d_v = 4$, and the seed's convention: a token is a **row** of $X$.

**Step 0: the input.** One row per token.
""")

code(r"""
rng = np.random.default_rng(SEED)
X = rng.standard_normal((len(TOKENS), D_MODEL))                            # (n, d_model) = (4, 4)
W_Q, W_K, W_V = (rng.standard_normal((D_MODEL, D_K)) / math.sqrt(D_MODEL) for _ in range(3))  # (4, 4) each
for token, gloss, row in zip(TOKENS, GLOSS, X):
    print(f"{token} ({gloss:8s}) x = {row}")
""")

md(r"""
**Step 1: project.** Three matrix products give a query, a key and a value for every token:
""")

code(r"""
Q, K, V = X @ W_Q, X @ W_K, X @ W_V                                        # (4, 4) each: row i belongs to token i
print("Q =", Q, sep="\n")
""")

md(r"""
**Step 2: score.** Every query against every key, all at once: $S = Q K^\top$, an $n \times n$ matrix whose
entry $S_{ij} = q_i \cdot k_j$ compares **query $i$** (row) with **key $j$** (column).
""")

code(r"""
S = Q @ K.T                                                                # (4, 4): row = query, column = key
print("S =", S, sep="\n")
print(f"S[0, 1] = q_我 · k_爱 = {S[0, 1]:.4f};  S[1, 0] = q_爱 · k_我 = {S[1, 0]:.4f};  "
      f"S[0, 0] = q_我 · k_我 = {S[0, 0]:.4f}")
""")

code(r"""
assert np.isclose(S[0, 1], Q[0] @ K[1]) and np.isclose(S[1, 0], Q[1] @ K[0])
assert abs(S[0, 1] - S[1, 0]) > 0.1 and abs(S[0, 1] - S[0, 0]) > 0.1
""", tags=["remove-cell"])

md(r"""
The off-diagonal entry $S_{0,1}$ says how well what 我 *looks for* matches what 爱 *offers*; $S_{1,0}$ is the
other way round and is a different number, because $W^Q \ne W^K$: the score matrix is not symmetric. The
diagonal $S_{ii}$ is only one entry per row.

:::{note}
Seed 003 (§4.2) writes the self-attention output as $\sum_i \frac{e^{s_i}}{\sum_j e^{s_j}}\, x_i W^V$ with
$s_i = x_i W^Q {W^K}^\top x_i^\top / \sqrt{d_k}$, and calls $s_i$ "the similarity score of input $i$ with
itself". That is only the diagonal $S_{ii}$. Self-attention needs one score for every *pair*:
$S_{ij} = x_i W^Q {W^K}^\top x_j^\top / \sqrt{d_k}$, query $i$ against key $j$, and the softmax of row $i$ runs
over the keys $j$; each query gets its own weights, as in the seed's own §3.2 ($S_{ij} = q_i \cdot k_j$). With
the diagonal alone every token would get the same weights and hence the same output (computed below). Seed
001 writes the influence of $x_j$ on $x_i$ as $q_j \cdot k_i$, which is $S_{ji}$, the transposed matrix; the
paper and `lib` use $q_i \cdot k_j$: the row belongs to the query. Since $S$ is not symmetric, the two
conventions give different weights (also below).
:::
""")

code(r"""
def softmax_rows(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))   # minus the row maximum: exp cannot overflow
    return e / e.sum(axis=-1, keepdims=True)


diagonal_only = softmax_rows(np.diag(S) / math.sqrt(D_K))    # seed 003's s_i: one weight per input i
Z_diagonal = np.tile(diagonal_only @ V, (len(TOKENS), 1))     # ... the same weighted sum for every token
transposed_gap = np.abs(softmax_rows(S.T / math.sqrt(D_K)) - softmax_rows(S / math.sqrt(D_K))).max()
print("outputs with the diagonal only (one row per token):", Z_diagonal, sep="\n")
print(f"weights from Sᵀ (seed 001's q_j·k_i) differ from those of S by up to {transposed_gap:.3f}")
""")

code(r"""
assert np.allclose(Z_diagonal, Z_diagonal[0]) and transposed_gap > 0.1
""", tags=["remove-cell"])

md(r"""
**Step 3: scale.** Divide by $\sqrt{d_k} = \sqrt 4 = 2$ (§5 explains why).

**Step 4: mask** — nothing to hide here; §4 shows the two masks.

**Step 5: softmax.** Row by row, so that each query's weights are positive and sum to 1. (Subtracting the row's
maximum first does not change the result and keeps `exp` from overflowing; the Preliminaries chapter shows why.)
""")

code(r"""
S_scaled = S / math.sqrt(D_K)                                              # step 3
A = softmax_rows(S_scaled)                                                 # step 5: (4, 4), rows sum to 1
print("A =", A, sep="\n")
print("row sums:", A.sum(axis=1))
""")

code(r"""
assert np.allclose(A.sum(axis=1), 1.0) and (A > 0).all()
assert round(math.e, 1) == 2.7 and np.isclose(softmax_rows(np.array([1.0, 0.0]))[0] / softmax_rows(np.array([1.0, 0.0]))[1], math.e)
""", tags=["remove-cell"])

md(r"""
**Step 6: weighted sum.** $Z = A V$. Seed 001 spells out row 1: 我 takes dot products with every word, giving
$\alpha_{11}, \dots, \alpha_{14}$; after the softmax they multiply $v_1, \dots, v_4$ and are added up, "and
now $z_1$ contains the context of the whole sentence". In our 0-based rows:
""")

code(r"""
Z = A @ V                                                                  # (4, 4): one output row per token
z_wo = sum(A[0, j] * V[j] for j in range(len(TOKENS)))                     # row 0, 我, as seed 001 spells it out
print("Z =", Z, sep="\n")
print("z_我 = Σ_j α_我j v_j =", z_wo)
""")

code(r"""
assert np.allclose(z_wo, Z[0])
""", tags=["remove-cell"])

md(r"""
The scores and the weights side by side (rows: the token that asks, columns: the token that is asked):
""")

code(r"""
fig = Figure(figsize=(9.0, 3.4), layout="constrained")
ax_s, ax_a = fig.subplots(1, 2)
plot_attention(S_scaled, GLOSS, GLOSS, ax=ax_s, vmin=None, annotate=True, cmap="RdBu_r",
               title="scaled scores S / √d_k")
plot_attention(A, GLOSS, GLOSS, ax=ax_a, vmax=1.0, annotate=True, title="weights A = softmax(S / √d_k)")
fig
""")

md(r"""
The softmax keeps the order of the scores within a row but turns them into shares: a score that is larger by 1
gets $e \approx 2.7$ times the weight. With random weights the pattern means nothing yet; training makes it
mean something (§6).

### The same with `lib` and with PyTorch

All six steps fit into a few lines; this is the whole of self-attention for one head:
""")

code(r"""
def self_attention_numpy(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V                       # 1. project
    S = Q @ K.T / math.sqrt(K.shape[-1])                      # 2.-3. score and scale
    A = softmax_rows(S)                                       # 5. softmax over the keys
    return A @ V, A                                           # 6. weighted sum of the values


Z_np, A_np = self_attention_numpy(X, W_Q, W_K, W_V)
""")

md(r"""
The library's core, `lib.attention.scaled_dot_product_attention`, is the same computation on tensors with any
number of leading axes `(batch, heads, ...)`, plus the mask and dropout. It returns the output *and* the
weights:
""")

code(r"""
display(Code(inspect.getsource(scaled_dot_product_attention), language="python"))
""")

md(r"""
We compare three implementations with our NumPy version: `lib`'s core on the projected $Q, K, V$; `lib`'s
`MultiHeadAttention` with **one head** ($d_k = d_\text{model}$), our matrices copied into its projections (an
`nn.Linear` stores $W^\top$) and the output projection $W^O$ set to the identity; and PyTorch's fused
`F.scaled_dot_product_attention`.
""")

code(r"""
Xt, WQt, WKt, WVt = (torch.tensor(a, dtype=torch.float32) for a in (X, W_Q, W_K, W_V))
Z_ref, A_ref = torch.tensor(Z_np, dtype=torch.float32), torch.tensor(A_np, dtype=torch.float32)

Z_core, A_core = scaled_dot_product_attention(Xt @ WQt, Xt @ WKt, Xt @ WVt)   # lib's core

one_head = MultiHeadAttention(D_MODEL, num_heads=1, bias=False).eval()       # lib's layer, one head
with torch.no_grad():
    for linear, w in ((one_head.w_q, WQt), (one_head.w_k, WKt), (one_head.w_v, WVt), (one_head.w_o, torch.eye(D_MODEL))):
        linear.weight.copy_(w.T)
    Z_mha, A_mha = one_head(Xt[None], Xt[None], Xt[None])                     # batch of one: (1, 4, 4), (1, 1, 4, 4)

Z_torch = F.scaled_dot_product_attention((Xt @ WQt)[None], (Xt @ WKt)[None], (Xt @ WVt)[None])[0]

for name, (z, a) in {"lib core": (Z_core, A_core), "lib MultiHeadAttention(h=1)": (Z_mha[0], A_mha[0, 0]),
                     "torch F.scaled_dot_product_attention": (Z_torch, None)}.items():
    torch.testing.assert_close(z, Z_ref)                                     # raises if they differ
    if a is not None:
        torch.testing.assert_close(a, A_ref)
    print(f"{name:38s} output: largest difference from NumPy {(z - Z_ref).abs().max():.1e}")
""", tags=["nbval-ignore-output"])

code(r"""
for z in (Z_core, Z_mha[0], Z_torch):
    assert (z - Z_ref).abs().max() < 1e-5
assert (A_core - A_ref).abs().max() < 1e-6 and (A_mha[0, 0] - A_ref).abs().max() < 1e-6
# no positions anywhere: permuting the tokens permutes the outputs the same way (permutation-equivariance)
perm = [2, 0, 3, 1]
assert np.allclose(self_attention_numpy(X[perm], W_Q, W_K, W_V)[0], Z_np[perm])
""", tags=["remove-cell"])

md(r"""
All three agree with the six lines of NumPy to within $10^{-5}$ (float32 against float64). From here on the
book uses `lib`. (With $h$ heads, `MultiHeadAttention` runs this once per head in a $d_k = d_\text{model}/h$
subspace; that is the next chapter.) Note also what the six lines do *not* contain: any reference to where a
token stands. Shuffle the rows of $X$ and the rows of $Z$ are shuffled in the same way, nothing else changes
(checked in code) — the weakness that seeds 000 and 003 point out and that the positional-encoding chapter
repairs.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 4. Masks: what a query may not see

Step 4 hides some keys from some queries by setting their scores to $-\infty$ before the softmax, so that their
weights become exactly $e^{-\infty} = 0$ and the remaining weights of the row still sum to 1. In `lib` a mask
has one meaning everywhere: `True` = *may attend*.

- The **causal mask** is for a decoder, which generates one token after the other: position $t$ may only look
  at positions $0, \dots, t$. Seed 001: "the second input only computes its influence from the first one, not
  from the third and fourth"; we only know the past, not what will be generated next.
- The **padding mask** hides the padding tokens that fill up the shorter sentences of a batch.

Our four tokens under the causal mask:
""")

code(r"""
mask = causal_mask(len(TOKENS))                                           # (4, 4) bool, True = may attend
Z_causal, A_causal = scaled_dot_product_attention(Xt @ WQt, Xt @ WKt, Xt @ WVt, mask=mask)
print(mask.int())
display(plot_mask(mask, GLOSS, title="The causal mask"),
        plot_attention(A_causal, GLOSS, GLOSS, vmax=1.0, annotate=True, title="Weights under the causal mask"))
""")

code(r"""
assert (A_causal.triu(1) == 0).all() and torch.equal(A_causal[0], torch.tensor([1.0, 0.0, 0.0, 0.0]))
assert torch.allclose(A_causal.sum(-1), torch.ones(4))
# seed 001's -1e10 instead of -inf: the same weights
seed_masked = torch.softmax((Xt @ WQt) @ (Xt @ WKt).T / 2 + torch.where(mask, 0.0, -1e10), dim=-1)
assert torch.allclose(seed_masked, A_causal, atol=1e-7)
# the last row is unchanged by the mask
assert torch.allclose(A_causal[3], A_ref[3], atol=1e-6)
""", tags=["remove-cell"])

md(r"""
Everything above the diagonal is 0, and 我 (*I*), the first token, can only attend to itself, with weight 1. The
last token sees everything, so its row is the same as without the mask. Seed 001 masks with a very negative
number, $-10^{10}$, instead of $-\infty$; the weights are the same (checked above). The padding mask works the
same way, with the columns of the padding masked in every row: put our sentence in a batch padded to 6 tokens,
and the two padding keys get weight 0 while the outputs of the four real tokens stay what they were:
""")

code(r"""
X_padded = torch.cat([Xt, torch.zeros(2, D_MODEL)])[None]                 # (batch 1, 6, d_model): 2 padding rows
keep = padding_mask(torch.tensor([len(TOKENS)]), max_len=6)               # (1, 1, 1, 6), True = real token
Z_pad, A_pad = scaled_dot_product_attention(X_padded @ WQt, X_padded @ WKt, X_padded @ WVt, mask=keep[0])
print("mask:", keep[0, 0, 0].int().tolist())
print("weights on the two padding keys:", A_pad[0, :, 4:].abs().max().item())
print("outputs of the real tokens unchanged:", torch.allclose(Z_pad[0, :4], Z_core, atol=1e-6))
""")

code(r"""
assert A_pad[0, :, 4:].abs().max() == 0 and torch.allclose(Z_pad[0, :4], Z_core, atol=1e-6)
""", tags=["remove-cell"])

md(r"""
The Transformer chapter uses both masks in the decoder, where the causal mask also keeps a model from "copying
the answer" during training (seed 004).
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 5. Why divide by √d_k

Seed 001 gives the argument (seeds 002, 003 and 004 give its conclusion): "assume the entries of $Q$ and $K$
are independent random variables with mean 0 and variance 1; by the properties of the variance, the variance of
the dot product of two vectors grows linearly with the dimension $d_k$", so for large $d_k$ the scores become
large, the softmax "saturates" — "most of the weight on a few values, the others almost 0" — and "its gradient
becomes very small". In symbols: $q \cdot k = \sum_{i=1}^{d_k} q_i k_i$ is a sum of $d_k$ independent terms,
each with mean $E[q_i]E[k_i] = 0$ and variance $E[q_i^2]E[k_i^2] = 1$, so

$$
\operatorname{Var}(q \cdot k) = d_k, \qquad
\operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = \frac{d_k}{d_k} = 1 .
$$

For the paper's $d_k = 512 / 8 = 64$ (and BERT-base's $768 / 12 = 64$) an unscaled score has a standard
deviation of $\sqrt{64} = 8$; dividing by $\sqrt{d_k}$ brings it back to 1, whatever $d_k$ is. (Vaswani et al.,
§3.2.1, footnote 4, give the same argument.)

**The variance, measured.** For each $d_k$ we draw 10,000 pairs of random $q, k$ with standard normal entries:
""")

code(r"""
g = torch.Generator().manual_seed(SEED)
n_pairs = 10_000
variance = {"unscaled": [], "scaled": []}
largest_score = {}
for d_k in D_KS:
    q, k = (torch.randn(n_pairs, d_k, generator=g, dtype=torch.float64) for _ in range(2))   # float64: exact sums
    dots = (q * k).sum(-1)                                                 # 10,000 scores q · k
    variance["unscaled"].append(dots.var().item())
    variance["scaled"].append((dots / math.sqrt(d_k)).var().item())
    largest_score[d_k] = dots.abs().max().item()
print(f"{'d_k':>5} {'Var(q·k)':>10} {'Var(q·k/√d_k)':>14}")
for d_k, vu, vs in zip(D_KS, variance["unscaled"], variance["scaled"]):
    print(f"{d_k:>5} {vu:>10.2f} {vs:>14.3f}")
""")

code(r"""
assert 512 // 8 == 768 // 12 == 64 and math.sqrt(64) == 8
for d_k, vu, vs in zip(D_KS, variance["unscaled"], variance["scaled"]):
    assert abs(vu / d_k - 1) < 0.05 and abs(vs - 1) < 0.05, (d_k, vu, vs)
assert round(math.log(torch.finfo(torch.float32).max), 2) == 88.72   # the largest x with exp(x) < inf in float32
assert largest_score[1024] > 88.73 and math.isinf(torch.tensor(largest_score[1024]).exp().item())
""", tags=["remove-cell"])

code(r"""
fig = plot_curves({"Var(q·k), measured": (D_KS, variance["unscaled"]),
                   "d_k (the formula)": (D_KS, D_KS),
                   "Var(q·k / √d_k), measured": (D_KS, variance["scaled"])},
                  xlabel="d_k", ylabel="variance of a score", logy=True,
                  title="Scores of unit-variance queries and keys")
fig.axes[0].lines[1].set_linestyle("--")                                   # the formula, under the measurement
log2_axis(fig, D_KS)
""")

md(r"""
The measured variances are within 5 % of $d_k$ without the scale and within 5 % of 1 with it. At
$d_k = 1024$ the largest of the 10,000 unscaled scores is above 88.7, where $e^x$ overflows `float32` — seed
001's warning that the exponential "may overflow" (the softmax of `torch` subtracts the maximum first, so it
survives; a naive one would return `nan`).

**What the softmax does with such scores.** Now the softmax's view: for each $d_k$, 2,000 rows, each one query
against $n = 32$ random keys. We measure how peaked the weights are — the largest weight of a row and the
row's entropy $H = -\sum_j \alpha_j \ln \alpha_j$ (at most $\ln 32 \approx 3.47$ nats, for equal weights) —
and how much gradient the softmax passes back, the size $\lVert J \rVert_F$ of its Jacobian
$J = \operatorname{diag}(\alpha) - \alpha \alpha^\top$ (seed 001's "vanishing gradient"):
""")

code(r"""
def softmax_stats(scores):
    # scores: (rows, n) -> mean largest weight, mean entropy (nats), mean Frobenius norm of the softmax Jacobian
    w = torch.softmax(scores, dim=-1)
    entropy = -(w * torch.log(w.clamp_min(1e-30))).sum(-1)
    jacobian = torch.diag_embed(w) - w[:, :, None] * w[:, None, :]       # (rows, n, n): ∂α_i / ∂s_j
    return w.max(-1).values.mean().item(), entropy.mean().item(), jacobian.flatten(1).norm(dim=-1).mean().item()


n_rows = 2_000
stats = {"unscaled": [], "scaled": []}
for d_k in D_KS:
    scores = torch.cat([                                                   # (rows, 32): one query, 32 keys
        torch.randn(500, 1, d_k, generator=g, dtype=torch.float64)         # 4 chunks of 500 rows (memory)
        @ torch.randn(500, N_KEYS, d_k, generator=g, dtype=torch.float64).transpose(1, 2)
        for _ in range(n_rows // 500)])[:, 0]
    stats["unscaled"].append(softmax_stats(scores))
    stats["scaled"].append(softmax_stats(scores / math.sqrt(d_k)))
print(f"{'d_k':>5} | {'largest weight':^19} | {'entropy (nats)':^19} | {'gradient size ‖J‖':^19}")
print(f"{'':>5} | {'unscaled':>9} {'scaled':>9} | {'unscaled':>9} {'scaled':>9} | {'unscaled':>9} {'scaled':>9}")
for i, d_k in enumerate(D_KS):
    u, s = stats["unscaled"][i], stats["scaled"][i]
    print(f"{d_k:>5} | {u[0]:>9.3f} {s[0]:>9.3f} | {u[1]:>9.3f} {s[1]:>9.3f} | {u[2]:>9.3f} {s[2]:>9.3f}")
""")

code(r"""
unscaled_max, unscaled_entropy, unscaled_grad = zip(*stats["unscaled"])
scaled_max, scaled_entropy, scaled_grad = zip(*stats["scaled"])
assert round(math.log(N_KEYS), 2) == 3.47
assert unscaled_max[-1] > 0.95 and unscaled_entropy[-1] < 0.15      # d_k = 1024: nearly one-hot
assert all(a < b for a, b in zip(unscaled_max, unscaled_max[1:]))  # sharper and sharper
assert all(abs(m - 0.16) < 0.01 for m in scaled_max) and all(abs(h - 3.0) < 0.05 for h in scaled_entropy)
assert unscaled_grad[-1] < 0.25 * scaled_grad[-1]                 # less than a quarter of the gradient
assert round(unscaled_max[-1], 2) == 0.96 and round(unscaled_grad[-1] / scaled_grad[-1], 2) == 0.24
assert all(0.23 < x < 0.25 for x in scaled_grad)
""", tags=["remove-cell"])

code(r"""
fig = plot_curves({"largest weight, unscaled": (D_KS, unscaled_max),
                   "largest weight, scaled by 1/√d_k": (D_KS, scaled_max),
                   "entropy / ln 32, unscaled": (D_KS, [h / math.log(N_KEYS) for h in unscaled_entropy]),
                   "entropy / ln 32, scaled by 1/√d_k": (D_KS, [h / math.log(N_KEYS) for h in scaled_entropy])},
                  xlabel="d_k", ylabel="share", title=f"Softmax over {N_KEYS} keys, mean of {n_rows:,} rows",
                  figsize=(6.5, 3.4))
log2_axis(fig, D_KS)
""")

md(r"""
Without the scale, the attention of a random query becomes almost a hard look-up as $d_k$ grows: at
$d_k = 1024$ the largest of 32 weights is on average 0.96 and the entropy is close to 0 — the sharpening of §2,
caused here not by a learnt choice but by the width alone. The softmax then passes back only 24 % of the
gradient it passes with the scale, so the query and key projections learn slowly. With the scale, the largest
weight stays near 0.16 and the entropy near 3.0 nats for every $d_k$: the *learnt* projections, not the
width, decide how sharp the attention is.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 6. Self-attention in a trained translation model

The book's German→English Transformer (trained in the capstone chapter on Multi30k image captions:
$d_\text{model} = 128$, 4 heads, 3 encoder and 3 decoder layers) has three kinds of attention: the encoder's
self-attention over the German sentence, the decoder's causal self-attention over the English words it has
written so far, and the cross-attention between them. `lib.translate.translation_attention` translates a
sentence and returns all their weights. We start with sentence 24 of the Multi30k test set, which the model
never saw during training:
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
assert (model.config.d_model, HEADS, LAYERS, model.config.num_decoder_layers) == (128, 4, 3, 3)
assert len(load_multi30k("train")) == 29_000 and len(test_pairs) == 1_000
assert model.config.fused_attention                                       # the fused kernel when no weights are needed
assert example.translation == "A woman uses a drill while a man takes a picture of her picture."
assert example.source_tokens[4:7] == ["▁Bo", "hr", "maschine"]
""", tags=["remove-cell"])

md(r"""
The tokenizer splits words it has rarely seen into sub-words (`▁` marks the start of a word, so *Bohrmaschine*,
*drill*, becomes `▁Bo` `hr` `maschine`) and the encoder appends the end token `</s>`. The encoder's
self-attention, one panel per layer (rows) and head (columns); in each panel the row is the query token and the
column the key token:
""")

code(r"""
src = example.source_tokens
plot_attention_grid(example.weights.encoder, x_labels=src, y_labels=src, panel_size=2.3,
                    title=f"Encoder self-attention, test sentence {SENTENCE}")
""")

code(r"""
enc = torch.stack([w[0] for w in example.weights.encoder])                 # (layers, heads, seq_s, seq_s)
assert torch.allclose(enc.sum(-1), torch.ones(enc.shape[:-1]), atol=1e-5) and (enc >= 0).all()
sie, frau, mann = (src.index(t) for t in ("▁sie", "▁Frau", "▁Mann"))
sie_to_frau, sie_to_mann = enc[:, :, sie, frau], enc[:, :, sie, mann]     # (layers, heads)
assert round(sie_to_frau.mean().item(), 3) == 0.011 and round(sie_to_mann.mean().item(), 3) == 0.081
assert (sie_to_mann > sie_to_frau).sum() == 11 and sie_to_frau.max() < 0.06
""", tags=["remove-cell"])

md(r"""
The heads differ, and some panels have clear structure (a diagonal for "the token itself", stripes for a
column that many queries look at). What they do *not* show is the textbook picture of the pronoun *sie*
(*her*) looking at *Frau* (*woman*): averaged over the 12 heads, *sie* gives *Frau* a weight of 0.011 and
*Mann* (*man*) 0.081, and 11 of the 12 heads give *Mann* more than *Frau* — although the translation does say
*her*. We come back to this below.

The decoder's self-attention runs over the English tokens, the query at position $t$ being the decoder input
at $t$ (`<s>`, then the tokens written so far); it predicts the next token. The causal mask makes every map
lower-triangular:
""")

code(r"""
decoder_inputs = ["<s>"] + example.target_tokens[:-1]
plot_attention_grid(example.weights.decoder, x_labels=decoder_inputs, y_labels=decoder_inputs, panel_size=2.3,
                    title="Decoder self-attention (causal) over the model's translation")
""")

code(r"""
dec = torch.stack([w[0] for w in example.weights.decoder])                 # (layers, heads, seq_t, seq_t)
assert (dec.triu(1) == 0).all()                                           # nothing above the diagonal: causal
assert torch.allclose(dec[:, :, 0, 0], torch.ones(LAYERS, HEADS))         # the first query sees only <s>
assert torch.allclose(dec.sum(-1), torch.ones(dec.shape[:-1]), atol=1e-5)
""", tags=["remove-cell"])

md(r"""
Every entry above the diagonal is exactly 0 (checked in code): a decoder position never sees the tokens after
it, and the first one, `<s>`, can only attend to itself, with weight 1 in every head.

### Does "it" attend to "the animal"?

Seed 004 closes its case for self-attention with transparency: translating "The animal didn't cross the street
because it was too tired", "we can see clearly that *it* has a higher attention weight with *animal*, so *it*
refers to *animal*. This proves that the model has really learnt the coreference in the sentence." (The
picture it describes comes from Google's 2017 blog post introducing the Transformer, which showed one encoder
head of a large English→French model.) Let us look in our model. It translates German into English, so we give
it the German sentence, where the pronoun is *es*. German helps: *es* is neuter like *das Tier* (*the animal*),
while *die Straße* (*the street*) is feminine, so grammar alone points *es* at *Tier*. As a control we also
give it a second sentence with the other ending, "…, weil **sie** zu **breit** war" (*because it was too
wide*), where the pronoun refers to the street.
""")

code(r"""
COREF_CONTROL = COREF_DE.replace("es zu müde", "sie zu breit")


def pronoun_rows(sentence, pronoun):
    # The encoder's weights from the pronoun's query: (layers · heads, seq_s), one row per head.
    ta = translation_attention(model, tokenizer, sentence)
    i = ta.source_tokens.index(pronoun)
    return ta, torch.stack([w[0, :, i] for w in ta.weights.encoder]).reshape(LAYERS * HEADS, -1)


coref, es_rows = pronoun_rows(COREF_DE, "▁es")
control, sie_rows = pronoun_rows(COREF_CONTROL, "▁sie")
print("German: ", COREF_DE, "\nmodel:  ", coref.translation)
print("control:", COREF_CONTROL, "\nmodel:  ", control.translation)
head_names = [f"layer {l}, head {h}" for l in range(LAYERS) for h in range(HEADS)]
display(plot_attention(es_rows, coref.source_tokens, head_names, annotate=False, ylabel="", figsize=(8, 4.2),
                       xlabel="key", title="Where the query of 'es' looks, in each of the 12 encoder heads"),
        plot_attention(sie_rows, control.source_tokens, head_names, annotate=False, ylabel="", figsize=(8, 4.2),
                       xlabel="key", title="... and the query of 'sie' in the control sentence"))
""")

code(r"""
tier, strasse = coref.source_tokens.index("▁Tier"), coref.source_tokens.index("▁Straße")
assert control.source_tokens.index("▁Tier") == tier and control.source_tokens.index("▁Straße") == strasse
n_src = len(coref.source_tokens)
es_tier, es_strasse = es_rows[:, tier], es_rows[:, strasse]
sie_tier, sie_strasse = sie_rows[:, tier], sie_rows[:, strasse]
r3 = lambda t: round(float(t), 3)
assert n_src == 19 and r3(1 / n_src) == 0.053
assert (r3(es_tier.mean()), r3(es_strasse.mean())) == (0.059, 0.044)
assert (r3(sie_tier.mean()), r3(sie_strasse.mean())) == (0.063, 0.040)
assert (es_tier > es_strasse).sum() == 6 and (sie_tier > sie_strasse).sum() == 8
assert not ((es_tier > es_strasse) & (sie_strasse > sie_tier)).any()      # no head switches with the pronoun
picked = int(es_tier.argmax())
assert head_names[picked] == "layer 2, head 3" and r3(es_tier[picked]) == 0.186 and r3(sie_tier[picked]) == 0.165
assert r3(es_tier.sort(descending=True).values[1]) == 0.148
assert coref.translation == "The animal is returned the street, the animal is returned."
""", tags=["remove-cell"])

md(r"""
What the maps show, measured (a weight spread evenly over the 19 source tokens would be 0.053 per token):

- **No head follows the pronoun's meaning.** Averaged over the 12 heads, *es* gives *Tier* 0.059 and *Straße*
  0.044. In the control sentence, where *sie* refers to the street, *sie* gives *Tier* 0.063 and *Straße* 0.040:
  the same preference, even slightly stronger. 6 of the 12 heads give *Tier* more weight than *Straße* from
  *es*, and 8 of 12 from *sie*; not one head prefers *Tier* from *es* and *Straße* from *sie*, which is what a
  head that follows the pronoun's meaning would do. Whatever draws the attention to *Tier*, it is not the
  pronoun referring to it.
- **The head with the most weight on *Tier*** — we picked it for that reason; it is layer 2, head 3 — gives
  *Tier* 0.186 from *es* (the next highest head gives 0.148), and 0.165 from *sie*, where *Tier* is the wrong
  answer. Its full map is drawn below.
- The translation, "The animal is returned the street, the animal is returned.", shows that the model, trained
  on 29,000 image captions, knows neither *überqueren* (*to cross*) nor *müde* (*tired*) well.

The same question on the English side: we make the decoder read seed 004's own English sentence (instead of
its own translation) and look at the decoder self-attention from the query of *it* to the earlier tokens:
""")

code(r"""
forced = translation_attention(model, tokenizer, COREF_DE, translation=COREF_EN)
forced_inputs = ["<s>"] + forced.target_tokens[:-1]
it = forced_inputs.index("▁it")
it_rows = torch.stack([w[0, :, it, :it + 1] for w in forced.weights.decoder]).reshape(LAYERS * HEADS, -1)
plot_attention(it_rows, forced_inputs[:it + 1], head_names, annotate=False, ylabel="", figsize=(7.5, 4.2),
               xlabel="key (decoder input)", title="Where the decoder's query of 'it' looks, in each of the 12 heads")
""")

code(r"""
animal, street = forced_inputs.index("▁animal"), forced_inputs.index("▁street")
it_animal, it_street = it_rows[:, animal], it_rows[:, street]
assert it + 1 == 15 and r3(1 / (it + 1)) == 0.067
assert (r3(it_animal.mean()), r3(it_street.mean())) == (0.034, 0.039)
assert (it_animal > it_street).sum() == 3 and r3(it_animal.max()) == 0.127
assert torch.allclose(it_rows.sum(-1), torch.ones(LAYERS * HEADS), atol=1e-5)
""", tags=["remove-cell"])

md(r"""
The query of *it* may see 15 tokens (1/15 = 0.067 each if spread evenly). Averaged over the heads it gives
*animal* 0.034 and *street* 0.039; only 3 of the 12 heads give *animal* more than *street*, the largest weight
on *animal* being 0.127. In this small model, neither the encoder nor the decoder shows what seed 004 describes.

That is not a failure of self-attention: a larger model trained on far more text can learn such a head, and
the maps of this chapter can show it when it exists. But an attention map is evidence about *one head in one
sentence*, not a proof of what a model has learnt. A head can put weight on the right word for the wrong reason
(here *Tier* gets the weight whatever the pronoun), the same information can flow through other heads and
through the residual connections, and studies of larger models found that attention weights and a model's
decisions do not always agree (Jain and Wallace 2019; Wiegreffe and Pinter 2019). To claim "the model resolves
*it*", test many sentences with controls, as we did here with one.

The head we picked, in full, for the German sentence:
""")

code(r"""
picked_map = coref.weights.encoder[2][0, 3]                                   # (seq_s, seq_s)
tier_column = picked_map[:, tier]
es = coref.source_tokens.index("▁es")
assert int((picked_map.argmax(-1) == tier).sum()) == 14 and r3(tier_column.mean()) == 0.336
assert int((tier_column > tier_column[es]).sum()) == 17 and r3(tier_column[es]) == 0.186
""", tags=["remove-cell"])

code(r"""
KINDS = {"encoder self-attention": "encoder", "decoder self-attention": "decoder"}


def attention_view(sentence=COREF_DE, kind="encoder self-attention", layer=2, head=3):
    ta = translation_attention(model, tokenizer, sentence)
    weights = getattr(ta.weights, KINDS[kind])[layer][0, head]                 # (seq_q, seq_k)
    labels = ta.source_tokens if KINDS[kind] == "encoder" else ["<s>"] + ta.target_tokens[:-1]
    return plot_attention(weights, labels, labels, annotate=False,
                          title=f"{kind}, layer {layer}, head {head}\n{ta.source if KINDS[kind] == 'encoder' else ta.translation}")


attention_view(COREF_DE, "encoder self-attention", 2, 3)
""")

md(r"""
The map explains the puzzle. This head looks at *Tier* from almost everywhere: 14 of the 19 queries put their
largest weight on it, 0.336 on average. The query of *es* gives it 0.186, *less* than 17 of the other 18
queries do (only `</s>` gives less). The head marks "the animal" for the whole sentence — a subject-tracking
column, perhaps — and *es* is not special to it.
""")

md(r"""
In a running notebook the cell below draws any German sentence you type (the model translates it, so the
decoder's map is over its own English), for either kind of self-attention, any layer and head; press **Draw**.
""")

code(r"""
from ipywidgets import Dropdown, IntSlider, Text, interact_manual

interact_manual.options(manual_name="Draw")(
    lambda sentence, kind, layer, head: display(attention_view(sentence, kind, layer, head)),
    sentence=Text(value=COREF_DE, description="German", layout={"width": "90%"}),
    kind=Dropdown(options=list(KINDS), value="encoder self-attention", description="attention"),
    layer=IntSlider(value=2, min=0, max=LAYERS - 1, description="layer"),
    head=IntSlider(value=3, min=0, max=HEADS - 1, description="head"),
);
""", tags=["nbval-ignore-output", "remove-output"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 7. The cost: O(n²·d) time, O(n²) memory

Every query meets every key: for $n$ tokens that is $n \times n$ pairs (seed 004). Per head, $Q K^\top$ takes
$n^2 d_k$ multiply-adds and $A V$ another $n^2 d_v$, so with $d_v = d_k$ and 2 FLOPs per multiply-add a call
costs

$$
\text{FLOPs} = 4 \cdot \text{batch} \cdot h \cdot n^2 \cdot d_k ,
$$

$O(n^2 \cdot d)$ for a layer of width $d = h d_k$, the self-attention row of the complexity table in seed 004
(and the paper's Table 1), against $O(n \cdot d^2)$ for a recurrent layer. The weights `(batch, heads, n, n)`
must be stored, $4 \cdot \text{batch} \cdot h \cdot n^2$ bytes in float32: seed 000's "time and space complexity
are both $O(n^2)$". `lib.cost` counts both; PyTorch's `FlopCounterMode` confirms the count on `lib`'s attention:
""")

code(r"""
display(Code(inspect.getsource(attention_flops), language="python"))
q = k = v = torch.randn(1, COST_HEADS, 512, COST_D_K)
with FlopCounterMode(display=False) as counter, torch.no_grad():
    scaled_dot_product_attention(q, k, v)
print(f"n = 512: FlopCounterMode counts {counter.get_total_flops():,} FLOPs; "
      f"attention_flops gives {attention_flops(1, COST_HEADS, 512, 512, COST_D_K):,}")
""")

code(r"""
assert counter.get_total_flops() == attention_flops(1, COST_HEADS, 512, 512, COST_D_K) == 4 * 4 * 512**2 * 64 == 268_435_456
""", tags=["remove-cell"])

md(r"""
**Time, measured.** `lib.cost.attention_cost` times `lib`'s explicit attention (scores, softmax and weights
are built and returned) against PyTorch's fused `F.scaled_dot_product_attention` (the same maths in one kernel
that works through the keys block by block and never stores the $n \times n$ matrix; it returns no weights),
for batch 1, 4 heads, $d_k = 64$ and $n$ from 128 to 4096. The two take turns, the median of 5 calls counts.
Timings depend on the machine and vary from run to run, so they are shown, not checked:
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
costs = attention_cost(COST_LENGTHS, heads=COST_HEADS, d_k=COST_D_K, repeats=5, seed=SEED)
print(f"{'n':>5} {'lib ms':>9} {'torch ms':>9} {'lib/torch':>9}")
for c in costs:
    print(f"{c.seq_len:>5} {c.lib_ms:>9.2f} {c.torch_ms:>9.2f} {c.lib_ms / c.torch_ms:>9.1f}")
top = costs[-1]
fig = plot_curves({"lib (explicit, returns weights)": (COST_LENGTHS, [c.lib_ms for c in costs]),
                   "torch F.scaled_dot_product_attention (fused)": (COST_LENGTHS, [c.torch_ms for c in costs]),
                   "∝ n² (through lib's last point)": (COST_LENGTHS, [top.lib_ms * (c.seq_len / top.seq_len) ** 2 for c in costs])},
                  xlabel="sequence length n", ylabel="ms per call (log scale)", logy=True,
                  title=f"Self-attention, batch 1, {COST_HEADS} heads, d_k = {COST_D_K}, this machine", figsize=(6.5, 3.6))
log2_axis(fig, D_KS)
""")

md(r"""
On a log–log plot a power law $t \propto n^p$ is a straight line of slope $p$. For short sequences the fixed
cost of a call dominates and the lines are flat; for long ones `lib`'s time approaches the $n^2$ line: twice the
tokens, four times the work. The fused kernel does the same number of FLOPs and is also quadratic, but it is
faster, because it never writes the $n \times n$ scores to memory and reads them back. That is why `lib`'s
`MultiHeadAttention(fused=True)` calls it whenever the weights are not needed (the shipped model is configured
that way). Reproduce the table on your machine, for longer sequences, with
`python bench/attention_cost.py --max-n 8192 --threads 2`.

**Memory: computed and measured.** The weights alone take $4 \cdot h \cdot n^2$ bytes per sequence. `lib.cost.peak_tensor_bytes`
also *measures* the largest total of tensors alive at once during a call, by watching every PyTorch operation
(deterministically: it counts the tensors operations create and free, not the scratch memory inside a kernel,
nor what the operating system reports):
""")

code(r"""
MiB = 2**20
out_bytes = [1 * COST_HEADS * c.seq_len * COST_D_K * 4 for c in costs]    # the output (batch, heads, n, d_k)
print(f"{'n':>5} {'weights MiB':>12} {'lib peak MiB':>13} {'torch peak MiB':>15} {'output MiB':>11}")
for c, o in zip(costs, out_bytes):
    print(f"{c.seq_len:>5} {c.weight_bytes / MiB:>12.2f} {c.lib_peak_bytes / MiB:>13.2f} "
          f"{c.torch_peak_bytes / MiB:>15.3f} {o / MiB:>11.3f}")
paper = attention_weight_bytes(1, 8, 4096)
print(f"the paper's 8 heads at n = 4096: {paper / MiB:.0f} MiB of weights per sequence and layer")
""")

code(r"""
for c, o in zip(costs, out_bytes):
    assert c.weight_bytes == 1 * COST_HEADS * c.seq_len ** 2 * 4                  # batch · heads · n² · 4, exactly
    assert c.lib_peak_bytes == 2 * c.weight_bytes + o                             # scores + weights + output
    assert o <= c.torch_peak_bytes <= 1.1 * o                                     # fused: O(n), output and row statistics
assert costs[-1].weight_bytes == 256 * MiB and costs[0].weight_bytes == MiB // 4
assert costs[-1].lib_peak_bytes == 516 * MiB and paper == 512 * MiB
assert [b.weight_bytes // a.weight_bytes for a, b in zip(costs, costs[1:])] == [4] * 5
""", tags=["remove-cell"])

md(r"""
Each doubling of $n$ multiplies the weights by exactly 4: from 0.25 MiB at $n = 128$ to 256 MiB at $n = 4096$,
and with the paper's 8 heads 512 MiB per sentence and layer. The measured peak of `lib`'s explicit path is
exactly twice the weights plus the output (516 MiB at $n = 4096$): while the softmax runs, the scaled scores and
the weights are both alive. The fused kernel's tensors are the output plus one number per query row, growing
like $n$, not $n^2$.

The cost is the price of the direct connections. One self-attention layer links any two positions in one step
(seed 004's "path length $O(1)$" against $O(n)$ for a recurrent network), and none of its work has to wait for
another position, so it runs in parallel; the Transformer chapter compares the three measures (work, path
length, wall-clock time) across layer types. For the short sentences of translation, $n^2 d$ is smaller than
a recurrent layer's $n d^2$ whenever $n < d$. For long documents the $n^2$ dominates; seed 002 lists the
remedies — sparse, linear and LSH attention — which the chapter on efficient attention builds.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Summary

- Self-attention takes queries, keys and values from the same sequence: $Q = XW^Q$, $K = XW^K$, $V = XW^V$,
  and returns $\operatorname{softmax}(QK^\top / \sqrt{d_k})\, V$ (Vaswani et al. 2017, Eq. 1): score, scale,
  (mask), softmax, weighted sum — six lines of NumPy, equal to `lib`'s `scaled_dot_product_attention`, to a
  one-head `MultiHeadAttention` and to PyTorch's fused kernel.
- Attention is a soft dictionary look-up (seed 004's "hash map with soft pointers"): a sharp one-hot query
  recovers the hard look-up; a blurred one blends values, and every weight has a gradient.
- $S_{ij} = q_i \cdot k_j$ compares query $i$ with key $j$; the matrix is not symmetric and each row is one
  query's distribution over all keys (not "input $i$ with itself", as seed 003 has it).
- Masks set scores to $-\infty$: the causal mask hides the future (upper triangle 0), the padding mask hides
  padding.
- With unit-variance entries $\operatorname{Var}(q \cdot k) = d_k$; dividing by $\sqrt{d_k}$ restores variance 1.
  Without it the softmax turns nearly one-hot as $d_k$ grows (largest of 32 weights 0.96 at $d_k = 1024$) and
  passes back less than a quarter of the gradient.
- In the trained translation model, self-attention maps show structure, but not coreference: *es* and *sie*
  both look at *Tier* a little more than at *Straße*, whichever noun they refer to. An attention map is
  evidence about one head in one sentence, not proof of what a model has learnt.
- Cost: $4 \cdot \text{batch} \cdot h \cdot n^2 d_k$ FLOPs and $4 \cdot \text{batch} \cdot h \cdot n^2$ bytes of
  weights; `lib`'s explicit path holds twice that (plus the output) at its peak, the fused kernel $O(n)$.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Exercises

Each exercise ends with a call to `check`, which tests your answer against `lib` and prints ✅ or a hint.
""")

md(r"""
:::{exercise}
:label: sa-cross-attention

Self-attention is attention whose queries, keys and values come from one sequence. Write the general version in
NumPy: `attention(x_q, x_kv, w_q, w_k, w_v)` takes the queries' sequence `x_q` of shape `(seq_q, d_model)`, the
keys' and values' sequence `x_kv` of shape `(seq_k, d_model)`, and the matrices $W^Q, W^K$ of shape
`(d_model, d_k)` and $W^V$ of shape `(d_model, d_v)`, and returns the `(seq_q, d_v)` output. (With `x_q` from a
decoder and `x_kv` from an encoder, this is the Transformer's cross-attention.) Finish with
`check("sa_cross_attention", attention)`.
:::
""")

solution("sa-cross-attention", r"""
def attention(x_q, x_kv, w_q, w_k, w_v):
    q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v          # (seq_q, d_k), (seq_k, d_k), (seq_k, d_v)
    scores = q @ k.T / math.sqrt(k.shape[-1])            # (seq_q, seq_k): query i against key j
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)       # softmax over the keys
    return weights @ v                                   # (seq_q, d_v)


assert check("sa_cross_attention", attention)  # prints ✅; the assert makes `make test` fail if this solution ever stops passing
""")

md(r"""
:::{exercise}
:label: sa-causal-weights

Write `causal_weights(scores)`: given an `(n, n)` NumPy array of (already scaled) scores, return the `(n, n)`
attention weights under the causal mask — row $i$ may attend to keys $0, \dots, i$ only. Make it work for scores
around 100, too. Finish with `check("sa_causal_weights", causal_weights)`.
:::
""")

solution("sa-causal-weights", r"""
def causal_weights(scores):
    n = scores.shape[0]
    allowed = np.tril(np.ones((n, n), dtype=bool))              # True = may attend (lib's convention)
    masked = np.where(allowed, scores, -np.inf)                 # mask *before* the softmax
    e = np.exp(masked - masked.max(axis=-1, keepdims=True))     # the diagonal is always allowed: max is finite
    return e / e.sum(axis=-1, keepdims=True)


assert check("sa_causal_weights", causal_weights)
""")

md(r"""
:::{exercise}
:label: sa-score-std

Generalise §5's argument: the entries of $q$ and $k$ are independent, with mean 0 and standard deviations
$\sigma_q$ and $\sigma_k$. Write `score_std(d_k, sigma_q, sigma_k, scaled)` that returns the standard deviation
of one score, $q \cdot k$, or $q \cdot k / \sqrt{d_k}$ when `scaled` is true. Finish with
`check("sa_score_std", score_std)`.
:::
""")

solution("sa-score-std", r"""
def score_std(d_k, sigma_q, sigma_k, scaled):
    variance = d_k * sigma_q**2 * sigma_k**2        # d_k independent terms q_i k_i, each of variance σ_q² σ_k²
    if scaled:
        variance /= d_k                             # Var(x / c) = Var(x) / c², with c = √d_k
    return math.sqrt(variance)


assert check("sa_score_std", score_std)
""")

md(r"""
:::{exercise}
:label: sa-max-seq-len

A GPU has `memory_bytes` bytes free for the attention weights of one layer. Write
`max_seq_len(memory_bytes, batch, heads, bytes_per_element)` that returns the longest sequence length $n$
whose weights `(batch, heads, n, n)` fit. How long may the sentences be for 16 GiB, batch 1, 8 heads and
float32? Finish with `check("sa_max_seq_len", max_seq_len)`.
:::
""")

solution("sa-max-seq-len", r"""
def max_seq_len(memory_bytes, batch, heads, bytes_per_element):
    # the largest n with batch · heads · n² · bytes_per_element <= memory_bytes
    return math.isqrt(memory_bytes // (batch * heads * bytes_per_element))


# max_seq_len(16 * 2**30, 1, 8, 4) = 23170 tokens; doubling the memory buys only √2 times longer sequences
assert check("sa_max_seq_len", max_seq_len)
""")

md(r"""
:::{exercise}
:label: sa-lookup-scale

In §2 a one-hot query $\beta e_m$ looked up one of $n$ one-hot keys. Take the scores as plain dot products,
$\beta$ for the matching key and 0 for the $n - 1$ others (think of $\beta$ as already divided by $\sqrt{d_k}$).
Write `lookup_scale(n, p)` that returns the smallest $\beta$ for which the matching key gets at least the weight
$p$. Finish with `check("sa_lookup_scale", lookup_scale)`.
:::
""")

solution("sa-lookup-scale", r"""
def lookup_scale(n, p):
    # e^β / (e^β + (n - 1) e^0) = p  ⇔  e^β = p (n - 1) / (1 - p)
    return math.log(p * (n - 1) / (1 - p))


assert check("sa_lookup_scale", lookup_scale)
""")

md(r"""
:::{exercise}
:label: sa-coreference-test

§6 tested one sentence and one control. Design a better test of "head $h$ resolves pronouns": which sentences
would you feed, what would you measure, and what result would convince you? Try it with `attention_view` and
`translation_attention`.
:::

:::{solution} sa-coreference-test
:class: dropdown

Use many minimal pairs that differ only in what the pronoun must refer to, for example "…, weil **es** zu
**müde** war" / "…, weil **sie** zu **breit** war", with nouns of every gender combination (in German the
gender of the pronoun gives the answer away when the two nouns differ in gender, so include pairs where they
agree, e.g. *der Hund* / *der Weg*). For each head, measure the weight from the pronoun to the correct noun
minus the weight to the other noun, averaged over all pairs, and compare with the same quantity for a shuffled
assignment. A head that resolves pronouns puts clearly more weight on the correct noun in most pairs *and*
switches when the control switches; §6's layer 2, head 3 fails the second test. Even then, only an intervention
(removing the head and seeing the translations of pronouns get worse) shows that the model *uses* it.
:::
""")

md(r"""
## References

- Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N., Kaiser, Ł. and Polosukhin, I.
  (2017). Attention Is All You Need. *NeurIPS*. arXiv:1706.03762. §3.2.1 (Eq. 1 and footnote 4 on the
  scale), §4 and Table 1 (complexity).
- Bahdanau, D., Cho, K. and Bengio, Y. (2015). Neural Machine Translation by Jointly Learning to Align and
  Translate. *ICLR*.
- Uszkoreit, J. (2017). Transformer: A Novel Neural Network Architecture for Language Understanding. *Google
  Research Blog*, 31 August 2017.
- Jain, S. and Wallace, B. C. (2019). Attention is not Explanation. *NAACL*.
- Wiegreffe, S. and Pinter, Y. (2019). Attention is not not Explanation. *EMNLP*.
- Dao, T., Fu, D. Y., Ermon, S., Rudra, A. and Ré, C. (2022). FlashAttention: Fast and Memory-Efficient Exact
  Attention with IO-Awareness. *NeurIPS*.
- Elliott, D., Frank, S., Sima'an, K. and Specia, L. (2016). Multi30K: Multilingual English-German Image
  Descriptions. *Workshop on Vision and Language*.
""")

nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, sys.argv[1])
