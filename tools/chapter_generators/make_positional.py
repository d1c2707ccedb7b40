"""Generate chapters/positional_encoding.ipynb (outputs are filled in by `make execute`).

Usage: python make_positional.py chapters/positional_encoding.ipynb
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
# Positional encoding

"我喜欢你" (*I like you*) and "你喜欢我" (*you like me*) contain the same three words; only their order
differs, and with it the meaning. Seed 001 uses this pair, seed 004 the pair 我爱你 / 你爱我 (*I love you* /
*you love me*). A recurrent network sees the order because it reads one word after the other. Self-attention
reads all words at once, and, as this chapter shows first, it cannot tell the two sentences apart at all.
The fix is the **positional encoding** (位置编码, *wèizhì biānmǎ*; seed 001 also says 位置嵌入, *position
embedding*): a vector that depends only on the position, added to each word's embedding before the first
layer.

In this chapter you will

1. see that self-attention without positions is *permutation-equivariant*;
2. build the sinusoidal encoding of Vaswani et al. (2017) step by step, and check seed 001's worked table;
3. look at it as a picture (seed 000's 50 × 128 figure), as waves, and as similarities between positions;
4. verify that "k positions later" is one fixed linear map, $PE(pos + k) = M_k \cdot PE(pos)$ (seed 004);
5. see why embeddings are multiplied by $\sqrt{d_\text{model}}$ before the encoding is added (seed 004);
6. compare with the *learned* position embeddings of BERT and GPT, and meet relative and rotary encodings.
""")

code(r"""
%matplotlib inline
import inspect
import math

import numpy as np
import torch
from IPython.display import Code, display
from torch import nn

from lib.attention import MultiHeadAttention
from lib.exercises import check
from lib.plots import plot_attention, plot_curves, plot_positional_encoding
from lib.positional import PositionalEncoding, sinusoidal_positional_encoding
from lib.transformer import Transformer, TransformerConfig

# The knobs of this chapter.
SEED = 0
D_MODEL = 128  # width of seed 000's figure
MAX_LEN = 50   # positions in seed 000's figure
torch.manual_seed(SEED)
np.set_printoptions(precision=5, suppress=True, floatmode="fixed", linewidth=110)


def legend_outside(fig):
    # plot_curves draws its legend inside the axes, where it hides full-height waves; move it to the right.
    fig.axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 1. Self-attention does not see order

For a query word $i$, self-attention returns $\sum_j \text{softmax}_j(q_i \cdot k_j / \sqrt{d_k})\, v_j$:
a weighted sum over the *set* of keys. Nothing in it refers to where a key stands. Shuffle the input words
and every query still meets the same keys with the same scores, so the outputs are shuffled in the same way
and are otherwise unchanged. For a permutation matrix $P$,

$$
\text{SelfAttention}(P X) = P\, \text{SelfAttention}(X),
$$

self-attention is **permutation-equivariant**. Let us check it with `lib`'s `MultiHeadAttention` on the
two sentences: the three words get random (seeded) embeddings, sentence A is 我 喜欢 你 and sentence B
is 你 喜欢 我. We compare the output vector of 我 (*I*): word 0 of A, word 2 of B.
""")

code(r"""
d_small = 16
embed = nn.Embedding(3, d_small)                    # one random vector per word: 我 (I), 喜欢 (like), 你 (you)
attn = MultiHeadAttention(d_small, num_heads=2).eval()
sentence_a = torch.tensor([[0, 1, 2]])              # 我 喜欢 你: "I like you"
sentence_b = torch.tensor([[2, 1, 0]])              # 你 喜欢 我: "you like me"


def self_attention(ids, add_positions):
    x = embed(ids)                                  # (1, 3, d_small)
    if add_positions:
        x = x + sinusoidal_positional_encoding(ids.size(1), d_small)
    out, _ = attn(x, x, x)                          # (1, 3, d_small)
    return out[0]


gaps = {}
with torch.no_grad():
    for add in (False, True):
        out_a, out_b = self_attention(sentence_a, add), self_attention(sentence_b, add)
        gaps[add] = (out_a[0] - out_b[2]).abs().max().item()   # 我 is word 0 of A and word 2 of B
        print(f"positional encoding {'on ' if add else 'off'}: the vectors of 我 in A and in B "
              f"differ by at most {gaps[add]:.4f}")
""")

code(r"""
with torch.no_grad():
    out_a, out_b = self_attention(sentence_a, False), self_attention(sentence_b, False)
assert torch.allclose(out_b, out_a[[2, 1, 0]], atol=1e-6)   # the whole output is just reordered
assert gaps[False] < 1e-6 and gaps[True] > 0.05
""", tags=["remove-cell"])

