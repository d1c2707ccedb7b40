"""Generate chapters/preliminaries.ipynb (outputs are filled in by `make execute`).

Usage: python make_preliminaries.py chapters/preliminaries.ipynb
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
# Preliminaries: vectors, matrices, softmax, tokens

A Transformer maps one sequence to another. Seed 001 lists the kinds of **sequence-to-sequence**
(序列到序列, *Seq2Seq*) tasks it was built for:

- machine translation: the input "Deep learning", the output "深度学习";
- speech recognition: a sound wave in, the text "深度学习" out;
- question answering and dialogue: "中国的首都是哪个城市?" (*Which city is the capital of China?*) in,
  "北京" (*Beijing*) out;
- even classification, once a **prompt** (提示词) turns it into a question: the review "这个行李箱不够结实,
  用几次轮子就坏了" (*this suitcase is flimsy, the wheels broke after a few uses*) plus the question
  "这个评论是正向还是负向?" (*is this review positive or negative?*) in, "负向" (*negative*) out.

Every one of them runs on the same four pieces of machinery, and seed 001 explains them first, "先科普一些
前置知识" (*some background first*). So does this chapter:

1. **vectors and matrices**: seed 001's product $W x_1 = [0.82, 1.07]$, and the shapes the book uses;
2. the **dot product** as a measure of similarity, the score at the heart of attention;
3. **softmax**, which turns scores into probabilities, with its **temperature** and its **numerical
   stability**;
4. **tokens** and **embeddings**: how a sentence becomes a sequence of ids, and the ids become vectors.
""")

code(r"""
%matplotlib inline
import string
from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import display
from torch import nn

from lib.data import load_multi30k
from lib.exercises import check
from lib.plots import plot_attention, plot_distributions
from lib.positional import sinusoidal_positional_encoding
from lib.tokenize import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID, decode, encode, multi30k_tokenizer, tokens
from lib.transformer import TransformerConfig

# The knobs of this chapter.
SEED = 0
Z = [0.5, 0.8, 0.6]                 # seed 001's softmax example
TEMPERATURES = (0.1, 0.25, 1, 4)    # for the temperature figure
_ = torch.manual_seed(SEED)
np.set_printoptions(precision=5, suppress=True)
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 1. Vectors and matrices

A **vector** is a list of numbers, a **matrix** a table of them. In a Transformer every token is a vector
of $d_\text{model}$ numbers, and almost everything the model does to it is a matrix product.

Seed 001's example builds the input vector of the first token, $x_1$, as the sum of two vectors of
length 4: an embedding $E_1$ (what the token is) and a position vector $P_1$ (where it stands; §7 and the
chapter on positional encoding explain both):

$$
x_1 = E_1 + P_1 =
\begin{bmatrix}1 \\ 0 \\ 0 \\ 0\end{bmatrix} + \begin{bmatrix}0.0 \\ 0.1 \\ 0.2 \\ 0.3\end{bmatrix}
= \begin{bmatrix}1.0 \\ 0.1 \\ 0.2 \\ 0.3\end{bmatrix}.
$$

Vectors add entry by entry. The seed writes them as **columns** ($4 \times 1$); the **transpose**
$E_1^T = [1, 0, 0, 0]$ is the same numbers as a row ($1 \times 4$).
""")

code(r"""
E1 = np.array([1.0, 0.0, 0.0, 0.0])
P1 = np.array([0.0, 0.1, 0.2, 0.3])
x1 = E1 + P1
print("x1 =", x1)
print("as a column:", E1.reshape(4, 1).shape, "  its transpose, a row:", E1.reshape(4, 1).T.shape)
""")

code(r"""
assert np.allclose(x1, [1.0, 0.1, 0.2, 0.3])
assert E1.reshape(4, 1).T.shape == (1, 4) and E1.reshape(4, 1).T.tolist() == [[1, 0, 0, 0]]
""", tags=["remove-cell"])

md(r"""
A layer of a network multiplies such a vector by a matrix of learned **weights**. Seed 001 uses a
$2 \times 4$ matrix $W$. Each entry of the result is the **dot product** of one row of $W$ with $x_1$:
multiply entry by entry, then add up.

$$
W x_1 =
\begin{bmatrix} 0.5 & 0.2 & 0.0 & 1.0 \\ 1.0 & 0.0 & 0.2 & 0.1 \end{bmatrix}
\begin{bmatrix} 1.0 \\ 0.1 \\ 0.2 \\ 0.3 \end{bmatrix}
= \begin{bmatrix} 0.5 \cdot 1.0 + 0.2 \cdot 0.1 + 0.0 \cdot 0.2 + 1.0 \cdot 0.3 \\
                  1.0 \cdot 1.0 + 0.0 \cdot 0.1 + 0.2 \cdot 0.2 + 0.1 \cdot 0.3 \end{bmatrix}
= \begin{bmatrix} 0.82 \\ 1.07 \end{bmatrix}.
$$

In NumPy the product is `@`; first the sums written out, as in the seed, then the operator:
""")

code(r"""
W = np.array([[0.5, 0.2, 0.0, 1.0],
              [1.0, 0.0, 0.2, 0.1]])
by_hand = [sum(W[i, j] * x1[j] for j in range(4)) for i in range(2)]   # row i of W · x1
print("by hand:", np.round(by_hand, 5))
print("W @ x1: ", W @ x1)
""")

code(r"""
assert np.allclose(by_hand, [0.82, 1.07]) and np.allclose(W @ x1, [0.82, 1.07])
assert (W @ x1).round(5).tolist() == [0.82, 1.07]
""", tags=["remove-cell"])