md(r"""
Without positions, 我 gets exactly the same vector whether it is the subject or the object: the model
cannot tell "I like you" from "you like me". (The library's tests check the same property for random
inputs and permutations.) With the encoding added, the two vectors differ, because 我 now carries
"position 0" in one sentence and "position 2" in the other.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 2. The sinusoidal encoding

Vaswani et al. (2017, §3.5) give every position $pos = 0, 1, 2, \dots$ a vector of the model's width
$d_\text{model}$, filled pair by pair with a sine and a cosine (seeds 000 and 001):

$$
PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_\text{model}}}\right), \qquad
PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_\text{model}}}\right),
\qquad i = 0, 1, \dots, \tfrac{d_\text{model}}{2} - 1 .
$$

- $i$ counts the **(sin, cos) pairs**: column $2i$ holds the sine, column $2i+1$ the cosine of the same
  angle. (Seed 001 writes the position as $t$ inside the fraction; it is the same $pos$.)
- Pair $i$ turns with the angular frequency $\omega_i = 10000^{-2i/d_\text{model}}$: pair 0 once every
  $2\pi \approx 6.28$ positions, each later pair $10000^{2/d_\text{model}}$ times more slowly.
- The vector is **added** to the word's embedding, which has the same width, so the input to the first
  layer is $x_{pos} = \sqrt{d_\text{model}}\, E(\text{word}) + PE(pos)$ (the factor is §7's topic).

Seed 001 computes the table for its example 我 / 爱 / 机器 / 学习 (*I / love / machine / learning*): $n = 4$
positions, $d_\text{model} = 8$. Its loop, step by step:
""")

code(r"""
# Seed 001's NumPy loop. Careful: its `i` runs over the even columns 0, 2, 4, 6, so it is the 2i of the formula.
n, d_model = 4, 8
table_loop = np.zeros((n, d_model))
for pos in range(n):
    for i in range(0, d_model, 2):
        table_loop[pos, i] = np.sin(pos / (10000 ** (i / d_model)))      # even column 2i: sine
        table_loop[pos, i + 1] = np.cos(pos / (10000 ** (i / d_model)))  # odd column 2i+1: cosine of the same angle
print(table_loop)
""")

md(r"""
The library computes the same table without loops: one column vector of positions, one row vector of the
exponents $2i / d_\text{model}$, and broadcasting makes the `(max_len, d_model / 2)` matrix of angles.
""")

code(r"""
display(Code(inspect.getsource(sinusoidal_positional_encoding), language="python"))
""")

code(r"""
pe_4x8 = sinusoidal_positional_encoding(4, 8)
print(pe_4x8.numpy())
print("same as the loop:", np.allclose(pe_4x8.numpy(), table_loop, atol=1e-6))
""")

code(r"""
# Seed 001's printed 4 × 8 matrix (5 decimals).
seed_001_table = np.array([
    [0, 1, 0, 1, 0, 1, 0, 1],
    [0.84147, 0.54030, 0.09983, 0.99500, 0.01000, 0.99995, 0.00100, 1.00000],
    [0.90930, -0.41615, 0.19867, 0.98007, 0.02000, 0.99980, 0.00200, 1.00000],
    [0.14112, -0.98999, 0.29552, 0.95534, 0.03000, 0.99955, 0.00300, 1.00000],
])
assert np.allclose(pe_4x8.numpy(), seed_001_table, atol=6e-6, rtol=0)
assert np.allclose(pe_4x8.numpy(), table_loop, atol=1e-6)
# the worked entries of the derivation
assert abs(pe_4x8[1, 0] - 0.84147) < 6e-6 and abs(pe_4x8[1, 1] - 0.54030) < 6e-6
assert abs(pe_4x8[1, 2] - 0.0998334) < 1e-7 and abs(pe_4x8[1, 3] - 0.99500) < 6e-6
# the corrected labels: for pos = 0, i = 3 gives columns 6 and 7
assert pe_4x8[0, 6] == 0.0 and pe_4x8[0, 7] == 1.0
assert pe_4x8[0].tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
""", tags=["remove-cell"])

md(r"""
All 32 entries agree with seed 001's matrix to its five decimals, including the worked entries
$PE(1,0) = \sin 1 \approx 0.84147$, $PE(1,1) = \cos 1 \approx 0.54030$, $PE(1,2) \approx 0.0998334$ and
$PE(1,3) \approx 0.99500$. Row 0 is $[0, 1, 0, 1, 0, 1, 0, 1]$: every angle is 0.

:::{note}
In seed 001's derivation for $pos = 0$, the two entries for $i = 3$ are labelled $PE(0,4)$ and $PE(0,5)$;
they are $PE(0,6) = \sin 0 = 0$ and $PE(0,7) = \cos 0 = 1$ (columns $2i = 6$ and $2i+1 = 7$), as
`pe_4x8[0, 6]` and `pe_4x8[0, 7]` above show. The values are right; only the labels repeat those of
$i = 2$. Likewise the range "$0 \le i \le D/2$" should end at $D/2 - 1$: $i = D/2$ would address column $D$,
which does not exist.
:::
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 3. The whole table as a picture

Seed 000 shows the encoding for a sentence of up to 50 positions in 128 dimensions. Here it is, computed
by `lib`; each **row** is one position's vector (seed 000 describes its figure with one column per token:
the same table, transposed).
""")

code(r"""
pe_table = sinusoidal_positional_encoding(MAX_LEN, D_MODEL)        # (50, 128)
plot_positional_encoding(pe_table, title=f"Sinusoidal PE: {MAX_LEN} positions × {D_MODEL} dimensions")
""")

code(r"""
t = pe_table.double()
pattern = torch.tensor([0.0, 1.0]).repeat(D_MODEL // 2)            # sin 0, cos 0, sin 0, cos 0, ...
assert (t[:, 96:] - pattern[96:]).abs().max() < 0.05               # the last 32 columns barely move
assert (t[:, 64:] - pattern[64:]).abs().max() > 0.4                # ... while column 64 still does
dist = torch.cdist(t, t) + torch.eye(MAX_LEN) * 1e9
neighbour = (t[1:] - t[:-1]).norm(dim=1)
assert abs(dist.min() - 1.95) < 0.005 and (neighbour - neighbour[0]).abs().max() < 1e-6
assert torch.allclose(dist.min(dim=1).values[1:-1], neighbour[1:], atol=1e-6)  # nearest = a neighbour
""", tags=["remove-cell"])

md(r"""
The left columns (the fast pairs) flip between red and blue from one row to the next; further right the
waves get longer, and the last 32 columns stay within 0.05 of $(\sin 0, \cos 0) = (0, 1)$ for all 50
positions: those slow pairs only start to matter in much longer sequences. Every row is different — seed
004 calls it each position's "waveform signature" (波形签名) — and the nearest row to any row is one of its
neighbours, at the same distance 1.95 everywhere in the table: one step along the sentence is the same
move wherever it happens (§6 shows why).
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 4. Each dimension is a wave

Read one column of the table from top to bottom and you get a sine (or cosine) of the position. Its
wavelength is $\lambda_i = 2\pi / \omega_i = 2\pi \cdot 10000^{2i/d_\text{model}}$ positions, so the
wavelengths grow geometrically across the columns. Three sine columns of the 128-wide encoding, over 100
positions (the encoding exists only at whole positions; the lines join those points):
""")

code(r"""
positions = torch.arange(100)
pe_100 = sinusoidal_positional_encoding(100, D_MODEL)
wavelength = lambda dim, d_model: 2 * math.pi * 10000 ** ((dim - dim % 2) / d_model)
legend_outside(plot_curves(
    {f"dim {dim}, wavelength {wavelength(dim, D_MODEL):.1f}": (positions, pe_100[:, dim]) for dim in (8, 16, 32)},
    xlabel="position", ylabel="PE(pos, dim)", title=f"Three sine columns, d_model = {D_MODEL}",
    figsize=(7, 3),
))
""")

code(r"""
assert abs(wavelength(0, 128) - 6.28) < 0.005 and abs(wavelength(16, 128) - 19.87) < 0.005
assert abs(wavelength(8, 128) - 11.17) < 0.005 and abs(wavelength(1, 128) - wavelength(0, 128)) < 1e-12
assert abs(wavelength(32, 128) - 62.83) < 0.005
assert abs(10000 ** (2 / 128) - 1.155) < 0.0005
assert abs(wavelength(126, 128) - 54410) < 1 and abs(wavelength(510, 512) - 60611) < 1
assert torch.allclose(pe_100[:, 0], torch.sin(positions.double()).float(), atol=1e-6)
""", tags=["remove-cell"])