md(r"""
The shapes must fit: $(m \times n) \cdot (n \times k) \to (m \times k)$. Here $(2 \times 4) \cdot (4 \times 1)
\to (2 \times 1)$. When the number of columns of the first matrix differs from the number of rows of the
second, the product is not defined (seed 001), and NumPy refuses:
""")

code(r"""
print("(2, 4) @ (4, 1) ->", (W @ x1.reshape(4, 1)).shape)
try:
    W @ np.ones(3)
except ValueError as err:
    print("(2, 4) @ (3,) -> ValueError:", err)
""")

md(r"""
PyTorch, which the book's library `lib` is written in, computes the same product on **tensors** (its
arrays; `float32` by default, so the last digits may differ from NumPy's `float64`):
""")

code(r"""
W_t = torch.tensor(W, dtype=torch.float32)
x1_t = torch.tensor(x1, dtype=torch.float32)
print(W_t @ x1_t)
""")

code(r"""
torch.testing.assert_close(W_t @ x1_t, torch.tensor([0.82, 1.07]))
""", tags=["remove-cell"])

md(r"""
### Rows, not columns: the book's convention

Seed 001 multiplies the matrix from the left, $W x$, with $x$ a column. Code almost always stores a
token's vector as a **row** instead, and a sentence as a matrix $X$ whose row $t$ is token $t$: shape
`(seq_len, d_model)`. Transposing both sides of $y = W x$ gives $y^T = x^T W^T$, so on rows the same layer is
`x @ W.T`. That is exactly what PyTorch's `nn.Linear(in_features, out_features)` does: it stores its weight
with shape `(out_features, in_features)`, like the seed's $W$, and computes `x @ weight.T + bias`.
With seed 001's weights copied into such a layer (the kind `lib` uses everywhere):
""")

code(r"""
layer = nn.Linear(4, 2, bias=False)
with torch.no_grad():
    layer.weight.copy_(W_t)              # weight: (out_features, in_features) = (2, 4), the seed's W
print("weight shape:", tuple(layer.weight.shape))
print("layer(x1)  =", layer(x1_t).detach())
print("x1 @ W.T   =", x1_t @ W_t.T)
""")

md(r"""
Real inputs have two more axes. Sentences are processed in **batches**, and the library's tensors are
always **batch-first**, with shape `(batch, seq_len, d_model)`: sentence, position in the sentence,
feature. `nn.Linear` works on the last axis and treats all leading axes as "many rows": a batch of 2 sentences of
4 tokens each, $d_\text{model} = 4$, becomes a `(2, 4, 2)` tensor, and every token is transformed by the
same $W$, independently of the others. (The attention chapters add one more axis for the heads:
`(batch, heads, seq_len, d_k)`.)
""")

code(r"""
X = torch.randn(2, 4, 4)                 # (batch, seq_len, d_model), random (seeded) vectors
X[0, 0] = x1_t                           # sentence 0, token 0 is the seed's x1
Y = layer(X).detach()
print("X:", tuple(X.shape), "-> layer(X):", tuple(Y.shape))
print("sentence 0, token 0:", Y[0, 0])
""")