md(r"""
Dimension 8 repeats every 11.17 positions, dimension 16 every 19.87, dimension 32 every
$20\pi \approx 62.83$. The fastest, dimension 0, repeats every $2\pi \approx 6.28$ positions (too fast to draw
clearly at whole positions); from one pair to the next the wavelength grows by the factor
$10000^{2/128} \approx 1.155$. Dimension $2i+1$ (not drawn) is the cosine partner of dimension $2i$, the same
wave shifted by a quarter of a wavelength. The slowest pair of the 128-wide table, $i = 63$, needs about
54,410 positions for one turn; for $d_\text{model} = 512$ the slowest needs about 60,611. (The paper says the
wavelengths run "from $2\pi$ to $10000 \cdot 2\pi$"; the last one is $2\pi \cdot 10000^{(d_\text{model}-2)/d_\text{model}}$,
just short of that.) A fast pair tells neighbouring positions apart but repeats soon; a slow pair does not
repeat within any sentence but barely changes between neighbours. Together they give each position its
own code — like the hands of a clock, from seconds to hours.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 5. Similarity between positions depends only on the offset

Attention compares vectors by dot products, so ask how similar two encodings are. For positions $p$ and
$q$, each pair contributes $\sin(\omega_i p)\sin(\omega_i q) + \cos(\omega_i p)\cos(\omega_i q)
= \cos(\omega_i (q - p))$, hence

$$
PE(p) \cdot PE(q) = \sum_{i=0}^{d_\text{model}/2 - 1} \cos\big(\omega_i\, (q - p)\big),
$$

a function of the **offset** $k = q - p$ alone, and symmetric in $k$. The matrix of all dot products is
therefore constant along every diagonal:
""")

code(r"""
pe_200 = sinusoidal_positional_encoding(200, D_MODEL).double()
similarity = pe_200 @ pe_200.T                       # (200, 200): similarity[p, q] = PE(p) · PE(q)
plot_attention(similarity[:MAX_LEN, :MAX_LEN], vmin=None, annotate=False, xlabel="position q",
               ylabel="position p", title=f"PE(p) · PE(q), d_model = {D_MODEL}")
""")

code(r"""
offsets = torch.arange(-50, 50)
plot_curves(
    {"PE(50) · PE(50 + k)": (offsets, similarity[50, 50 + offsets])},
    xlabel="offset k", ylabel="dot product", title="Similarity as a function of the offset",
)
""")

code(r"""
# the matrix is Toeplitz: similarity[p, p + k] is the same for every p
rows = torch.stack([similarity[p, p:p + 100] for p in range(100)])
assert (rows - rows[0]).abs().max() < 1e-4
assert torch.allclose(similarity, similarity.T)
sim_k = rows[0]                                      # PE(0) · PE(k), k = 0 .. 99
assert abs(sim_k[0] - 64) < 1e-4 and abs(sim_k[1] - 62.09) < 0.005 and abs(sim_k[11] - 42.34) < 0.005
assert (sim_k[1:12] < sim_k[:11]).all() and sim_k[12] > sim_k[11]
far = sinusoidal_positional_encoding(3000, D_MODEL).double()
far_sim = far[1:] @ far[0]                           # k = 1 .. 2999
assert far_sim.argmax() == 0 and abs(far_sim.max() - 62.09) < 0.005
""", tags=["remove-cell"])

md(r"""
Every position is most similar to itself ($d_\text{model}/2 = 64$: each of the 64 pairs contributes
$\cos 0 = 1$), then to its neighbours (62.09 at $k = \pm 1$). Over the first 11 offsets the similarity falls
steadily, to 42.34 at $k = 11$; after that it wobbles, but for every offset up to 2,999 it stays below the
neighbours' 62.09. The curve is the same from every starting position: the dot product "knows" how far
apart two words are, not where they are. This is what seed 004 means by letting attention notice "who is
close to whom, and how far apart" (谁离谁近、差了多少).
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 6. "k positions later" is a linear map

Seed 004 says that a shift by a fixed number of positions becomes "a fixed phase difference" in sin/cos
space, so the relation between positions 100 and 99 is the same as between 4 and 3. The angle-addition
formulas make this exact. With $a = \omega_i\, pos$ and $b = \omega_i k$,

$$
\begin{pmatrix} \sin(a + b) \\ \cos(a + b) \end{pmatrix}
= \begin{pmatrix} \cos b & \sin b \\ -\sin b & \cos b \end{pmatrix}
\begin{pmatrix} \sin a \\ \cos a \end{pmatrix},
$$

so each (sin, cos) pair of $PE(pos + k)$ is the same pair of $PE(pos)$ turned by the angle $\omega_i k$,
and stacking the pairs gives one matrix:

$$
PE(pos + k) = M_k \cdot PE(pos) \quad \text{for every } pos,
$$

where $M_k$ depends on $k$ but **not** on $pos$. We do not build $M_k$ from the formula here (that is an
exercise); we let the data find it. Least squares over the pairs $(PE(pos), PE(pos + 3))$ for
$pos = 0, \dots, 999$ and $d_\text{model} = 8$ gives:
""")

code(r"""
d, k = 8, 3
table = sinusoidal_positional_encoding(1000 + k, d).double()       # PE(0) .. PE(1002)
# rows of table[k:] = rows of table[:1000] @ M_kᵀ; solve for M_k without using any formula
M_k = torch.linalg.lstsq(table[:1000], table[k:1000 + k]).solution.T  # (d, d)
shown = M_k.round(decimals=5) + 0.0                 # rounded for display, so fitting noise is not printed as -0.00
plot_attention(shown, cmap="RdBu", vmin=-1, vmax=1, xlabel="dimension of PE(pos)",
               ylabel="dimension of PE(pos + 3)", title="M_3 for d_model = 8, found by least squares")
""")

code(r"""
later = sinusoidal_positional_encoding(6003, d).double()
error = (later[5000:6000] @ M_k.T - later[5003:6003]).abs().max()   # positions never used in the fit
print(f"M_3 · PE(pos) = PE(pos + 3) for pos = 5000 .. 5999, largest error below 1e-5: {bool(error < 1e-5)}")
""")

code(r"""
assert error < 1e-5
omega = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
for i in range(d // 2):
    c, s = math.cos(omega[i] * k), math.sin(omega[i] * k)
    block = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    assert torch.allclose(M_k[2 * i:2 * i + 2, 2 * i:2 * i + 2], block, atol=1e-6)
off_block = M_k.clone()
for i in range(d // 2):
    off_block[2 * i:2 * i + 2, 2 * i:2 * i + 2] = 0
assert off_block.abs().max() < 1e-6
assert abs(M_k[0, 0] - (-0.98999)) < 6e-6 and abs(M_k[0, 1] - 0.14112) < 6e-6
assert abs(M_k[6, 6] - 0.999996) < 6e-7 and abs(M_k[6, 7] - 0.003) < 6e-6
assert torch.allclose(M_k @ M_k.T, torch.eye(d, dtype=torch.float64), atol=1e-6)
""", tags=["remove-cell"])

md(r"""
The matrix the data chose is exactly the predicted one: zero outside the four $2 \times 2$ blocks on the
diagonal, and block $i$ is the rotation by $3\omega_i$. The first block is $\begin{pmatrix}\cos 3 & \sin 3
\\ -\sin 3 & \cos 3\end{pmatrix} \approx \begin{pmatrix}-0.98999 & 0.14112 \\ -0.14112 & -0.98999\end{pmatrix}$
(the fastest pair turns by 3 radians); the last one, for the slowest pair, is almost the identity
($\cos 0.003 \approx 0.999996$, $\sin 0.003 \approx 0.003$). Fitted on positions below 1,003, it still shifts
positions 5,000–5,999 correctly, because it never depended on the position. Being a rotation, it keeps
lengths — which is why §3 found the same distance between every pair of neighbours.

Why it matters: a linear layer can implement $M_k$. A query built from $PE(pos)$ can be turned by the
projection matrices into something that matches the key at $pos + k$, whatever $pos$ is, so a head can
learn "attend to the word 3 positions back" once for all positions. Vaswani et al. (2017, §3.5) chose the
sinusoids for this reason: "for any fixed offset $k$, $PE_{pos+k}$ can be represented as a linear function of
$PE_{pos}$".
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 7. Why the embeddings are scaled by $\sqrt{d_\text{model}}$

Before adding the encoding, the Transformer multiplies the word embeddings by $\sqrt{d_\text{model}}$
(§3.4 of the paper; seed 004, §1.2, with $\sqrt{512} \approx 22.6$ for the base model). In `lib` this is one
line of `Transformer` (`self.positional` is a `PositionalEncoding`, which adds the table and applies
dropout), and the embedding table is initialised with standard deviation $d_\text{model}^{-1/2}$:
""")

code(r"""
display(Code(inspect.getsource(Transformer._embed), language="python"))
display(Code(inspect.getsource(PositionalEncoding.forward), language="python"))
display(Code(inspect.getsource(Transformer._reset_parameters), language="python"))
""")

md(r"""
The paper gives no reason, but the sizes explain it. The embedding matrix is shared with the output layer
(§3.4), and `lib`, like common implementations, initialises it with standard deviation $d_\text{model}^{-1/2}$
so that the output scores start small: a row then has $d_\text{model}$ entries of variance $1/d_\text{model}$,
a length of about 1. The encoding's entries are sines and cosines, and each pair contributes $\sin^2 + \cos^2 = 1$, so
every $PE(pos)$ has length $\sqrt{d_\text{model}/2}$, 16 for $d_\text{model} = 512$. Added as they are, the
position would outweigh the word 16 to 1 and, in seed 004's words, "drown" (淹没) it. Scaled by
$\sqrt{512} \approx 22.6$, the word's vector has length about 22.6 and per-coordinate size about 1, the same
order as the encoding. As seed 004 stresses, the point is not to make either part bigger but to bring both
to one comfortable scale. Measured on the paper's base width with `lib`:
""")