code(r"""
assert Y.shape == (2, 4, 2)
torch.testing.assert_close(Y[0, 0], torch.tensor([0.82, 1.07]))
for b in range(2):
    for t in range(4):
        torch.testing.assert_close(Y[b, t], W_t @ X[b, t])   # each row on its own, by the same W
""", tags=["remove-cell"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 2. The dot product measures similarity

The dot product $a \cdot b = \sum_i a_i b_i = \lVert a \rVert\, \lVert b \rVert \cos\theta$ is large when
two vectors point the same way, near 0 when they are unrelated (perpendicular) and negative when they point
in opposite directions. Attention is built on it: a query is compared with every key by a dot product, and
the biggest scores get the most attention (seed 001: "影响力", *influence*, $q_j \cdot k_i$).

Five made-up word vectors with three features each (*animal*, *vehicle*, *small*) show it. A matrix of
all pairwise dot products is one product, `V @ V.T`, exactly the shape of the score matrix $QK^T$ that
the attention chapters compute:
""")

code(r"""
words = ["cat", "dog", "kitten", "car", "truck"]
V = torch.tensor([[0.9, 0.0, 0.6],      # features: animal, vehicle, small
                  [0.9, 0.1, 0.3],
                  [0.8, 0.0, 0.9],
                  [0.0, 0.9, 0.4],
                  [0.1, 1.0, 0.0]])
scores = V @ V.T                        # (5, 5): scores[i, j] = V[i] · V[j]
plot_attention(scores, words, words, vmin=None, cmap="Blues", xlabel="word j", ylabel="word i",
               title="Dot products V[i] · V[j]")
""")

code(r"""
unit = V / V.norm(dim=1, keepdim=True)
cosine = unit @ unit.T
print(f"cat · kitten = {scores[0, 2]:.2f}   cat · dog = {scores[0, 1]:.2f}   cat · car = {scores[0, 3]:.2f}"
      f"   cat · cat = {scores[0, 0]:.2f}")
print(f"cosine: cat-kitten {cosine[0, 2]:.3f}, cat-dog {cosine[0, 1]:.3f}, cat-car {cosine[0, 3]:.3f}")
""")

code(r"""
assert f"{scores[0, 2]:.2f}" == "1.26" and f"{scores[0, 1]:.2f}" == "0.99" and f"{scores[0, 3]:.2f}" == "0.24"
assert f"{scores[0, 0]:.2f}" == "1.17" and scores[0, 2] > scores[0, 0]
assert f"{cosine[0, 2]:.3f}" == "0.967" and f"{cosine[0, 1]:.3f}" == "0.959" and f"{cosine[0, 3]:.3f}" == "0.225"
assert torch.allclose(scores, scores.T)
""", tags=["remove-cell"])

md(r"""
The animals score high with each other (cat · kitten = 1.26, cat · dog = 0.99) and low with the vehicles
(cat · car = 0.24). The dot product also grows with the vectors' lengths: cat is more similar to the longer
kitten (1.26) than to itself (1.17). The **cosine similarity** divides the lengths out (cat–kitten 0.967,
cat–dog 0.959, cat–car 0.225). Attention uses the raw dot product, divided by $\sqrt{d_k}$; §4 shows what
that division does.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 3. Softmax: from scores to probabilities

Scores can be any real numbers. To use them as weights, or as the probabilities of the next word, the
model needs numbers that are positive and add up to 1. **Softmax** does this (seed 001): for
$z = [z_1, \dots, z_k]$,

$$
\sigma(z)_i = \frac{e^{z_i}}{\sum_{j=1}^{k} e^{z_j}}, \qquad i = 1, \dots, k .
$$

Seed 001's example: $z = [0.5, 0.8, 0.6]$, so
$\sigma(z)_1 = e^{0.5} / (e^{0.5} + e^{0.8} + e^{0.6}) = P(y = 1 \mid z)$. By hand in NumPy, in one line, and
with PyTorch's `torch.softmax`:
""")

code(r"""
z = np.array(Z)
e = np.exp(z)
print("exp(z)      =", e, "  sum =", round(e.sum(), 5))
p = e / e.sum()
print("softmax(z)  =", p)
print("torch       =", torch.softmax(torch.tensor(Z, dtype=torch.float64), dim=-1).numpy())
""")

code(r"""
assert p.round(5).tolist() == [0.28943, 0.39069, 0.31987]
assert np.allclose(torch.softmax(torch.tensor(Z, dtype=torch.float64), dim=-1).numpy(), p, atol=1e-12)
assert np.allclose(torch.softmax(torch.tensor(Z), dim=-1).numpy(), [0.28943, 0.39069, 0.31987], atol=5e-6)
assert round(e.sum(), 5) == 5.69638
""", tags=["remove-cell"])

md(r"""
$[0.28943, 0.39069, 0.31987]$, as in seed 001. In a classifier, or at the output of a translation model,
each entry is the probability of one class or one next word, and the prediction is the one with the
largest probability (seed 001: after 我 爱, the word 机器 gets the highest probability and is chosen).

Seed 001 lists the properties; each is checked below:

- every output lies in $(0, 1)$: $e^{z_i} > 0$ and the denominator is larger than each term;
- the outputs **sum to 1**: a probability distribution;
- it is **monotonic**: a larger $z_i$ gives a larger $\sigma(z)_i$, so the order of the scores is kept;
- adding the **same constant** $c$ to every score changes nothing, since $e^{z_i + c} = e^c e^{z_i}$ and
  $e^c$ cancels. (Multiplying the scores by a constant does change the result: §4.)
""")

code(r"""
softmax = lambda v: np.exp(v) / np.exp(v).sum()      # the formula, exactly as written
print("sum:                ", p.sum())
print("all in (0, 1):      ", bool(((p > 0) & (p < 1)).all()))
print("same order as z:    ", np.argsort(z), np.argsort(p))
print("softmax(z + 100)   =", softmax(z + 100))
print("softmax(z - 3)     =", softmax(z - 3))
print("softmax(2 z)       =", softmax(2 * z))
""")

code(r"""
assert abs(p.sum() - 1) < 1e-12 and ((p > 0) & (p < 1)).all()
assert (np.argsort(z) == np.argsort(p)).all()
assert np.allclose(softmax(z + 100), p) and np.allclose(softmax(z - 3), p)
assert not np.allclose(softmax(2 * z), p)
""", tags=["remove-cell"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 4. Temperature

Dividing the scores by a **temperature** $T > 0$ before the softmax, $\sigma(z / T)$, controls how peaked
the distribution is:

- $T = 1$ is the plain softmax;
- $T < 1$ stretches the differences between the scores: the largest one takes almost everything, and as
  $T \to 0$ the result approaches the **one-hot** vector of the argmax;
- $T > 1$ shrinks the differences: as $T \to \infty$ the result approaches the **uniform** distribution
  $1/k$.

Language models sample their next word from $\sigma(z / T)$: a low temperature gives safe, repetitive
text, a high one gives varied, riskier text. And the $\sqrt{d_k}$ in the Transformer's
$\text{softmax}(QK^T / \sqrt{d_k})$ is a temperature: it keeps the attention weights from becoming one-hot
when the dot products of long vectors grow large.

Seed 001's scores at four temperatures:
""")

code(r"""
z_t = torch.tensor(Z, dtype=torch.float64)
by_temperature = {f"T = {T}": torch.softmax(z_t / T, dim=-1) for T in TEMPERATURES}
for name, probs in by_temperature.items():
    print(f"{name:9s}", probs.numpy())
plot_distributions(by_temperature, labels=[f"z = {v}" for v in Z], xlabel="score",
                   title="softmax(z / T) for seed 001's z = [0.5, 0.8, 0.6]")
""")

code(r"""
one_hot_limit = torch.softmax(z_t / 0.001, dim=-1)
uniform_limit = torch.softmax(z_t / 1000, dim=-1)
print("T = 0.001:", one_hot_limit.numpy(), "  (argmax of z:", int(z_t.argmax()), ")")
print("T = 1000: ", uniform_limit.numpy())
""")

code(r"""
assert by_temperature["T = 0.1"].numpy().round(3).tolist() == [0.042, 0.844, 0.114]
assert by_temperature["T = 4"].numpy().round(3).tolist() == [0.322, 0.347, 0.330]
assert by_temperature["T = 1"].numpy().round(5).tolist() == [0.28943, 0.39069, 0.31987]
assert torch.allclose(one_hot_limit, F.one_hot(z_t.argmax(), 3).double(), atol=1e-6)
assert torch.allclose(uniform_limit, torch.full((3,), 1 / 3, dtype=torch.float64), atol=1e-3)
# sharper and sharper as T falls: the largest probability grows monotonically
tops = [by_temperature[f"T = {T}"].max().item() for T in TEMPERATURES]
assert tops == sorted(tops, reverse=True)
assert abs(z_t.max().item() / 0.001 - 800) < 1e-9
""", tags=["remove-cell"])

md(r"""
At $T = 0.1$ the middle score already takes 0.844 of the mass; at $T = 4$ the three probabilities
(0.322, 0.347, 0.330) are nearly equal. At $T = 0.001$ the result is the one-hot vector $[0, 1, 0]$ of the
largest score, at $T = 1000$ it is uniform to within 0.001. (The scores divided by 0.001 reach 800, and
$e^{800}$ does not fit in a float; `torch.softmax` still gets it right. §5 shows how.)

### Explore: temperature

The same idea on a longer list: made-up scores of eight candidate next words after "A dog runs across
the …". First the default view, $T = 1$, as on this website:
""")

code(r"""
candidates = ["grass", "street", "field", "beach", "snow", "water", "road", "park"]
candidate_scores = torch.tensor([2.0, 1.6, 1.5, 1.0, 0.8, 0.5, 0.3, 0.1])   # made up, not from a model


def temperature_view(T=1.0):
    # The next-word distribution softmax(scores / T) as bars.
    probs = torch.softmax(candidate_scores / T, dim=-1)
    return plot_distributions({f"T = {T:g}": probs}, labels=candidates, xlabel="next word",
                              title=f'"A dog runs across the ...", T = {T:g}', annotate=True)


temperature_view()
""")

md(r"""
In a running notebook, the cell below gives you a slider for $T$ (from 0.01 to 100); press **Draw**.
Watch "grass" take everything as $T$ falls and the bars flatten as $T$ grows.
""")

code(r"""
from ipywidgets import FloatLogSlider, interact_manual

t_slider = FloatLogSlider(value=1.0, base=10, min=-2, max=2, step=0.05, description="T")
_ = interact_manual.options(manual_name="Draw")(lambda T: display(temperature_view(T)), T=t_slider)
""", tags=["nbval-ignore-output", "remove-output"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 5. Numerical stability

The formula as written breaks on large scores. A `float32` number (PyTorch's default) cannot exceed about
$3.4 \times 10^{38}$, which is $e^{88.72}$; a `float64` stops at $e^{709.78}$. Beyond that, `exp` returns
`inf`, and $\infty / \infty$ is `nan`, *not a number*. Scores of 1000 are not exotic: a long dot product, a
small temperature or an untrained model produces them. With $z = [1000, 1001, 1002]$ in `float32`
(NumPy would also print a `RuntimeWarning`; we silence it to show the values):
""")

code(r"""
z_big = np.array([1000.0, 1001.0, 1002.0], dtype=np.float32)
with np.errstate(over="ignore", invalid="ignore"):    # silence NumPy's overflow warnings
    e_big = np.exp(z_big)
    naive = e_big / e_big.sum()
print("exp(z) =", e_big)
print("naive softmax(z) =", naive)
""")

code(r"""
f32_limit = float(np.log(np.finfo(np.float32).max))
f64_limit = float(np.log(np.finfo(np.float64).max))
with np.errstate(over="ignore"):
    below, above = np.exp(np.float32(88.7)), np.exp(np.float32(88.8))
print(f"float32: largest value {np.finfo(np.float32).max:.4g} = exp({f32_limit:.5f})")
print(f"         exp(88.7) = {below:.4g}, exp(88.8) = {above}")
print(f"float64: largest value {np.finfo(np.float64).max:.4g} = exp({f64_limit:.5f})")
""")

code(r"""
assert np.isinf(e_big).all() and np.isnan(naive).all()
assert round(f32_limit, 2) == 88.72 and round(f64_limit, 2) == 709.78
assert np.isfinite(below) and np.isinf(above)
assert f"{np.finfo(np.float32).max:.2g}" == "3.4e+38"
""", tags=["remove-cell"])

md(r"""
The cure is the property from §3: subtracting a constant from every score changes nothing, so subtract the
**largest** score, $m = \max_j z_j$:

$$
\sigma(z)_i = \frac{e^{z_i - m}}{\sum_j e^{z_j - m}} .
$$

Now the largest exponent is $e^0 = 1$, nothing can overflow, and the denominator is at least 1, so
nothing divides by zero either (the scores far below the maximum underflow to 0, which is harmless).
""")

code(r"""
shifted = z_big - z_big.max()                           # [-2, -1, 0]
stable = np.exp(shifted) / np.exp(shifted).sum()
print("z - max(z)        =", shifted)
print("stable softmax(z) =", stable)
print("torch.softmax     =", torch.softmax(torch.from_numpy(z_big), dim=-1).numpy())
""")

code(r"""
assert shifted.tolist() == [-2, -1, 0]
assert np.allclose(stable, [0.09003, 0.24473, 0.66524], atol=5e-6)
assert np.allclose(torch.softmax(torch.from_numpy(z_big), dim=-1).numpy(), stable, atol=1e-6)
assert stable.dtype == np.float32 and np.isfinite(stable).all()
""", tags=["remove-cell"])

md(r"""
$[0.09003, 0.24473, 0.66524]$, the same as the softmax of $[-2, -1, 0]$; `torch.softmax` does the
subtraction internally. The same trick gives the **log-sum-exp**, $\log \sum_j e^{z_j} = m + \log \sum_j
e^{z_j - m}$, which `torch.logsumexp` computes stably; $\log \sigma(z)_i = z_i - \operatorname{logsumexp}(z)$
is `torch.log_softmax`; the cross-entropy loss that trains the models (`F.cross_entropy`) computes it
this way.
""")

code(r"""
z_big64 = torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64)
lse = torch.logsumexp(z_big64, dim=-1)
print(f"logsumexp(z) = {lse.item():.5f}   naive: log(sum(exp(z))) = {torch.exp(z_big64).sum().log().item()}")
print("z - logsumexp(z) =", (z_big64 - lse).numpy())
print("torch.log_softmax =", torch.log_softmax(z_big64, dim=-1).numpy())
""")

code(r"""
assert round(lse.item(), 5) == 1002.40761
assert torch.isinf(torch.exp(z_big64).sum().log())
assert torch.allclose(torch.log_softmax(z_big64, dim=-1), z_big64 - lse)
assert (z_big64 - lse).numpy().round(5).tolist() == [-2.40761, -1.40761, -0.40761]
""", tags=["remove-cell"])

md(r"""
One more consequence that the attention chapters rely on: a score of $-\infty$ gets probability exactly 0,
because $e^{-\infty} = 0$. That is how a **mask** hides a word from attention (seed 001 writes $-\infty$ as
$-10^{10}$, which gives the same 0):
""")

code(r"""
print(torch.softmax(torch.tensor([0.5, 0.8, float("-inf")]), dim=-1))
print(torch.softmax(torch.tensor([0.5, 0.8, -1e10]), dim=-1))
""")

code(r"""
masked = torch.softmax(torch.tensor([0.5, 0.8, float("-inf")]), dim=-1)
assert masked[2] == 0 and np.allclose(masked.numpy(), [0.42556, 0.57444, 0.0], atol=5e-6)
assert torch.equal(torch.softmax(torch.tensor([0.5, 0.8, -1e10]), dim=-1), masked)
""", tags=["remove-cell"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 6. Tokens

A model cannot read text; it reads numbers. **Tokenisation** (分词) cuts the text into units, **tokens**,
and a **vocabulary** gives each token an id. Seed 001's sentence is 我爱机器学习 (*I love machine
learning*). Chinese is written without spaces, so a word segmenter decides where the words end; seed 001's
tokenizer gives four tokens, 我 / 爱 / 机器 / 学习 (*I / love / machine / learning*), which become the
four vectors $x_1, \dots, x_4$. Three ways to cut the same sentence:

- **words**: the seed's four tokens (written down here, not computed: a segmenter is a model of its own);
- **characters**: `list(...)` gives one token per character;
- **sub-words**: pieces between the two, learned from data (below).
""")

code(r"""
sentence = "我爱机器学习"
word_tokens = ["我", "爱", "机器", "学习"]                 # seed 001's segmentation
char_tokens = list(sentence)
english = "I love machine learning"
print("words:     ", word_tokens, "          ", english.split())
print("characters:", char_tokens, "", len(list(english)), "characters in English (spaces included)")
vocab = {token: i for i, token in enumerate(word_tokens)}  # a toy vocabulary
print("vocabulary:", vocab, "-> ids", [vocab[t] for t in word_tokens])
""")

code(r"""
assert "".join(word_tokens) == sentence and len(char_tokens) == 6 and len(list(english)) == 23
assert [vocab[t] for t in word_tokens] == [0, 1, 2, 3]
""", tags=["remove-cell"])

md(r"""
Each choice has a cost. A **word** vocabulary must list every word it will ever meet: a new word (a name,
a typo, a compound such as the German *Antriebsradsystem*) has no id. A **character** vocabulary is small
and complete, but sentences become long (6 tokens instead of 4 here; 23 instead of 4 in English), and
attention's cost grows with the square of the length. **Sub-word** tokenizers keep frequent words
whole and split rare words into frequent pieces, so nothing is out of vocabulary and sequences stay short.
Seed 001 shows two commercial tokenizers (Doubao's and DeepSeek-R1's) splitting the same text differently:
every model has its own.

### The book's tokenizer: byte-pair encoding on Multi30k

The book translates German into English on **Multi30k**, 29,000 German–English pairs of image
descriptions. Its tokenizer, `lib.tokenize.multi30k_tokenizer()`, uses **byte-pair encoding** (BPE,
Sennrich et al. 2016): start from single characters and merge the most frequent adjacent pair into a new
token, again and again, until the vocabulary has 8,000 tokens. One vocabulary serves both languages (they
share names, numbers and many pieces). The first four ids are reserved for **special tokens**: `<pad>`
fills short sentences up to the batch's length, `<s>` and `</s>` mark the start and end of a sentence, and
`<unk>` stands for a character never seen in training.
""")

code(r"""
tokenizer = multi30k_tokenizer()
print("vocabulary size:", tokenizer.get_vocab_size())
print("special tokens: ", {t: tokenizer.token_to_id(t) for t in SPECIAL_TOKENS})
""")

code(r"""
assert tokenizer.get_vocab_size() == 8000
assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
assert SPECIAL_TOKENS == ("<pad>", "<s>", "</s>", "<unk>") and (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
""", tags=["remove-cell"])

md(r"""
The first training pair, cut into sub-words, turned into ids, and decoded back:
""")

code(r"""
train_pairs = load_multi30k("train")
german, english_sentence = train_pairs[0]
for text in (german, english_sentence):
    ids = encode(tokenizer, text)
    print(text)
    print("  pieces:", tokens(tokenizer, text))
    print("  ids:   ", ids)
    print("  decode(ids) == text:", decode(tokenizer, ids) == text)
""")

code(r"""
assert len(train_pairs) == 29_000
assert german == "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche."
assert tokens(tokenizer, german)[-5:] == ["▁viel", "er", "▁Bü", "sche", "."]
assert len(encode(tokenizer, german)) == 15 and len(encode(tokenizer, english_sentence)) == 11
assert tokens(tokenizer, english_sentence)[:3] == ["▁Two", "▁young", ","]
for text in (german, english_sentence):
    assert decode(tokenizer, encode(tokenizer, text)) == text
""", tags=["remove-cell"])

md(r"""
The character **▁** marks the start of a word: it stands for the space before it (the first word gets one
too). A piece without ▁ continues the word before it: *vieler* is ▁viel + er and *Büsche* is ▁Bü + sche,
while frequent words such as ▁Männer are single tokens. Punctuation is a piece of its own. Because the
spaces are stored in the pieces, `decode` restores the sentence exactly: 12 German words became 15 tokens,
9 English words 11.

The vocabulary reflects what it was trained on: descriptions of photos. Seed 001's sentences fare badly:
""")

code(r"""
for text in (english, sentence):
    print(f"{text!r:27} -> {tokens(tokenizer, text)}  ids {encode(tokenizer, text)}")
print("decode of the Chinese ids:", repr(decode(tokenizer, encode(tokenizer, sentence))))
""")

code(r"""
assert tokens(tokenizer, english) == ["▁I", "▁lo", "ve", "▁machine", "▁le", "ar", "ning"]
assert encode(tokenizer, sentence)[1:] == [UNK_ID] * 6
assert decode(tokenizer, encode(tokenizer, sentence)) == ""
assert len(german.split()) == 12 and len(english_sentence.split()) == 9
""", tags=["remove-cell"])

md(r"""
*love* and *learning* are rare in image captions, so they are split (▁lo + ve, ▁le + ar + ning), and the
Chinese characters never occurred at all: each becomes `<unk>` (id 3), and the sentence is lost. A
tokenizer for Chinese would be trained on Chinese text.

How much longer do sentences get? Measured on the 1,014 validation pairs, with the punctuation around each
space-separated word stripped to count words:
""")

code(r"""
val_pairs = load_multi30k("val")
pieces_per_word = {}
for side, language in enumerate(("German", "English")):
    sentences = [pair[side] for pair in val_pairs]
    per_sentence = [len(encode(tokenizer, s)) for s in sentences]
    words_in = [w.strip(string.punctuation) for s in sentences for w in s.split()]
    per_word = [len(tokens(tokenizer, w)) for w in words_in if w]
    pieces_per_word[language] = Counter(min(n, 4) for n in per_word)
    print(f"{language:8s} {np.mean(per_sentence):.2f} sub-words per sentence, "
          f"{np.mean([len(s.split()) for s in sentences]):.2f} words; "
          f"{np.mean([n > 1 for n in per_word]):.1%} of {len(per_word):,} words split into >1 piece")
plot_distributions(
    {language: [count[n] / sum(count.values()) for n in (1, 2, 3, 4)] for language, count in pieces_per_word.items()},
    labels=["1", "2", "3", "4 or more"], xlabel="pieces per word", ylabel="fraction of words",
    title="Multi30k validation: how many sub-words a word becomes",
)
""")

code(r"""
stats = {}
for side, language in enumerate(("German", "English")):
    sentences = [pair[side] for pair in val_pairs]
    words_in = [w for w in (w.strip(string.punctuation) for s in sentences for w in s.split()) if w]
    split = np.mean([len(tokens(tokenizer, w)) > 1 for w in words_in])
    stats[language] = (round(float(np.mean([len(encode(tokenizer, s)) for s in sentences])), 2),
                       round(float(np.mean([len(s.split()) for s in sentences])), 2),
                       round(float(split), 3), len(words_in))
assert len(val_pairs) == 1014
assert stats == {"German": (15.31, 11.41, 0.118, 11567), "English": (14.47, 12.0, 0.07, 12166)}, stats
assert round(15.31 / 11.41 - 1, 2) == 0.34 and round(14.47 / 12.0 - 1, 2) == 0.21
# the last exercise's solution: frequent words are single tokens, an emoji is <unk>
assert tokens(tokenizer, "A dog plays.")[1] == "▁dog" and tokens(tokenizer, "Ein Hund spielt.")[1] == "▁Hund"
assert UNK_ID in encode(tokenizer, "A dog plays 🐶.")
assert len(tokens(tokenizer, "Antriebsradsystem")) > 1 and len(tokens(tokenizer, "learning")) > 1
assert tokens(tokenizer, "Spielhaus") == ["▁Spiel", "haus"]
""", tags=["remove-cell"])

md(r"""
German sentences have fewer words than their English translations (11.41 against 12.00 on average) but
more sub-words (15.31 against 14.47): 11.8% of German words are split into two or more pieces, only 7.0% of
English ones. German compounds (*Antriebsradsystem*, *Spielhaus*) and its inflected endings are the
reason. Either way, most words stay whole: a German sentence has 34% more tokens than words, an English
one 21% more, far fewer than one token per character would give.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 7. Embeddings: a table lookup

The model turns each id into a vector with an **embedding** table: a `(vocab_size, d_model)` matrix of
learned numbers, one row per token. Looking up id $i$ returns row $i$. The same thing can be written as a
matrix product: the **one-hot** vector of $i$ (all zeros except a 1 at position $i$) times the table picks
out row $i$. Seed 001's $E_1 = [1, 0, 0, 0]$ is exactly such a one-hot vector, for token 0 (我) of a
four-word vocabulary.

PyTorch's `nn.Embedding(vocab_size, d_model)` stores the table as its `weight` and does the lookup without
multiplying by all those zeros. On seed 001's four tokens:
""")

code(r"""
ids = torch.tensor([[0, 1, 2, 3]])                  # (batch, seq_len) = (1, 4): 我 爱 机器 学习
embedding = nn.Embedding(4, 4)                      # vocab_size = 4, d_model = 4, random (seeded) rows
looked_up = embedding(ids)                          # (1, 4, 4)
one_hot = F.one_hot(ids, num_classes=4).float()     # (1, 4, 4): row t is the one-hot vector of token t
print("one-hot of 我:", one_hot[0, 0])
print("lookup shape:", tuple(looked_up.shape))
torch.testing.assert_close(one_hot @ embedding.weight, looked_up)
print("one_hot(ids) @ weight == embedding(ids): True")
""")

md(r"""
With the real vocabulary the one-hot vectors have 8,000 entries, of which one is 1, which is why nobody
multiplies. The capstone's model has $d_\text{model} = 128$, so its table holds 8,000 × 128 = 1,024,000
learned numbers. Below, a table of that size (with random rows) embeds the German sentence of §6:
""")

code(r"""
config = TransformerConfig.multi30k(tokenizer.get_vocab_size())
big_table = nn.Embedding(config.src_vocab_size, config.d_model)
german_ids = torch.tensor([encode(tokenizer, german)])                      # (1, 15)
E = big_table(german_ids)                                                   # (1, 15, 128)
print("ids:", tuple(german_ids.shape), "-> embeddings:", tuple(E.shape), "  table:", tuple(big_table.weight.shape),
      f"= {big_table.weight.numel():,} numbers")
torch.testing.assert_close(F.one_hot(german_ids, config.src_vocab_size).float() @ big_table.weight, E)
""")

code(r"""
assert config.d_model == 128 and config.src_vocab_size == 8000 and big_table.weight.numel() == 1_024_000
assert E.shape == (1, 15, 128)
assert F.one_hot(torch.tensor(0), 4).tolist() == E1.tolist()     # seed 001's E1 is the one-hot vector of id 0
""", tags=["remove-cell"])

md(r"""
The embedding says *what* a token is, not *where* it stands: 我 gets the same row at the start of a
sentence and at its end. Seed 001 therefore adds a position vector, $x = E + P$, as in §1's
$x_1 = E_1 + P_1$. $P$ has one row per position, shape `(seq_len, d_model)`, and broadcasting adds it to
every sentence of the batch. With the sinusoidal position table from `lib` (the chapter
{doc}`positional_encoding` builds it, explains it, and shows why the Transformer also multiplies $E$ by
$\sqrt{d_\text{model}}$ first):
""")

code(r"""
P = sinusoidal_positional_encoding(german_ids.size(1), config.d_model)     # (15, 128)
x = E + P                                                                   # (1, 15, 128) + (15, 128)
print("E:", tuple(E.shape), "+ P:", tuple(P.shape), "-> x:", tuple(x.shape))
""")

code(r"""
assert x.shape == (1, 15, 128)
torch.testing.assert_close(x[0, 3], E[0, 3] + P[3])
""", tags=["remove-cell"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Summary

- Tokens are vectors; a layer multiplies them by a matrix. Seed 001's $W x_1 = [0.82, 1.07]$, with shapes
  $(m \times n)(n \times k) \to (m \times k)$. The book stores tokens as rows, `(batch, seq_len, d_model)`,
  and applies a layer as `x @ W.T`, as `nn.Linear` does.
- The dot product measures similarity (and grows with length); a matrix of dot products such as `V @ V.T`
  is the shape of attention's scores.
- Softmax turns scores into probabilities: $[0.5, 0.8, 0.6] \to [0.28943, 0.39069, 0.31987]$. Its outputs
  are positive, sum to 1, keep the order, and do not change when a constant is added.
- A temperature $T$ sharpens ($T < 1$, towards one-hot) or flattens ($T > 1$, towards uniform) the
  distribution; $\sqrt{d_k}$ in attention is one.
- Compute softmax after subtracting the maximum score: `exp` overflows above about 88.7 in `float32`.
  `torch.softmax`, `torch.log_softmax` and `torch.logsumexp` do this for you; $-\infty$ gives exactly 0.
- Text becomes tokens: words, characters or sub-words. The book's BPE tokenizer has 8,000 sub-words shared
  by German and English, ids 0–3 for `<pad>`, `<s>`, `</s>`, `<unk>`, and ▁ for "a word starts here".
- An embedding is a table lookup, equal to one-hot × table; the Transformer's input is embedding plus
  position vector.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Exercises

Each exercise ends with a call to `check`, which tests your answer and prints ✅ or a hint.
""")

md(r"""
:::{exercise}
:label: prelim-matvec

Write `matvec(W, x)` that multiplies a matrix `W` (a list of $m$ rows, each a list of $n$ numbers) by a
vector `x` (a list of $n$ numbers) **with loops, without `@`**, and returns the $m$ results. When `x` does
not have $n$ entries, raise a `ValueError` (seed 001: the product is then not defined). Seed 001's
`W` and `x1` must give $[0.82, 1.07]$. Finish with `check("matvec", matvec)`.
:::
""")

solution("prelim-matvec", r"""
def matvec(W, x):
    result = []
    for row in W:
        if len(row) != len(x):
            raise ValueError(f"W has {len(row)} columns but x has {len(x)} entries")
        result.append(sum(w_ij * x_j for w_ij, x_j in zip(row, x)))   # row i of W · x
    return result


print([round(v, 5) for v in matvec(W.tolist(), x1.tolist())])
assert check("matvec", matvec)  # prints ✅; the assert makes `make test` fail if this solution ever stops passing
""")

md(r"""
:::{exercise}
:label: prelim-softmax-stable

Write `softmax(z)` for a 1-D NumPy array `z`, using only NumPy, that returns seed 001's
$[0.28943, 0.39069, 0.31987]$ for $z = [0.5, 0.8, 0.6]$ and survives $z = [1000, 1001, 1002]$ (and
$z = [-1000, -1000, -1000]$: why does the naive formula fail there?). Finish with
`check("softmax_stable", softmax)`.
:::
""")

solution("prelim-softmax-stable", r"""
def softmax(z):
    e = np.exp(z - z.max())          # the largest exponent is exp(0) = 1: no overflow, sum >= 1
    return e / e.sum()


print(softmax(np.array([1000.0, 1001.0, 1002.0])), softmax(np.array([-1000.0, -1000.0, -1000.0])))
assert check("softmax_stable", softmax)
""")

md(r"""
For $[-1000, -1000, -1000]$ the naive formula computes $e^{-1000}$, which **underflows** to 0 for every
entry, and $0 / 0$ is `nan`. After subtracting the maximum, every exponent is $e^0 = 1$ and the answer is
the uniform $[1/3, 1/3, 1/3]$.
""")

md(r"""
:::{exercise}
:label: prelim-temperature

Write `softmax_t(z, T)` that returns $\sigma(z / T)$ for a 1-D NumPy array `z` and a temperature $T > 0$.
It must also work for $T = 0.001$ with seed 001's scores. Finish with
`check("softmax_temperature", softmax_t)`.
:::
""")

solution("prelim-temperature", r"""
def softmax_t(z, T):
    scaled = z / T                   # divide the scores, not the probabilities
    e = np.exp(scaled - scaled.max())
    return e / e.sum()


print(softmax_t(np.array(Z), 0.001), softmax_t(np.array(Z), 100.0))
assert check("softmax_temperature", softmax_t)
""")

md(r"""
:::{exercise}
:label: prelim-one-hot

Write `one_hot(ids, vocab_size)` that returns the `(len(ids), vocab_size)` matrix whose row $t$ is the
one-hot vector of `ids[t]` (a NumPy array or a tensor, without `F.one_hot`). Then check on seed 001's ids
`[0, 1, 2, 3]` that `one_hot(ids, 4) @ embedding.weight` equals `embedding(torch.tensor(ids))`. Finish with
`check("one_hot", one_hot)`.
:::
""")

solution("prelim-one-hot", r"""
def one_hot(ids, vocab_size):
    m = torch.zeros(len(ids), vocab_size)
    m[torch.arange(len(ids)), torch.tensor(ids)] = 1.0    # row t gets its 1 in column ids[t]
    return m


seed_ids = [0, 1, 2, 3]
torch.testing.assert_close(one_hot(seed_ids, 4) @ embedding.weight, embedding(torch.tensor(seed_ids)))
assert check("one_hot", one_hot)
""")

md(r"""
:::{exercise}
:label: prelim-vocabulary

Pick three English sentences of your own, tokenise them with `tokens(tokenizer, ...)` and find a word that
`multi30k_tokenizer` keeps whole in English but splits in German translation (or the other way round). Why
can the same vocabulary treat the two languages so differently? What would happen to a sentence with an
emoji?
:::

:::{solution} prelim-vocabulary
:class: dropdown

The vocabulary is shared, but the merges were learned from counts: a word that is frequent in the
training captions of one language (*dog*, *Hund*) became one token, while a word that is rare there
(*Antriebsradsystem*, *learning*) keeps only its frequent pieces. An emoji that never occurred in the
training text is an unseen character and becomes `<unk>` (id 3), so `decode` cannot give it back. Try:

```python
for text in ["A dog plays.", "Ein Hund spielt.", "A dog plays 🐶."]:
    print(tokens(tokenizer, text), decode(tokenizer, encode(tokenizer, text)))
```
:::
""")

md(r"""
## References

- Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N., Kaiser, Ł. and Polosukhin, I.
  (2017). Attention Is All You Need. *NeurIPS*. arXiv:1706.03762. §3.2.1 (softmax of scaled dot products),
  §3.4 (embeddings and softmax).
- Sennrich, R., Haddow, B. and Birch, A. (2016). Neural Machine Translation of Rare Words with Subword Units.
  *ACL*. §3.2 (joint BPE).
- Elliott, D., Frank, S., Sima'an, K. and Specia, L. (2016). Multi30K: Multilingual English-German Image
  Descriptions. *Workshop on Vision and Language*.
""")

nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, sys.argv[1])