code(r"""
config = TransformerConfig.base(vocab_size=1000, num_encoder_layers=1, num_decoder_layers=1)
model = Transformer(config).eval()                   # d_model = 512; eval(): no dropout
ids = torch.arange(1, 21)[None]                      # 20 tokens (id 0 is padding)
with torch.no_grad():
    raw = model.src_embed(ids)[0]                    # (20, 512) embedding rows as stored
    encoder_in = model._embed(ids, model.src_embed)[0]   # (20, 512) what the first encoder layer receives
pe_512 = sinusoidal_positional_encoding(20, config.d_model)
scale = math.sqrt(config.d_model)
legend_outside(plot_curves(
    {"‖E(token)‖, as stored": (torch.arange(20), raw.norm(dim=1)),
     "‖√d_model · E(token)‖": (torch.arange(20), (scale * raw).norm(dim=1)),
     "‖PE(pos)‖": (torch.arange(20), pe_512.norm(dim=1))},
    xlabel="position", ylabel="length (log scale)", title="d_model = 512: lengths of word and position vectors",
    logy=True, figsize=(7, 3),
))
""")

code(r"""
print(f"√d_model = {scale:.1f}")
print(f"mean length of an embedding row: {raw.norm(dim=1).mean():.2f} as stored, "
      f"{(scale * raw).norm(dim=1).mean():.1f} scaled; PE rows: {pe_512.norm(dim=1).mean():.1f}")
print("encoder input == √d_model · E + PE:", torch.allclose(encoder_in, scale * raw + pe_512, atol=1e-5))
""")

code(r"""
assert abs(scale - 22.6) < 0.05
assert ((raw.norm(dim=1) - 1).abs() < 0.15).all()
assert abs((scale * raw).norm(dim=1).mean() - 22.6) < 1.0
assert torch.allclose(pe_512.norm(dim=1), torch.full((20,), 16.0), atol=1e-4)
assert torch.allclose(encoder_in, scale * raw + pe_512, atol=1e-5)
assert abs((scale * raw).std() - 1) < 0.05 and abs(pe_512.pow(2).mean().sqrt() - 0.7071) < 1e-3
""", tags=["remove-cell"])

md(r"""
Every position's encoding has length exactly 16; the stored embeddings have length about 1 and the scaled
ones about 22.6. Per coordinate, the scaled embedding has standard deviation about 1 and the encoding a
root mean square of $1/\sqrt{2} \approx 0.71$: comparable, so the first layer sees both the word and its
position.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 8. Explore: width, length and one dimension

The function below draws the table for any $d_\text{model}$ and number of positions, and one chosen column
as a curve. First the default view, as on this website:
""")

code(r"""
def pe_views(d_model=64, max_len=100, dim=6):
    # Heatmap of the (max_len, d_model) table and a curve of column `dim`.
    dim = min(dim, d_model - 1)
    pe = sinusoidal_positional_encoding(max_len, d_model)
    kind = "sin" if dim % 2 == 0 else "cos"
    heat = plot_positional_encoding(pe, title=f"{max_len} positions × {d_model} dimensions", figsize=(5.5, 3))
    wave = plot_curves(
        {f"dim {dim} ({kind}), wavelength {wavelength(dim, d_model):.1f}": (torch.arange(max_len), pe[:, dim])},
        xlabel="position", ylabel="PE(pos, dim)", figsize=(7.5, 2.4),
    )
    return heat, legend_outside(wave)


display(*pe_views())
""")

md(r"""
In a running notebook, the cell below gives you sliders: choose a width, a length and a dimension, then
press **Draw**. A wider model adds slower pairs on the right; a longer table shows where the slow columns
finally start to turn. (The figures are drawn only on request, so that dragging a slider stays fast.)
""")

code(r"""
from ipywidgets import IntSlider, interact_manual

d_slider = IntSlider(value=64, min=8, max=512, step=8, description="d_model")
len_slider = IntSlider(value=100, min=10, max=400, step=10, description="max_len")
dim_slider = IntSlider(value=6, min=0, max=63, description="dimension")
d_slider.observe(lambda change: setattr(dim_slider, "max", change["new"] - 1), names="value")
interact_manual.options(manual_name="Draw")(
    lambda d_model, max_len, dim: display(*pe_views(d_model, max_len, dim)),
    d_model=d_slider, max_len=len_slider, dim=dim_slider,
);
""", tags=["nbval-ignore-output", "remove-output"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 9. Learned position embeddings (BERT, GPT)

The sinusoids are fixed; nothing about them is trained. The alternative, mentioned in seed 000 (可学习的位置编码,
*learnable positional encoding*) and used by BERT and GPT (seed 001), is a table of parameters with one
row per position, learnt like the word embeddings. BERT adds token, segment and position embeddings;
GPT-1 computes $h_0 = U W_e + W_p$ with the learned position matrix $W_p$. In PyTorch such a table is an
`nn.Embedding` indexed by the position:
""")

code(r"""
learned = {
    "BERT-base (Devlin et al. 2019)": nn.Embedding(512, 768),
    "GPT-2 small (Radford et al. 2019)": nn.Embedding(1024, 768),
}
for name, table in learned.items():
    print(f"{name}: {table.num_embeddings} positions × {table.embedding_dim} = "
          f"{table.weight.numel():,} trained parameters")
print("sinusoidal, any length: 0 parameters, e.g. a table of", tuple(sinusoidal_positional_encoding(5000, 768).shape))
try:
    learned["BERT-base (Devlin et al. 2019)"](torch.tensor([512]))   # the 513th position
except IndexError as err:
    print("BERT-base asked for position 512:", type(err).__name__)
""")

code(r"""
assert learned["BERT-base (Devlin et al. 2019)"].weight.numel() == 393_216
assert learned["GPT-2 small (Radford et al. 2019)"].weight.numel() == 786_432
""", tags=["remove-cell"])

md(r"""
| | sinusoidal (Vaswani et al. 2017) | learned (BERT, GPT) |
| --- | --- | --- |
| parameters | none | `max_len × d_model` (393,216 in BERT-base) |
| longest input | any length can be computed | fixed by the table (512 in BERT-base, 1024 in GPT-2) |
| structure | offsets are rotations (§6) | whatever training finds |
| at initialisation | already informative | random |

Vaswani et al. tried learned embeddings too and "found that the two versions produced nearly identical
results" (§3.5, Table 3 row E); they kept the sinusoids because they "may allow the model to extrapolate to
sequence lengths longer than the ones encountered during training". Seed 004 repeats that hope. In practice
a model trained on short sentences does not generalise well far beyond them even with sinusoids (Press et
al. 2022): the formula is defined for every position, but the layers have never seen those vectors.
""")

md(r"""
### Relative and rotary encodings

Later work moves position from the input into attention itself, so that scores depend on the offset by
construction rather than by what the layers learn:

- **Relative position representations** (Shaw, Uszkoreit and Vaswani 2018, "Self-Attention with Relative
  Position Representations", NAACL): a learned vector for each clipped offset $j - i$ is added to the keys
  (and values) when query $i$ attends to key $j$.
- **Rotary position embedding, RoPE** (Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
  Embedding", arXiv:2104.09864): query and key vectors are rotated pair by pair by the angle
  $\omega_i \cdot pos$ — the $M_{pos}$ of §6 — so that
  $(M_m q) \cdot (M_n k) = q \cdot M_{n-m} k$ depends on $m$ and $n$ only through the offset $n - m$. Many
  recent large language models use it.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Summary

- Self-attention is permutation-equivariant: without positions, 我喜欢你 and 你喜欢我 give the same
  word vectors in a different order.
- The sinusoidal encoding fills each (sin, cos) pair $i$ with the angle $pos / 10000^{2i/d_\text{model}}$;
  `lib.positional.sinusoidal_positional_encoding` reproduces seed 001's 4 × 8 table.
- The columns are waves whose wavelengths grow geometrically from $2\pi$ to almost $10000 \cdot 2\pi$; every
  position gets its own code, and every row has length $\sqrt{d_\text{model}/2}$.
- The dot product of two encodings depends only on their offset, and $PE(pos + k) = M_k\, PE(pos)$ with a
  rotation $M_k$ that does not depend on $pos$: relative positions are linear.
- Embeddings are multiplied by $\sqrt{d_\text{model}}$ so that word and position have the same scale.
- BERT and GPT learn a position table instead; relative and rotary encodings put the offset into attention.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Exercises

Each exercise ends with a call to `check`, which tests your answer against `lib` and prints ✅ or a hint.
""")

md(r"""
:::{exercise}
:label: pe-row

Write `pe_row(pos, d_model)` that returns one row of the encoding, $PE(pos, 0), \dots, PE(pos,
d_\text{model} - 1)$, as a list of floats, using only `math` (no `lib`). Mind which columns share a
frequency. Finish with `check("pe_row", pe_row)`; the checker starts with seed 001's row
$pos = 1$, $d_\text{model} = 8$.
:::
""")

solution("pe-row", r"""
def pe_row(pos, d_model):
    row = []
    for j in range(d_model):
        two_i = j - j % 2                           # the even column of j's (sin, cos) pair
        angle = pos / 10000 ** (two_i / d_model)
        row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
    return row


assert check("pe_row", pe_row)  # prints ✅; the assert makes `make test` fail if this solution ever stops passing
""")

md(r"""
:::{exercise}
:label: pe-norm

§7 measured that every row of the encoding has length 16 for $d_\text{model} = 512$. Derive the general
rule: write `pe_norm(d_model)` that returns $\lVert PE(pos) \rVert$ *without building the table*, and
explain why it does not depend on $pos$. Finish with `check("pe_norm", pe_norm)`.
:::
""")

solution("pe-norm", r"""
def pe_norm(d_model):
    # d_model / 2 pairs, each contributing sin² + cos² = 1 to the squared length
    return math.sqrt(d_model / 2)


assert check("pe_norm", pe_norm)
""")

md(r"""
:::{exercise}
:label: pe-shift-matrix

§6 found $M_3$ by least squares. Build $M_k$ from the formula instead: write `shift_matrix(k, d_model)` that
returns the `(d_model, d_model)` matrix with $PE(pos + k) = M_k \cdot PE(pos)$ for every $pos$ (a NumPy
array or a tensor). It should also work for negative $k$. Finish with `check("pe_shift_matrix",
shift_matrix)`.
:::
""")

solution("pe-shift-matrix", r"""
def shift_matrix(k, d_model):
    m = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        b = k / 10000 ** (2 * i / d_model)          # the angle ω_i · k
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(b), math.sin(b)],
                                               [-math.sin(b), math.cos(b)]]
    return m


assert check("pe_shift_matrix", shift_matrix)
""")

md(r"""
:::{exercise}
:label: pe-encoder-input

Write `encoder_input(emb)` that takes word embeddings of shape `(batch, seq, d_model)` (a tensor) and returns
what the first encoder layer receives (without dropout): the embeddings scaled as in §7, plus the
encoding. Use `sinusoidal_positional_encoding`, not the model. Finish with `check("encoder_input",
encoder_input)`.
:::
""")

solution("pe-encoder-input", r"""
def encoder_input(emb):
    batch, seq, d_model = emb.shape
    return emb * math.sqrt(d_model) + sinusoidal_positional_encoding(seq, d_model)  # PE broadcasts over the batch


assert check("encoder_input", encoder_input)
""")

md(r"""
:::{exercise}
:label: pe-raw-positions

Seed 004 asks what would happen if the positions were simply the numbers 1, 2, 3, 4, … Suppose we add the
raw position $pos$ to every coordinate of the embedding (or write it into one extra coordinate). Give two
reasons why this works badly, using what you saw in §5 and §7.
:::

:::{solution} pe-raw-positions
:class: dropdown

1. **Scale.** The value grows without bound: at position 100 it is 100 times larger than the embedding
   coordinates (of order 1 after §7's scaling), so it drowns the word, and sentences longer than any seen in
   training produce values the model has never met. The sinusoids stay in $[-1, 1]$ and every row has the
   same length $\sqrt{d_\text{model}/2}$.
2. **Offsets.** With a raw number, the dot product of positions $p$ and $q$ is $pq$, which depends on where
   the two words are, not only on how far apart they are, and it is largest for two late positions rather
   than for neighbours. The sinusoidal dot product depends only on $q - p$ and is largest for neighbours
   (§5), and a shift by $k$ is one fixed linear map (§6). That is what seed 004 means by "the relation of 100
   to 99 ≈ that of 4 to 3".

Dividing by the sentence length would fix the scale but not the offsets: the same step of one word would
then mean a different number in every sentence.
:::
""")

md(r"""
## References

- Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N., Kaiser, Ł. and Polosukhin, I.
  (2017). Attention Is All You Need. *NeurIPS*. arXiv:1706.03762. §3.4 (embeddings), §3.5 (positional
  encoding).
- Devlin, J., Chang, M.-W., Lee, K. and Toutanova, K. (2019). BERT: Pre-training of Deep Bidirectional
  Transformers for Language Understanding. *NAACL*.
- Radford, A., Narasimhan, K., Salimans, T. and Sutskever, I. (2018). Improving Language Understanding by
  Generative Pre-Training (GPT-1).
- Radford, A., Wu, J., Child, R., Luan, D., Amodei, D. and Sutskever, I. (2019). Language Models are
  Unsupervised Multitask Learners (GPT-2).
- Shaw, P., Uszkoreit, J. and Vaswani, A. (2018). Self-Attention with Relative Position Representations.
  *NAACL*.
- Su, J., Lu, Y., Pan, S., Murtadha, A., Wen, B. and Liu, Y. (2021). RoFormer: Enhanced Transformer with
  Rotary Position Embedding. arXiv:2104.09864.
- Press, O., Smith, N. A. and Lewis, M. (2022). Train Short, Test Long: Attention with Linear Biases Enables
  Input Length Extrapolation. *ICLR*.
""")

nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, sys.argv[1])
