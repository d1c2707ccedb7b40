"""Generate chapters/transformer.ipynb (outputs are filled in by `make execute`).

Usage: python make_transformer.py chapters/transformer.ipynb
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
# The Transformer

The previous chapters built the parts: scaled dot-product attention, multi-head attention and the
positional encoding. This chapter assembles them into the model of Vaswani et al. (2017), the
**Transformer**: an **encoder** (编码器) that reads the whole source sentence and turns it into a "searchable
memory" (seed 004: 可检索语义记忆), and a **decoder** (解码器) that writes the translation one token at a time
while looking things up in that memory.

Every layer is made of a few sub-layers, and every sub-layer is wrapped in the same two operations, a
**residual connection** (残差连接) and **layer normalisation** (层归一化): together the "Add & Norm" block
(加与规范层) of the seeds. In this chapter you will

1. map each line of seed 000's encoder- and decoder-layer equations to a line of `lib.transformer`;
2. compute LayerNorm by hand, compare it with BatchNorm on the same tensor, and compare post-LN with pre-LN;
3. reproduce seed 001's feed-forward example (160 / 416 / 672) and its whole encoder-layer walk-through
   with hand-set weights, once by hand and once with `lib`;
4. draw the padding and causal masks and contrast the decoder's self-attention with its cross-attention;
5. count the parameters of the output layer with and without weight tying;
6. go through the training recipe: warm-up, label smoothing, token-based batching and dropout;
7. reproduce seed 004's complexity table and measure what it predicts.
""")

code(r"""
%matplotlib inline
import inspect
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import Code, display
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torch import nn

from lib.attention import MultiHeadAttention, causal_mask, padding_mask, scaled_dot_product_attention
from lib.data import collate, encode_pairs, load_multi30k, token_batches
from lib.exercises import check
from lib.plots import plot_attention, plot_attention_grid, plot_curves, plot_mask
from lib.positional import sinusoidal_positional_encoding
from lib.tokenize import BOS_ID, EOS_ID, PAD_ID, multi30k_tokenizer
from lib.train import TrainConfig, label_smoothed_cross_entropy, noam_lr
from lib.transformer import DecoderLayer, EncoderLayer, PositionwiseFeedForward, Transformer, TransformerConfig

# The knobs of this chapter.
SEED = 0
BATCH_SENTENCES = 64   # sentences per batch for the fixed-size batching of §9.3
MAX_TOKENS = 3000      # token budget per batch for token-based batching (the capstone's TrainConfig.max_tokens)
EPSILON = 0.1          # label smoothing ε_ls (Vaswani et al. 2017, §5.4)
torch.manual_seed(SEED)
np.set_printoptions(precision=4, suppress=True, floatmode="fixed", linewidth=110)
torch.set_printoptions(precision=4, sci_mode=False, linewidth=110)


def legend_outside(fig):
    # plot_curves draws its legend inside the axes; move it to the right, where it hides no curve.
    fig.axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 1. The encoder layer, sub-layer by sub-layer

Seed 000 (§3.3) writes one encoder layer as three equations. With $X \in \mathbb{R}^{n \times d}$ the layer's
input (for the first layer: embeddings plus positional encoding),

$$
\begin{aligned}
Z &= \operatorname{MultiHead}(X, X, X) && \text{multi-head self-attention}\\
\tilde Z &= \operatorname{LayerNorm}(X + Z) && \text{Add \& Norm 1}\\
H &= \operatorname{LayerNorm}\big(\tilde Z + \operatorname{FFN}(\tilde Z)\big) && \text{Add \& Norm 2}
\end{aligned}
$$

"Add" is the residual connection: the sub-layer computes a *correction* that is added to its input, so
information (and, in training, the gradient) can pass straight through. "Norm" is LayerNorm (§2). Seed 001
says the same in words: each encoder layer has four modules, multi-head attention, Add & Norm, feed forward,
Add & Norm. Here is `lib`'s layer:
""")

code(r"""
display(Code(inspect.getsource(EncoderLayer.forward), language="python"))
""")

md(r"""
The `else` branch is the paper's layer ("post-LN"; §4 explains the other branch). Line by line:

| seed 000 | `EncoderLayer.forward` (post-LN) |
| --- | --- |
| $Z = \operatorname{MultiHead}(X, X, X)$ | `a, w = self.self_attn(x, x, x, mask, need_weights)` |
| $\tilde Z = \operatorname{LayerNorm}(X + Z)$ | `x = self.norm1(x + self.dropout(a))` |
| $H = \operatorname{LayerNorm}(\tilde Z + \operatorname{FFN}(\tilde Z))$ | `x = self.norm2(x + self.dropout(self.ffn(x)))` |

The only addition is `self.dropout` on each sub-layer's output before it is added, the paper's "residual
dropout" (§5.4, and §9.4 below); in evaluation mode (`.eval()`) it does nothing. Let us evaluate the three
equations ourselves with the layer's own sub-modules and compare with the layer:
""")

code(r"""
layer = EncoderLayer(d_model=8, num_heads=2, d_ff=32).eval()   # post-LN, as in the paper; eval(): no dropout
x = torch.randn(1, 5, 8)                                       # (batch, seq, d_model)
with torch.no_grad():
    z, _ = layer.self_attn(x, x, x)                            # Z = MultiHead(X, X, X)
    z_tilde = layer.norm1(x + z)                               # Z~ = LayerNorm(X + Z)
    h = layer.norm2(z_tilde + layer.ffn(z_tilde))              # H = LayerNorm(Z~ + FFN(Z~))
    out, _ = layer(x)
print("input", tuple(x.shape), "-> output", tuple(out.shape))
print("seed 000's three equations give EncoderLayer's output:", torch.allclose(h, out, atol=1e-6))
""")

code(r"""
assert torch.allclose(h, out, atol=1e-6) and out.shape == x.shape
assert not layer.norm_first
""", tags=["remove-cell"])

md(r"""
The output has the input's shape, `(batch, seq, d_model)`, so layers can be stacked: the encoder is $N$
identical layers, $N = 6$ in the paper (§8).
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 2. Layer normalisation

Seed 000 (§3.5) normalises each row $h = [h_1, \dots, h_d]$ of the $n \times d$ matrix on its own, that is
each token's vector over its $d$ features:

$$
\mu = \frac{1}{d}\sum_{i=1}^{d} h_i, \qquad
\sigma^2 = \frac{1}{d}\sum_{i=1}^{d} (h_i - \mu)^2, \qquad
\hat h_i = \frac{h_i - \mu}{\sqrt{\sigma^2 + \epsilon}}, \qquad
y_i = \gamma_i \hat h_i + \beta_i ,
$$

with learnable $\gamma, \beta \in \mathbb{R}^d$ (initialised to 1 and 0) and a small $\epsilon$ against
division by zero ($10^{-5}$ in PyTorch). Note the $\frac{1}{d}$: the variance is the *biased* one. Step by step,
on two rows of seed 001's walk-through (§6), compared with `nn.LayerNorm`, which `lib`'s layers use:
""")

code(r"""
rows = torch.tensor([[1.0, 3.0, 3.0, 5.0],
                     [5.84147098, 6.54030231, 7.00999983, 8.99995]])
eps = 1e-5
mu = rows.mean(dim=-1, keepdim=True)                            # one mean per row
var = ((rows - mu) ** 2).mean(dim=-1, keepdim=True)             # 1/d, not 1/(d-1)
h_hat = (rows - mu) / torch.sqrt(var + eps)
gamma, beta = torch.ones(4), torch.zeros(4)
y = gamma * h_hat + beta
print("mu      =", mu.squeeze(-1))
print("sigma^2 =", var.squeeze(-1))
print("y       =\n", y)
print("nn.LayerNorm agrees:", torch.allclose(y, nn.LayerNorm(4)(rows), atol=1e-6))
""")

code(r"""
assert torch.allclose(mu.squeeze(-1)[:1], torch.tensor([3.0])) and torch.allclose(var.squeeze(-1)[:1], torch.tensor([2.0]))
assert torch.allclose(y[0], torch.tensor([-1.41421, 0.0, 0.0, 1.41421]), atol=1e-4)
assert torch.allclose(y, nn.LayerNorm(4)(rows), atol=1e-6)
assert torch.allclose(y.mean(-1), torch.zeros(2), atol=1e-6) and torch.allclose(y.var(-1, unbiased=False), torch.ones(2), atol=1e-4)
""", tags=["remove-cell"])

md(r"""
The row $[1, 3, 3, 5]$ has $\mu = 3$ and $\sigma^2 = (4 + 0 + 0 + 4)/4 = 2$, so it becomes
$[-\sqrt 2, 0, 0, \sqrt 2] \approx [-1.41421, 0, 0, 1.41421]$: after LayerNorm every row has mean 0 and
variance 1 (before $\gamma$ and $\beta$ rescale it), "so that its mean and variance are stable", as seed 001
puts it.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 3. LayerNorm versus BatchNorm

Seed 001 contrasts the two normalisations. **BatchNorm** (Ioffe and Szegedy 2015) computes one mean and
variance per *feature*, over all examples of the mini-batch (and, for images, all pixels):
$y_{b,c,h,w} = \gamma_c \frac{x_{b,c,h,w} - \mu_c}{\sqrt{\sigma_c^2 + \epsilon}} + \beta_c$.
**LayerNorm** (Ba, Kiros and Hinton 2016) computes one mean and variance per *token*, over its features:
$y_{b,l,d} = \gamma_d \frac{x_{b,l,d} - \mu_{b,l}}{\sqrt{\sigma_{b,l}^2 + \epsilon}} + \beta_d$.
For text, a batch is a tensor `(batch, seq, d_model)` of sentences of different lengths, padded to the
longest. Take three sentences of 5, 3 and 2 tokens with $d = 4$ features:
""")

code(r"""
lengths = torch.tensor([5, 3, 2])
gen = torch.Generator().manual_seed(SEED)
batch = torch.randn(3, 5, 4, generator=gen) * 2 + 1             # (batch, seq, d)
is_pad = ~padding_mask(lengths)[:, 0, 0]                         # (batch, seq): True at padding
batch[is_pad] = 0.0                                              # padded positions hold zeros
layer_norm = nn.LayerNorm(4)                                     # statistics over the last axis: one per token
batch_norm = nn.BatchNorm1d(4)                                   # statistics over batch and positions: one per feature


def norm_axes_figure(x, is_pad):
    # The (batch · seq, d) matrix twice: LayerNorm's group is a row, BatchNorm's group a column.
    flat = x.reshape(-1, x.size(-1)).numpy()
    labels = [f"s{b} t{t}" + (" (pad)" if is_pad[b, t] else "") for b in range(x.size(0)) for t in range(x.size(1))]
    fig = Figure(figsize=(7.5, 4.6), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    groups = [("LayerNorm: one mean and variance\nper token (a row)", Rectangle((-0.5, 5.5), 4, 1)),
              ("BatchNorm: one mean and variance\nper feature (a column, pads included)", Rectangle((0.5, -0.5), 1, len(flat)))]
    for ax, (title, rect) in zip(axes, groups):
        im = ax.imshow(flat, cmap="RdBu_r", vmin=-5, vmax=5, aspect="auto", interpolation="nearest")
        rect.set(fill=False, edgecolor="black", linewidth=2.5)
        ax.add_patch(rect)
        ax.set_xticks(range(flat.shape[1]))
        ax.set_xlabel("feature")
        ax.set_title(title, fontsize=9)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=7)
    fig.colorbar(im, ax=axes, fraction=0.04)
    return fig


norm_axes_figure(batch, is_pad)
""")

md(r"""
Rows are tokens (`s1 t2` = sentence 1, token 2), columns features. LayerNorm normalises each row by itself;
BatchNorm normalises each column over all 15 rows, padding included. Now put the same sentence (sentence 1,
3 tokens) through both, once in this batch and once alone without padding:
""")

code(r"""
def apply_batch_norm(x):
    # BatchNorm1d wants (batch, features, seq); in training mode it uses the batch's own statistics.
    return batch_norm.train()(x.transpose(1, 2)).transpose(1, 2)


alone = batch[1:2, :3]                                           # sentence 1 by itself, no padding
with torch.no_grad():
    ln_gap = (layer_norm(batch)[1, :3] - layer_norm(alone)[0]).abs().max().item()
    bn_gap = (apply_batch_norm(batch)[1, :3] - apply_batch_norm(alone)[0]).abs().max().item()
    ln_out = layer_norm(batch)
print(f"LayerNorm: sentence 1 in the batch vs alone identical (difference < 1e-6): {ln_gap < 1e-6}")
print(f"BatchNorm: sentence 1 in the batch vs alone differs by at most {bn_gap:.2f}")
real_rows = ln_out[~is_pad]                                       # LayerNorm output of the 10 real tokens
print(f"LayerNorm rows: means 0 (|mean| < 1e-6): {bool(real_rows.mean(-1).abs().max() < 1e-6)}, "
      f"variances {real_rows.var(-1, unbiased=False).min():.4f} to {real_rows.var(-1, unbiased=False).max():.4f}")
""")

code(r"""
assert ln_gap < 1e-6 and bn_gap > 0.1
assert (real_rows.var(-1, unbiased=False) - 1).abs().max() < 1e-3 and real_rows.mean(-1).abs().max() < 1e-6
""", tags=["remove-cell"])

md(r"""
With LayerNorm a sentence is normalised the same way whatever else is in the batch, however much padding
there is, and whether the batch holds 64 sentences in training or one at inference. With BatchNorm the
sentence's numbers change with its company: its statistics mix in the other sentences and the padding
zeros, and at inference BatchNorm must fall back on running averages collected in training. This is seed
001's argument: BatchNorm is the standard in computer vision, where images in a batch have the same shape,
but it suits variable-length sequences, small batches and one-sentence-at-a-time inference badly; LayerNorm
is "independent of the batch size" (seed 000) and the standard in NLP.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 4. Post-LN and pre-LN

The paper puts the LayerNorm *after* the residual addition ("post-LN"): $x \leftarrow \operatorname{LN}(x +
\operatorname{Sublayer}(x))$. Most later models (GPT-2 onwards) put it *before* the sub-layer ("pre-LN"):
$x \leftarrow x + \operatorname{Sublayer}(\operatorname{LN}(x))$, plus one final LayerNorm after the last
layer. `lib` has both, chosen by `norm_first` (the `if` branch of `EncoderLayer.forward` above); `Encoder`
and `Decoder` add the final LayerNorm when `norm_first=True`.

The difference is what the residual path carries. In post-LN every layer's output is re-normalised, so
the input reaches the top only through 2N LayerNorms. In pre-LN the path from the input to the last layer is
a plain sum, $x_N = x_0 + \sum_l \operatorname{Sublayer}_l(\dots)$, with no normalisation on it: an identity
path for signals and gradients. Xiong et al. (2020) showed that this is why pre-LN trains stably without a
long learning-rate warm-up, while post-LN has large gradients near the output at the start of training and
needs the warm-up of §9.1. Here is the size (root mean square) of the residual stream through 12 freshly
initialised layers of each kind:
""")

code(r"""
def residual_rms(norm_first, num_layers=12, d_model=64):
    # Root mean square of x after each of num_layers fresh encoder layers (eval mode: no dropout).
    torch.manual_seed(SEED)
    stack = [EncoderLayer(d_model, 4, 4 * d_model, norm_first=norm_first).eval() for _ in range(num_layers)]
    x = torch.randn(4, 20, d_model)
    rms = [x.pow(2).mean().sqrt().item()]
    with torch.no_grad():
        for layer_l in stack:
            x, _ = layer_l(x)
            rms.append(x.pow(2).mean().sqrt().item())
    return rms


post_rms, pre_rms = residual_rms(norm_first=False), residual_rms(norm_first=True)
depth = list(range(len(post_rms)))
legend_outside(plot_curves({"post-LN (paper)": (depth, post_rms), "pre-LN (norm_first=True)": (depth, pre_rms)},
                           xlabel="after layer", ylabel="RMS of the residual stream",
                           title="Residual stream through 12 fresh encoder layers", figsize=(7, 3)))
""")

code(r"""
print("post-LN:", np.round(post_rms, 3))
print("pre-LN: ", np.round(pre_rms, 3))
print("presets: base norm_first =", TransformerConfig.base().norm_first,
      "| multi30k norm_first =", TransformerConfig.multi30k().norm_first)
""")

code(r"""
assert all(abs(r - 1) < 0.01 for r in post_rms[1:])
assert pre_rms[-1] > 1.2 * pre_rms[0] and all(b > a for a, b in zip(pre_rms, pre_rms[1:]))
assert not TransformerConfig.base().norm_first and TransformerConfig.multi30k().norm_first
""", tags=["remove-cell"])

md(r"""
After every post-LN layer the stream has RMS 1: LayerNorm has just reset it. In pre-LN each layer *adds* to
the stream, which grows layer by layer; only the final LayerNorm brings it back to scale. The paper's base
model (`TransformerConfig.base()`) is post-LN, as published; the capstone's `TransformerConfig.multi30k()`
is pre-LN, which trains reliably in a few CPU minutes.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 5. The position-wise feed-forward network

The second sub-layer is a small two-layer network applied to every position separately, with the same
weights at every position (seed 000: $\operatorname{FFN}(z) = \max(0, zW_1 + b_1)W_2 + b_2$; Vaswani et al.,
Eq. 2). Its hidden layer is wider, $d_{ff} = 4\,d_\text{model}$ (2048 for $d_\text{model} = 512$): the first
linear map "lifts" each position into a larger space, ReLU makes the sub-layer non-linear, and the second
map brings it back to $d_\text{model}$ so that the residual addition fits. Attention mixes information
*between* positions; the FFN processes each position *on its own* (seed 004: "精加工", refinement).
""")

code(r"""
display(Code(inspect.getsource(PositionwiseFeedForward), language="python"))
""")

md(r"""
Seed 001's worked example: $n = 3$ positions, $d_\text{model} = 4$, $d_{ff} = 16$, all weights 1 and all
biases 0. `nn.Linear` computes $x W^\top + b$, so it stores the transpose of the seed's $W_1$ (shape
`(16, 4)` for the seed's $4 \times 16$); with all ones the two are the same.
""")

code(r"""
ffn = PositionwiseFeedForward(d_model=4, d_ff=16)                 # 4 -> 16 -> 4
with torch.no_grad():
    ffn.linear1.weight.fill_(1.0)                                 # W1 = ones(4, 16) (stored as its transpose)
    ffn.linear1.bias.zero_()                                      # b1 = 0
    ffn.linear2.weight.fill_(1.0)                                 # W2 = ones(16, 4)
    ffn.linear2.bias.zero_()                                      # b2 = 0
X_ffn = torch.arange(1, 13, dtype=torch.float32).view(3, 4)      # [[1..4], [5..8], [9..12]]
with torch.no_grad():
    x1 = ffn.linear1(X_ffn)                                       # step 3: X W1 + b1, (3, 16)
    x2 = torch.relu(x1)                                           # step 4: ReLU
    ffn_out = ffn(X_ffn)                                          # step 5: x2 W2 + b2, (3, 4)
print("x1 = X W1 + b1, first 4 of 16 columns:\n", x1[:, :4])
print("ReLU changes nothing (all positive):", torch.equal(x2, x1))
print("output:\n", ffn_out)
""")

code(r"""
assert x1.shape == (3, 16) and x1.tolist() == [[10.0] * 16, [26.0] * 16, [42.0] * 16]
assert ffn_out.tolist() == [[160.0] * 4, [416.0] * 4, [672.0] * 4]
assert torch.equal(x2, x1)
with torch.no_grad():  # position-wise: each row on its own gives the same result
    assert torch.equal(torch.cat([ffn(X_ffn[i:i + 1]) for i in range(3)]), ffn_out)
n_ffn_base = sum(p.numel() for p in PositionwiseFeedForward(512, 2048).parameters())
assert n_ffn_base == 2_099_712
n_layer_base = sum(p.numel() for p in EncoderLayer(512, 8, 2048).parameters())
assert n_layer_base == 3_152_384 and abs(n_ffn_base / n_layer_base - 2 / 3) < 0.01
""", tags=["remove-cell"])

md(r"""
The hidden rows are $1+2+3+4 = 10$, $26$ and $42$ in all 16 columns; ReLU keeps them (all positive); each
output entry sums 16 copies: $16 \cdot 10 = 160$, $16 \cdot 26 = 416$, $16 \cdot 42 = 672$, exactly seed
001's matrix. The output has the input's shape $3 \times 4$. Running the rows one at a time gives the same
result, which is what *position-wise* means. In the paper's base model one FFN has
$512 \cdot 2048 + 2048 + 2048 \cdot 512 + 512 = 2{,}099{,}712$ parameters, about two thirds of an encoder
layer.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 6. Seed 001's encoder layer, by hand and with `lib`

Seed 001 ends with a walk-through of one whole encoder layer for its four tokens 我 / 爱 / 机器 / 学习
(*I / love / machine / learning*): $n = 4$, $d_\text{model} = 4$, two heads with $d_k = 2$. The "embedded"
words are $X = [[1..4], [5..8], [9..12], [13..16]]$, and the positional encoding for $d_\text{model} = 4$ is
added (seed 001 adds it directly, without the $\sqrt{d_\text{model}}$ scaling of the positional-encoding
chapter, since $X$ is given already embedded).
""")

code(r"""
X = torch.arange(1, 17, dtype=torch.float32).view(4, 4)         # 4 tokens × d_model 4
P = sinusoidal_positional_encoding(4, 4)                          # (4, 4)
M = X + P                                                         # the embedding layer's output
with np.printoptions(precision=8):
    print("P =\n", P.numpy())
    print("X + P =\n", M.numpy())
""")

code(r"""
seed_P_rows_1_3 = torch.tensor([[0.84147098, 0.54030231, 0.00999983, 0.99995],
                                [0.90929743, -0.41614684, 0.01999867, 0.99980001],
                                [0.14112001, -0.9899925, 0.0299955, 0.99955003]])
seed_M_rows_1_3 = torch.tensor([[5.84147098, 6.54030231, 7.00999983, 8.99995],
                                [9.90929743, 9.58385316, 11.01999867, 12.99980001],
                                [13.14112001, 13.0100075, 15.0299955, 16.99955003]])
assert torch.allclose(P[1:], seed_P_rows_1_3, atol=1e-6, rtol=0)
assert torch.allclose(M[1:], seed_M_rows_1_3, atol=2e-6, rtol=0)
assert P[0].tolist() == [0.0, 1.0, 0.0, 1.0] and M[0].tolist() == [1.0, 3.0, 3.0, 5.0]
""", tags=["remove-cell"])

md(r"""
Rows 1 to 3 of both matrices agree with seed 001's eight-decimal values to within $2 \times 10^{-6}$, the
precision of float32 (row 1 of $P$: $\sin 1 = 0.84147098$, $\cos 1 = 0.54030231$, $\sin(1/100) = 0.00999983$,
$\cos(1/100) = 0.99995$).

:::{note}
Seed 001 prints row 0 of the positional encoding as $[0, 1, 1, 1]$. For position 0 every angle is 0, so
the row is $[\sin 0, \cos 0, \sin 0, \cos 0] = [0, 1, 0, 1]$, and the embedded row 0 is $[1, 3, 3, 5]$, not
$[1, 3, 4, 5]$. The other rows are right.
:::

The seed leaves the weights abstract ($W_Q^1, W_K^1, W_V^1 \in \mathbb{R}^{4 \times 2}$ per head, $W_O \in
\mathbb{R}^{4 \times 4}$). To compute real numbers we set them by hand, simple enough to follow:

- $W_Q = W_K = 0.1 \cdot I_4$ and $W_V = W_O = I_4$, all biases 0. Columns 0–1 of each projection are head 1's
  $W^1 \in \mathbb{R}^{4 \times 2}$, columns 2–3 head 2's: head 1 compares tokens on features 0–1, head 2 on
  features 2–3. The factor 0.1 keeps the scores small enough for a soft (not one-hot) softmax.
- $W_1 \in \mathbb{R}^{4 \times 16}$ holds four copies of $I_4$ side by side and $W_2 \in \mathbb{R}^{16 \times 4}$
  four copies stacked and divided by 4, so that $\operatorname{FFN}(z) = \operatorname{ReLU}(z)$.
- LayerNorm starts with $\gamma = 1$, $\beta = 0$.

First by hand, following the seed's steps:
""")

code(r"""
d_model, h, d_k = 4, 2, 2
W_Q = 0.1 * torch.eye(4)                      # columns 0-1: head 1's W_Q^1 (4 × 2); columns 2-3: head 2's W_Q^2
W_K = 0.1 * torch.eye(4)
W_V = torch.eye(4)
W_O = torch.eye(4)
W_1 = torch.cat([torch.eye(4)] * 4, dim=1)    # (4, 16): four copies of the input
W_2 = torch.cat([torch.eye(4)] * 4, dim=0) / 4  # (16, 4): their average, so FFN(z) = ReLU(z)


def layer_norm_rows(a, eps=1e-5):
    mu = a.mean(-1, keepdim=True)
    return (a - mu) / torch.sqrt(((a - mu) ** 2).mean(-1, keepdim=True) + eps)


# 1. Q, K, V; then per head: scores, softmax, weighted sum of the values
Q, K, V = M @ W_Q, M @ W_K, M @ W_V                               # (4, 4) each
A_hand, Z_heads = [], []
for i in range(h):
    cols = slice(i * d_k, (i + 1) * d_k)                           # head i's two columns
    scores = Q[:, cols] @ K[:, cols].T / math.sqrt(d_k)            # Q_i K_i^T / sqrt(d_k): (4, 4)
    A_i = torch.softmax(scores, dim=-1)                            # A_i: rows sum to 1
    A_hand.append(A_i)
    Z_heads.append(A_i @ V[:, cols])                               # Z_i = A_i V_i: (4, 2)
Z = torch.cat(Z_heads, dim=1)                                      # concatenate the heads: (4, 4)
O = Z @ W_O                                                        # multi-head output: (4, 4)
# 2. Add & Norm (the residual uses X with the positional encoding added, as seed 001 stresses)
Z_tilde = layer_norm_rows(M + O)
# 3. FFN, Add & Norm
H_hand = layer_norm_rows(Z_tilde + torch.relu(Z_tilde @ W_1) @ W_2)
print("A_1 (head 1) =\n", A_hand[0])
print("A_2 (head 2) =\n", A_hand[1])
print("O = Concat(Z_1, Z_2) W_O =\n", O)
print("Z~ = LayerNorm(X + P + O) =\n", Z_tilde)
print("H = LayerNorm(Z~ + FFN(Z~)) =\n", H_hand)
""")

md(r"""
Now the same with `lib`: an `EncoderLayer` whose weights are set to the matrices above (transposed, because
`nn.Linear` stores $W^\top$), asked for its attention weights too.
""")

code(r"""
enc_layer = EncoderLayer(d_model=4, num_heads=2, d_ff=16).eval()
with torch.no_grad():
    for linear, W in [(enc_layer.self_attn.w_q, W_Q), (enc_layer.self_attn.w_k, W_K),
                      (enc_layer.self_attn.w_v, W_V), (enc_layer.self_attn.w_o, W_O),
                      (enc_layer.ffn.linear1, W_1), (enc_layer.ffn.linear2, W_2)]:
        linear.weight.copy_(W.T)                                   # nn.Linear computes x W^T + b
        linear.bias.zero_()
    H_lib, A_lib = enc_layer(M[None], need_weights=True)           # (1, 4, 4) and (1, heads=2, 4, 4)
print("H from lib == H by hand:", torch.allclose(H_lib[0], H_hand, atol=1e-5))
print("attention weights from lib == by hand:", torch.allclose(A_lib[0], torch.stack(A_hand), atol=1e-6))
words = ["I", "love", "machine", "learning"]                       # 我 / 爱 / 机器 / 学习
plot_attention_grid(A_lib[0], words, words, row_titles=["encoder layer"], col_titles=["head 1", "head 2"],
                    title="Seed 001's walk-through: attention weights")
""")

code(r"""
assert torch.allclose(H_lib[0], H_hand, atol=1e-5)
assert torch.allclose(A_lib[0], torch.stack(A_hand), atol=1e-6)
assert torch.allclose(A_lib.sum(-1), torch.ones(1, 2, 4), atol=1e-6)
assert (A_lib[0].argmax(-1) == 3).all()                            # every query looks most at "learning"
assert A_lib.max() < 0.7 and A_lib.min() > 0.03                     # soft, not one-hot
assert torch.allclose(Z_tilde.mean(-1), torch.zeros(4), atol=1e-5) and torch.allclose(H_hand.mean(-1), torch.zeros(4), atol=1e-5)
assert torch.allclose(H_hand.var(-1, unbiased=False), torch.ones(4), atol=1e-3)
# seed 001's W0 snippet: z (n, h·d_k) -> nn.Linear(h·d_k, d_model)
W0 = nn.Linear(h * d_k, d_model)
assert tuple(W0.weight.shape) == (4, 4) and tuple(W0(torch.randn(4, h * d_k)).shape) == (4, 4)
""", tags=["remove-cell"])

md(r"""
Both ways give the same $H$ and the same weights. With these weights a score is $0.01\, x_i \cdot x_j / \sqrt 2$,
larger for larger vectors, so every query gives its largest weight to the last token, *learning*, whose
embedded vector is the longest; attention is still soft (no row is one-hot). $\tilde Z$ and $H$ have mean 0
and variance 1 in every row, as LayerNorm promises. Seed 001's closing snippet multiplies the concatenated
heads `z` of shape `(n, h·d_k) = (4, 4)` by `W0 = nn.Linear(h * d_k, d_model)`, a $4 \times 4$ weight: that is
`enc_layer.self_attn.w_o` here. The layer's output $H$ is what the decoder's cross-attention reads as keys
and values (§7).
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 7. The decoder layer: masks, self-attention and cross-attention

A decoder layer has three sub-layers, each with Add & Norm (seed 000, §3.4):

$$
\begin{aligned}
\tilde Y &= \operatorname{LayerNorm}\big(Y + \operatorname{MaskedMultiHead}(Y, Y, Y)\big) && \text{causal self-attention}\\
\hat Y &= \operatorname{LayerNorm}\big(\tilde Y + \operatorname{MultiHead}(\tilde Y, H^{(N)}, H^{(N)})\big) && \text{cross-attention}\\
Y' &= \operatorname{LayerNorm}\big(\hat Y + \operatorname{FFN}(\hat Y)\big) && \text{feed-forward}
\end{aligned}
$$

where $H^{(N)}$ is the output of the last encoder layer, the "memory". In `lib`:
""")

code(r"""
display(Code(inspect.getsource(DecoderLayer.forward), language="python"))
""")

md(r"""
| seed 000 | `DecoderLayer.forward` (post-LN) |
| --- | --- |
| $\tilde Y = \operatorname{LN}(Y + \operatorname{MaskedMultiHead}(Y, Y, Y))$ | `a, w_self = self._self_attention(x, self_mask, ...)`; `x = self.norm1(x + self.dropout(a))` |
| $\hat Y = \operatorname{LN}(\tilde Y + \operatorname{MultiHead}(\tilde Y, H^{(N)}, H^{(N)}))$ | `a, w_cross = self._cross_attention(x, memory, memory_mask, ...)`; `x = self.norm2(x + self.dropout(a))` |
| $Y' = \operatorname{LN}(\hat Y + \operatorname{FFN}(\hat Y))$ | `x = self.norm3(x + self.dropout(self.ffn(x)))` |

(The `cache` argument stores keys and values between decoding steps; the capstone uses it.)

### Two masks

Masks in `lib` have one meaning everywhere: `True` = this query may attend to this key. Two are needed.
The **padding mask** hides the padding of shorter sentences in a batch; every attention over the source
uses it. The **causal mask** (掩码, seed 000: "only allow the current position to attend to earlier
positions") is lower-triangular: when the decoder is trained on a whole target sentence at once, position $t$
must not see the tokens after it, which it will not have at generation time (seed 004: no "copying the
answer"). For a German source sentence of 4 tokens plus EOS, padded to 6, and its English target:
""")

code(r"""
src_labels = ["Ein", "Hund", "bellt", ".", "<eos>", "<pad>"]      # length 5, padded to 6
tgt_labels = ["<bos>", "A", "dog", "barks", "."]                   # the decoder's input
src_mask = padding_mask(torch.tensor([5]), max_len=6)             # (batch 1, 1, 1, seq_s 6)
tgt_mask = causal_mask(len(tgt_labels))                            # (seq_t 5, seq_t 5)
print("padding mask", tuple(src_mask.shape), src_mask[0, 0, 0].int().tolist())
print("causal mask", tuple(tgt_mask.shape), "\n", tgt_mask.int())
display(plot_mask(src_mask[0, 0].expand(6, 6), src_labels, title="Encoder self-attention: padding mask"),
        plot_mask(tgt_mask, tgt_labels, title="Decoder self-attention: causal mask"),
        plot_mask(src_mask[0, 0].expand(5, 6), src_labels, title="Cross-attention: padding mask (rows: target)"))
""")

code(r"""
assert src_mask[0, 0, 0].tolist() == [True] * 5 + [False]
assert torch.equal(tgt_mask, torch.ones(5, 5, dtype=torch.bool).tril())
""", tags=["remove-cell"])

md(r"""
The padding mask is one row per sentence, `(batch, 1, 1, seq_s)`, broadcast over heads and queries: the
same keys are hidden from every query. The causal mask is one square, broadcast over the batch and the
heads. Seed 001 implements masking by setting the blocked scores to a very negative number, $-10^{10}$, before
the softmax; `lib` uses $-\infty$. Both give a weight of exactly 0:
""")

code(r"""
scores = torch.tensor([[0.5, 0.8, 0.6]])
keep = torch.tensor([[True, True, False]])                         # the third key is masked
print("with -1e10:", torch.softmax(scores.masked_fill(~keep, -1e10), dim=-1))
print("with -inf: ", torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1))
_, w_lib = scaled_dot_product_attention(torch.ones(1, 1), torch.tensor([[0.5], [0.8], [0.6]]), torch.eye(3), keep)
print("lib:       ", w_lib)
""")

code(r"""
w_seed = torch.softmax(scores.masked_fill(~keep, -1e10), dim=-1)
assert torch.allclose(w_seed, torch.tensor([[0.42556, 0.57444, 0.0]]), atol=1e-5) and w_seed[0, 2] == 0
assert torch.allclose(w_lib, w_seed, atol=1e-6)
""", tags=["remove-cell"])

md(r"""
The difference shows only when a query has *no* allowed key: $-10^{10}$ then gives uniform weights over the
masked keys, $-\infty$ gives $0/0$ = NaN, and `lib`'s `scaled_dot_product_attention` returns zeros instead.

### Self-attention and cross-attention

Both are the same `MultiHeadAttention`; they differ in where the keys and values come from. In the decoder's
**self-attention**, queries, keys and values all come from the target prefix: a square `(seq_t, seq_t)`
matrix of weights under the causal mask. In **cross-attention** (encoder–decoder attention), the queries come
from the decoder and the keys and values from the encoder's output: a rectangular `(seq_t, seq_s)` matrix, one
row per target position over all source tokens. Seed 004 calls it "writing while looking things up" (写作时查资料):
the encoder provides the material, the decoder writes and, for each word it is about to write, asks the
source what it needs. Here are both kinds of weights of an *untrained* decoder layer (so the values are
arbitrary; the zeros are not):
""")

code(r"""
torch.manual_seed(SEED)
dec_layer = DecoderLayer(d_model=8, num_heads=2, d_ff=32).eval()
y = torch.randn(1, 5, 8)                                          # target states (batch, seq_t, d_model)
memory = torch.randn(1, 6, 8)                                     # encoder output (batch, seq_s, d_model)
with torch.no_grad():
    y_out, w_self, w_cross = dec_layer(y, memory, tgt_mask, src_mask, need_weights=True)
print("self-attention weights ", tuple(w_self.shape), "= (batch, heads, seq_t, seq_t)")
print("cross-attention weights", tuple(w_cross.shape), "= (batch, heads, seq_t, seq_s)")
display(plot_attention(w_self[0, 0], tgt_labels, tgt_labels, title="Decoder self-attention (head 0)"),
        plot_attention(w_cross[0, 0], src_labels, tgt_labels, title="Cross-attention (head 0)",
                       xlabel="source key (encoder output)", ylabel="target query"))
""")

code(r"""
assert tuple(w_self.shape) == (1, 2, 5, 5) and tuple(w_cross.shape) == (1, 2, 5, 6)
assert (w_self[0].triu(1) == 0).all() and (w_cross[0, :, :, 5] == 0).all() and (w_cross[0, :, :, :5] > 0).all()
assert torch.allclose(w_self.sum(-1), torch.ones(1, 2, 5), atol=1e-6)
assert torch.allclose(w_cross.sum(-1), torch.ones(1, 2, 5), atol=1e-6)
""", tags=["remove-cell"])

md(r"""
The self-attention weights are zero above the diagonal; the cross-attention weights are zero in the padding
column and spread over all real source tokens in every row: each target position may consult the *whole*
source. The causal mask makes the decoder's outputs at positions $0..t$ independent of the tokens after $t$.
Change the last target token and only the last output changes; change the source and every output changes:
""")

code(r"""
y_changed = y.clone()
y_changed[0, -1] = torch.randn(8)                                 # a different last target token
memory_changed = memory + 0.5 * torch.randn(1, 6, 8)             # a different source sentence
with torch.no_grad():
    out_y, _, _ = dec_layer(y_changed, memory, tgt_mask, src_mask)
    out_m, _, _ = dec_layer(y, memory_changed, tgt_mask, src_mask)
print("new last target token, change per position:", (out_y - y_out)[0].abs().amax(-1))
print("new source sentence,   change per position:", (out_m - y_out)[0].abs().amax(-1))
""")

code(r"""
assert torch.allclose(out_y[0, :4], y_out[0, :4], atol=1e-6) and (out_y[0, 4] - y_out[0, 4]).abs().max() > 1e-3
assert ((out_m - y_out)[0].abs().amax(-1) > 1e-3).all()
""", tags=["remove-cell"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 8. Stacks, the output layer and weight tying

The encoder and the decoder are stacks of $N$ identical layers ($N = 6$ in the paper; seeds 001 and 004).
The encoder's final output is the memory that *every* decoder layer's cross-attention reads. After the last
decoder layer, a linear map and a softmax turn each position's $d_\text{model}$-vector into a probability
distribution over the target vocabulary (seed 000: $P(y_t \mid y_{<t}, X) = \operatorname{softmax}(h_t W^O +
b^O)$): a score (logit) per word, then probabilities. Seed 001's example: $d_\text{model} = 512$ and a vocabulary
of $V = 10{,}000$ give a $512 \times 10{,}000$ weight matrix, 5,120,000 numbers.

That matrix has the same shape as the embedding table (one $d_\text{model}$-vector per word), and the paper
shares them: "we share the same weight matrix between the two embedding layers and the pre-softmax linear
transformation" (§3.4, after Press and Wolf 2017). Seed 004 gives the reasons: it saves many parameters when
the vocabulary is large, and reading and writing use the same feature space for each word. `lib` ties all three
when `share_embeddings=True` (one joint source–target vocabulary), and its output layer has no bias, like the
embedding it shares. Counting on the paper's base model and on the capstone's:
""")

code(r"""
base = TransformerConfig.base()                                   # d_model 512, 8 heads, 6 + 6 layers, V = 37,000
small = TransformerConfig.multi30k()                              # d_model 128, 4 heads, 3 + 3 layers, V = 8,000
print(f"base: N = {base.num_encoder_layers} + {base.num_decoder_layers} layers, h = {base.num_heads}, "
      f"d_k = d_model / h = {base.d_k}")
model_tied = Transformer(small)
model_untied = Transformer(TransformerConfig.multi30k(share_embeddings=False))
print("capstone model, tied:  ", f"{model_tied.num_parameters():>10,}")
print("capstone model, untied:", f"{model_untied.num_parameters():>10,}")
print("one tied matrix:", model_tied.output.weight is model_tied.src_embed.weight is model_tied.tgt_embed.weight)
print(f"seed 001's output layer, 512 × 10,000: {nn.Linear(512, 10_000, bias=False).weight.numel():,} weights")
with torch.no_grad():                                             # Linear + softmax on an (untrained) model
    logits = model_tied.eval()(torch.tensor([[5, 6, 7]]), torch.tensor([[BOS_ID, 9]]))   # (batch, seq_t, V)
    probs = torch.softmax(logits, dim=-1)
print("logits", tuple(logits.shape), "-> probabilities; each row sums to", probs.sum(-1).numpy().round(4))
""")

code(r"""
assert base.d_k == 64 and base.num_encoder_layers == base.num_decoder_layers == 6
assert model_tied.num_parameters() == 2_413_056
assert model_untied.num_parameters() - model_tied.num_parameters() == 2 * 8000 * 128 == 2_048_000
assert nn.Linear(512, 10_000, bias=False).weight.numel() == 5_120_000
assert abs(model_untied.num_parameters() / model_tied.num_parameters() - 1.85) < 0.005
assert base.src_vocab_size == 37_000 and base.src_vocab_size * base.d_model == 18_944_000
assert base.num_heads == 8 and base.d_ff == 4 * base.d_model == 2048 and base.dropout == 0.1
assert tuple(logits.shape) == (1, 2, 8000) and torch.allclose(probs.sum(-1), torch.ones(1, 2), atol=1e-5)
""", tags=["remove-cell"])

md(r"""
Untying adds two $8{,}000 \times 128$ matrices, $2{,}048{,}000$ parameters: the capstone model would be 85 %
larger (4,461,056 instead of 2,413,056 parameters) for the same layers. For the paper's base model
($V = 37{,}000$, $d_\text{model} = 512$) each extra matrix is 18.9 M parameters.

:::{note}
Seed 001 quotes the paper's "$h = 8$, $d_k = d_v = d_\text{model}/h = 8$". With $d_\text{model} = 512$ and
$h = 8$ it is $512 / 8 = 64$, as `TransformerConfig.base().d_k` says.
:::
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 9. The training recipe

Seeds 000 and 004 list the paper's training choices (§5): Adam with a warm-up schedule, label smoothing
0.1, batches of about 25,000 tokens, and dropout 0.1. The capstone uses the same recipe, scaled to a CPU.

### 9.1 Warm-up

The learning rate rises linearly for `warmup` steps and then decays with the inverse square root of the step
(seed 000; the paper's Eq. 3):

$$
lr(t) = d_\text{model}^{-0.5} \cdot \min\!\left(t^{-0.5},\; t \cdot \text{warmup}^{-1.5}\right).
$$

The two branches meet at $t = \text{warmup}$, where the rate peaks at $(d_\text{model} \cdot \text{warmup})^{-0.5}$.
`lib.train.noam_lr` has an extra `factor`; `TrainConfig.lr_factor(d_model)` chooses it so that the peak is
`TrainConfig.peak_lr`. The paper's schedule ($d_\text{model} = 512$, 4000 warm-up steps) and the capstone's
($d_\text{model} = 128$, 400 steps, peak $10^{-3}$):
""")

code(r"""
recipe = TrainConfig(max_steps=10_000)                            # the capstone's defaults
factor = recipe.lr_factor(small.d_model)
steps = np.arange(1, 12_001)
schedules = {
    "paper: d_model 512, warm-up 4000": (steps, [noam_lr(int(s), 512, 4000) for s in steps]),
    f"capstone: d_model {small.d_model}, warm-up {recipe.warmup}, peak {recipe.peak_lr:g}":
        (steps, [noam_lr(int(s), small.d_model, recipe.warmup, factor) for s in steps]),
}
paper_peak = noam_lr(4000, 512, 4000)
print(f"paper peak: {paper_peak:.3e} at step 4000;  capstone: factor {factor:.3f}, "
      f"peak {noam_lr(recipe.warmup, small.d_model, recipe.warmup, factor):.3e} at step {recipe.warmup}")
legend_outside(plot_curves(schedules, xlabel="optimiser step", ylabel="learning rate",
                           title="Warm-up, then 1/sqrt(step) decay", figsize=(9.5, 3.2)))
""")

code(r"""
assert abs(paper_peak - 6.988e-4) < 1e-6 and abs(paper_peak - (512 * 4000) ** -0.5) < 1e-12
assert max(schedules["paper: d_model 512, warm-up 4000"][1]) == paper_peak
capstone_curve = list(schedules.values())[1][1]
assert int(np.argmax(capstone_curve)) + 1 == recipe.warmup == 400 and abs(max(capstone_curve) - 1e-3) < 1e-12
assert recipe.peak_lr == 1e-3 and small.d_model == 128 and abs(factor - 1e-3 * math.sqrt(128 * 400)) < 1e-12
assert recipe.max_tokens == MAX_TOKENS and recipe.label_smoothing == EPSILON
assert 32 * 5 == 160 and 32 * 50 == 1600                             # seed 004's short and long batches
""", tags=["remove-cell"])

md(r"""
The paper's rate peaks at $(512 \cdot 4000)^{-0.5} \approx 6.99 \times 10^{-4}$ at step 4000; the capstone's
peaks at exactly $10^{-3}$ at step 400 (factor $\approx 0.226$) and then decays. Seed 000 explains the warm-up
as avoiding a bad start; with post-LN it is in fact needed to keep the early updates, whose gradients are large
near the output (§4), from destabilising training.

The function below draws the schedule for any width, warm-up and factor. The default view:
""")

code(r"""
def lr_view(d_model=512, warmup=4000, factor=1.0, max_step=20_000):
    # The warm-up schedule for one setting, with its peak in the legend.
    s = np.arange(1, max_step + 1, 10)
    peak = noam_lr(warmup, d_model, warmup, factor)
    label = f"d_model {d_model}, warm-up {warmup}, factor {factor:g}: peak {peak:.2e}"
    return legend_outside(plot_curves({label: (s, [noam_lr(int(t), d_model, warmup, factor) for t in s])},
                                      xlabel="optimiser step", ylabel="learning rate", figsize=(9.5, 3)))


lr_view()
""")

md(r"""
In a running notebook, the cell below gives you sliders; press **Draw** to see the schedule. A larger
$d_\text{model}$ or a longer warm-up lowers the peak; `factor` scales the whole curve.
""")

code(r"""
from ipywidgets import FloatLogSlider, IntSlider, interact_manual

interact_manual.options(manual_name="Draw")(
    lambda d_model, warmup, factor: display(lr_view(d_model, warmup, factor)),
    d_model=IntSlider(value=512, min=64, max=1024, step=64, description="d_model"),
    warmup=IntSlider(value=4000, min=100, max=16000, step=100, description="warm-up"),
    factor=FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.1, description="factor"),
);
""", tags=["nbval-ignore-output", "remove-output"])

md(r"""
### 9.2 Label smoothing

With plain cross-entropy the target is one-hot: probability 1 on the correct token. Label smoothing
(Szegedy et al. 2016) mixes in a uniform distribution: the target is $(1 - \varepsilon)\cdot\text{one-hot} +
\varepsilon / V$, with $\varepsilon = 0.1$ in the paper. Seed 004 says that the correct answer gets "only 0.9";
precisely, it gets $0.9 + 0.1/V$, because the uniform part includes the correct token too (this is how
`F.cross_entropy(label_smoothing=...)`, and so `lib.train.label_smoothed_cross_entropy`, define it). For a
vocabulary of 10 tokens:
""")

code(r"""
V_demo, true_token = 10, 3
one_hot = F.one_hot(torch.tensor(true_token), V_demo).float()
smoothed = (1 - EPSILON) * one_hot + EPSILON / V_demo


def target_figure(one_hot, smoothed):
    fig = Figure(figsize=(7, 2.6), layout="constrained")
    ax = fig.add_subplot()
    pos = np.arange(len(one_hot))
    ax.bar(pos - 0.2, one_hot.numpy(), width=0.4, label="one-hot target")
    ax.bar(pos + 0.2, smoothed.numpy(), width=0.4, label=f"smoothed, epsilon = {EPSILON}")
    ax.set_xticks(pos)
    ax.set_xlabel("token id (3 = correct)")
    ax.set_ylabel("target probability")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


print("smoothed target:", smoothed.numpy().round(3))
print(f"with the capstone's V = 8000 the correct token gets {1 - EPSILON + EPSILON / 8000:.7f}")
target_figure(one_hot, smoothed)
""")

code(r"""
assert abs(smoothed[true_token] - 0.91) < 1e-6 and abs(smoothed[0] - 0.01) < 1e-7 and abs(smoothed.sum() - 1) < 1e-6
assert abs((1 - EPSILON + EPSILON / 8000) - 0.9000125) < 1e-12
""", tags=["remove-cell"])

md(r"""
What does this do to the loss? Suppose the model puts probability $p$ on the correct token and spreads
$1 - p$ evenly over the other nine. Plain cross-entropy, $-\log p$, keeps falling as $p \to 1$: it always
rewards more confidence. The smoothed loss, computed with `lib`'s `label_smoothed_cross_entropy`, has its
minimum at $p = 0.91$, the smoothed target itself, and rises again beyond it:
""")

code(r"""
p_grid = torch.arange(1, 1000, dtype=torch.float64) / 1000          # 0.001 .. 0.999
probs_grid = ((1 - p_grid[:, None]) / (V_demo - 1)).repeat(1, V_demo)
probs_grid[:, true_token] = p_grid
logits_grid = probs_grid.log()[None]                                 # (1, 999 positions, V): log-probabilities
targets = torch.full((1, len(p_grid)), true_token)


def loss_per_position(epsilon):
    return torch.stack([label_smoothed_cross_entropy(logits_grid[:, i:i + 1], targets[:, i:i + 1], epsilon, ignore_index=-100)
                        for i in range(len(p_grid))])


plain, smooth = loss_per_position(0.0), loss_per_position(EPSILON)
best = p_grid[smooth.argmin()].item()
entropy = -(smoothed * smoothed.log()).sum().item()
print(f"smoothed loss is smallest at p = {best:.3f}, where it equals {smooth.min():.4f} "
      f"(the entropy of the smoothed target: {entropy:.4f})")
print(f"at p = 0.999: plain loss {plain[-1]:.4f}, smoothed loss {smooth[-1]:.4f}")
legend_outside(plot_curves({"plain cross-entropy": (p_grid, plain), f"label smoothing, epsilon = {EPSILON}": (p_grid, smooth)},
                           xlabel="probability p on the correct token", ylabel="loss (nats)",
                           title=f"Loss of one prediction, V = {V_demo}", figsize=(7.5, 3)))
""")

code(r"""
assert abs(best - 0.91) < 1e-9 and abs(smooth.min().item() - entropy) < 1e-6
assert abs(smooth[-1] - smooth.min() - 0.32) < 0.01 and plain[-1] < 0.002 and (plain[1:] < plain[:-1]).all()
assert abs(entropy - 0.50) < 0.005
""", tags=["remove-cell"])

md(r"""
The smoothed loss never reaches 0: its minimum is the entropy of the smoothed target, about 0.50 nats here.
Being more confident than 0.91 costs loss (0.32 nats more at $p = 0.999$), so the model learns to keep some
probability for other words. The paper reports that this "hurts perplexity, as the model learns to be more
unsure, but improves accuracy and BLEU score" (§5.4); seed 004 calls it protection against memorising
the answers.

### 9.3 Token-based batching

Seed 004 notes that the paper batches by **tokens**, not sentences: each batch held about 25,000 source and
25,000 target tokens, built from sentence pairs of similar length (§5.1). A batch of 32 five-word sentences
holds 160 tokens, a batch of 32 fifty-word sentences 1,600: with a fixed number of sentences, memory use jumps
from batch to batch, and sentences of different lengths in one batch waste compute on padding.
`lib.data.token_batches` sorts the pairs by length and packs them into batches of at most `max_tokens`
positions, padding included. We measure both on the 29,000 Multi30k training pairs, tokenised with the
capstone's 8,000-token BPE vocabulary: fixed batches of 64 sentences in data order, and token batches of
3,000.
""")

code(r"""
tokenizer = multi30k_tokenizer()
examples = encode_pairs(load_multi30k("train"), tokenizer)              # (German ids, English ids) pairs
src_len = np.array([len(s) + 1 for s, _ in examples])                  # + EOS
tgt_len = np.array([len(t) + 1 for _, t in examples])                  # + BOS (decoder input) or EOS (target)


def padding_stats(batches):
    # Share of padded positions, and the padded positions per batch (source + target tensors).
    real = cells = 0
    per_batch = []
    for b in batches:
        b_cells = len(b) * (src_len[b].max() + tgt_len[b].max())
        real += src_len[b].sum() + tgt_len[b].sum()
        cells += b_cells
        per_batch.append(b_cells)
    return 1 - real / cells, np.array(per_batch)


n_pairs = len(examples)
sentence_batches = [list(range(i, min(i + BATCH_SENTENCES, n_pairs))) for i in range(0, n_pairs, BATCH_SENTENCES)]
bucketed = token_batches(examples, MAX_TOKENS, shuffle=True, seed=SEED)
waste_sent, cells_sent = padding_stats(sentence_batches)
waste_tok, cells_tok = padding_stats(bucketed)
for name, bs, waste, cells_b in [(f"{BATCH_SENTENCES} sentences, data order", sentence_batches, waste_sent, cells_sent),
                                 (f"<= {MAX_TOKENS} tokens, by length", bucketed, waste_tok, cells_tok)]:
    sizes = [len(b) for b in bs]
    print(f"{name:26s}: {len(bs):4d} batches of {min(sizes)}-{max(sizes)} sentences, "
          f"{cells_b.min():,}-{cells_b.max():,} positions each, padding {100 * waste:.1f} %")
""")

code(r"""
def batch_size_figure(cells_sent, cells_tok):
    fig = Figure(figsize=(7.5, 2.8), layout="constrained")
    ax = fig.add_subplot()
    bins = np.linspace(0, max(cells_sent.max(), cells_tok.max()) * 1.05, 40)
    ax.hist(cells_sent, bins=bins, alpha=0.7, label=f"{BATCH_SENTENCES} sentences per batch")
    ax.hist(cells_tok, bins=bins, alpha=0.7, label=f"token batches, max_tokens = {MAX_TOKENS}")
    ax.set_xlabel("positions per batch (source + target, padding included)")
    ax.set_ylabel("batches")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


batch_size_figure(cells_sent, cells_tok)
""")

code(r"""
assert n_pairs == 29_000 and sorted(i for b in bucketed for i in b) == list(range(n_pairs))
one = collate([examples[i] for i in bucketed[0]], PAD_ID, BOS_ID, EOS_ID)   # the length arithmetic matches collate
assert one.src.numel() + one.tgt_in.numel() == padding_stats([bucketed[0]])[1][0]
assert int((one.src != PAD_ID).sum() + (one.tgt_in != PAD_ID).sum()) == src_len[bucketed[0]].sum() + tgt_len[bucketed[0]].sum()
assert all(len(b) * (max(max(len(examples[i][0]), len(examples[i][1])) for i in b) + 2) <= MAX_TOKENS for b in bucketed)
assert 0.50 < waste_sent < 0.52 and 0.085 < waste_tok < 0.10
assert min(len(b) for b in bucketed) == 47 and max(len(b) for b in bucketed) == 300
assert cells_sent[:-1].min() == 2752 and cells_sent[:-1].max() == 6528 and cells_sent[-1] == 464  # full batches, then the last
""", tags=["remove-cell"])

md(r"""
Fixed batches of 64 sentences in data order spend about half of their positions (51 %) on padding, and their
size follows the longest sentences they happen to contain: the full batches range from 2,752 to 6,528
positions, so memory use more than doubles from one batch to another (the smallest batch, 464 positions, is
the last one, with only 8 sentences). The length-sorted token
batches hold many short sentences or few long ones (47 to 300), all of about the same size, and only about
9 % of their positions are padding. What padding remains comes from two sources: the German and English sides
of a pair differ in length, and `token_batches` adds a small random jitter to the lengths (and shuffles the
order of the batches) so that each epoch sees different batches.

### 9.4 Dropout

The paper applies dropout with rate $P_\text{drop} = 0.1$ to each sub-layer's output before the residual
addition and to the sum of embeddings and positional encodings (§5.4); `lib` also uses it inside the FFN. In
training, each unit is zeroed with probability 0.1 and the survivors are scaled by $1/0.9$, so the expected
value is unchanged; in evaluation (`.eval()`) dropout does nothing. Seed 004's picture: no single "genius"
neuron can be relied on, so the others must learn useful features too.
""")

code(r"""
torch.manual_seed(SEED)
drop = nn.Dropout(p=0.1).train()
ones = torch.ones(100_000)
dropped = drop(ones)
print(f"zeroed: {(dropped == 0).float().mean():.4f}; survivors: {dropped[dropped > 0].unique().tolist()}; "
      f"mean {dropped.mean():.4f}; in eval mode: {torch.equal(drop.eval()(ones), ones)}")
dropouts = [(name, m.p) for name, m in model_tied.named_modules() if isinstance(m, nn.Dropout)]
print(f"the capstone model has {len(dropouts)} dropout modules, all with p =", {p for _, p in dropouts})
print("for example:", [name for name, _ in dropouts[:4]])
""")

code(r"""
assert abs((dropped == 0).float().mean() - 0.1) < 0.005 and torch.allclose(dropped[dropped > 0], torch.tensor(1 / 0.9))
assert abs(dropped.mean() - 1) < 0.01
assert len(dropouts) == 1 + 3 * 2 + 3 * 2 and {p for _, p in dropouts} == {0.1} == {base.dropout}
""", tags=["remove-cell"])

md(r"""
The capstone model has 13 dropout modules: one after the positional encoding, and in each of its 3 encoder
and 3 decoder layers one for the residual branches and one inside the FFN.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 10. Why self-attention: the complexity table

Seed 004 compares self-attention with a recurrent layer for a sentence of $n$ tokens of width $d$: the
work per layer is $O(n^2 \cdot d)$ against $O(n \cdot d^2)$, and the path between the first and the last word
is 1 step against $O(n)$. The paper's Table 1 adds convolutional layers and the number of operations that
must run one after the other:

| layer type | work per layer | sequential operations | maximum path length |
| --- | --- | --- | --- |
| self-attention | $O(n^2 \cdot d)$ | $O(1)$ | $O(1)$ |
| recurrent | $O(n \cdot d^2)$ | $O(n)$ | $O(n)$ |
| convolutional, kernel $k$ | $O(k \cdot n \cdot d^2)$ | $O(1)$ | $O(n/k)$ contiguous, $O(\log_k n)$ dilated |
| self-attention restricted to $r$ neighbours | $O(r \cdot n \cdot d)$ | $O(1)$ | $O(n/r)$ |

Seed 004 names the three measures: **work** (how many operations), **span** or path length (how many steps
information must pass through one after another), and **wall-clock** time (what parallel hardware makes of
the work). Self-attention does *more* work than a recurrent layer when $n > d$, but none of it is sequential,
and any two words are one step apart ("a HashMap with soft pointers" instead of a linked list, seed 004).

**Path length, measured.** Position $n - 1$ of a layer's output depends on input position 0 if the gradient
between them is non-zero. For $n = 16$ we stack layers until it is:
""")

code(r"""
def layers_until_connected(make_layer, n=16, d=4, max_layers=40):
    # Smallest depth at which output position n-1 depends on input position 0 (non-zero gradient).
    torch.manual_seed(SEED)
    x = torch.randn(1, d, n, requires_grad=True)                  # (batch, channels, positions)
    out = x
    for depth in range(1, max_layers + 1):
        out = make_layer(depth)(out)
        grad, = torch.autograd.grad(out[0, :, -1].sum(), x, retain_graph=True)
        if grad[0, :, 0].abs().sum() > 0:
            return depth
    return None


class AttentionOverChannels(nn.Module):
    # lib's MultiHeadAttention on (batch, channels, positions) input, for the comparison.
    def __init__(self, d):
        super().__init__()
        self.attn = MultiHeadAttention(d, num_heads=1)

    def forward(self, x):
        h = x.transpose(1, 2)                                      # (batch, positions, d)
        return self.attn(h, h, h)[0].transpose(1, 2)


n_path = 16
path = {
    "self-attention": layers_until_connected(lambda depth: AttentionOverChannels(4)),
    "convolution, k = 3": layers_until_connected(lambda depth: nn.Conv1d(4, 4, 3, padding=1)),
    "dilated convolution, k = 3, dilation 1, 2, 4, ...":
        layers_until_connected(lambda depth: nn.Conv1d(4, 4, 3, padding=2 ** (depth - 1), dilation=2 ** (depth - 1))),
}
for name, layers_needed in path.items():
    print(f"{name:50s}: {layers_needed:2d} layer(s)")
print(f"{'recurrent (one cell application per token)':50s}: {n_path - 1:2d} sequential steps")
print(f"seed 004's loss argument: 0.9^10 = {0.9 ** 10:.3f}, 0.9^15 = {0.9 ** 15:.3f}")
""")

code(r"""
assert path["self-attention"] == 1 and path["convolution, k = 3"] == 15
assert path["dilated convolution, k = 3, dilation 1, 2, 4, ..."] == 4
assert abs(0.9 ** 10 - 0.3487) < 1e-4
""", tags=["remove-cell"])

md(r"""
One attention layer connects the last token to the first. A convolution with kernel 3 reaches one position
further per layer, so 15 layers are needed for 16 tokens (seed 004's table of growing windows: [1, 2, 3],
then [1..5], ...); with dilations 1, 2, 4, 8 the reach doubles per layer and 4 layers suffice, the
$O(\log_k n)$ of the table. A recurrent network needs 15 steps, one after the other. If each step kept 90 % of
the information, as seed 004 supposes, 10 steps would keep $0.9^{10} \approx 0.349$ (the seed writes
34 %) and 15 steps only 0.206.

**Work and wall-clock, measured.** Finally the time of one layer of each kind on this machine, for
$d = 64$ and growing $n$ (median of a few runs; the numbers depend on the machine, so only their trend
matters):
""")

code(r"""
def median_seconds(fn, repeats=5):
    fn()                                                           # warm-up run
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


d_time = 64
torch.manual_seed(SEED)
rnn = nn.RNN(d_time, d_time, batch_first=True)                    # one step per token, in order
conv = nn.Conv1d(d_time, d_time, 3, padding=1)
lengths_n = [64, 128, 256, 512, 1024]
timings = {"self-attention": [], "recurrent (nn.RNN)": [], "convolution, k = 3": []}
with torch.no_grad():
    for n_t in lengths_n:
        x_t = torch.randn(1, n_t, d_time)
        timings["self-attention"].append(median_seconds(lambda: scaled_dot_product_attention(x_t, x_t, x_t)))
        timings["recurrent (nn.RNN)"].append(median_seconds(lambda: rnn(x_t)))
        timings["convolution, k = 3"].append(median_seconds(lambda: conv(x_t.transpose(1, 2))))
for name, ts in timings.items():
    print(f"{name:20s}", "  ".join(f"n={n_t}: {1e3 * t:.3f} ms" for n_t, t in zip(lengths_n, ts)))
legend_outside(plot_curves({name: (lengths_n, [1e3 * t for t in ts]) for name, ts in timings.items()},
                           xlabel="sequence length n", ylabel="milliseconds (log scale)", logy=True,
                           title=f"One layer, d = {d_time}, this machine", figsize=(7.5, 3)))
""", tags=["nbval-ignore-output"])

md(r"""
On the machine that built this page, the recurrent layer was the slowest at every length: its $n$ steps
cannot run in parallel, so its time grows with $n$ although each step is tiny. The self-attention layer's time
grows faster than linearly once $n$ is large (its work grows with $n^2$), but that work is a few large matrix
products that keep all cores busy. The convolution is cheap per layer but, as measured above, needs many
layers to connect distant words. (Timings depend on the machine and vary from run to run; re-run the cell to
see yours.) Counting operations: self-attention's $n^2 d$ is smaller than the recurrent layer's $n d^2$ whenever
$n < d$, which is the usual case in translation (sentences of tens of tokens, $d_\text{model} = 512$), and
this is the paper's argument. For long documents
$n^2$ dominates, the problem of the efficient-attention chapters.
""")

code(r"""
n_ops = np.array([16, 64, 256, 512, 1024, 4096])
attention_ops, recurrent_ops = n_ops ** 2 * 512, n_ops * 512 ** 2
assert ((attention_ops < recurrent_ops) == (n_ops < 512)).all() and attention_ops[3] == recurrent_ops[3]
""", tags=["remove-cell"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 11. From here to the capstone

Everything the capstone needs is now in place. {doc}`capstone` builds `Transformer(TransformerConfig.multi30k())`,
the pre-LN model with tied embeddings counted in §8 (2,413,056 parameters), and trains it on Multi30k with the
recipe of §9: token batches of 3,000 (`TrainConfig.max_tokens`), Adam with warm-up to a peak of $10^{-3}$ at
step 400, label smoothing 0.1 and dropout 0.1. The same run from the command line:

```bash
python -m lib.train --preset multi30k --minutes 10 --out runs/multi30k
```

The capstone then translates with greedy and beam search, scores with BLEU, and looks at the cross-attention
weights of §7 on real sentences.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Summary

- An encoder layer is self-attention then a feed-forward network, each wrapped in Add & Norm:
  $\tilde Z = \operatorname{LN}(X + \operatorname{MultiHead}(X, X, X))$, $H = \operatorname{LN}(\tilde Z +
  \operatorname{FFN}(\tilde Z))$. A decoder layer adds cross-attention over the encoder output between its
  causal self-attention and its FFN. `lib.transformer.EncoderLayer` and `DecoderLayer` follow the equations
  line by line.
- LayerNorm normalises each token over its features, so a sentence's result does not depend on the batch or
  the padding; BatchNorm normalises each feature over the batch, which suits images but not variable-length text.
- Post-LN (the paper) renormalises the residual stream after each sub-layer; pre-LN (`norm_first=True`, the
  capstone) keeps an identity path and trains without a long warm-up.
- The position-wise FFN lifts each position to $d_{ff} = 4\,d_\text{model}$ and back: seed 001's example gives
  160, 416, 672, and its whole encoder-layer walk-through runs identically by hand and with `lib` (with
  the corrected PE row 0 $= [0, 1, 0, 1]$).
- The padding mask hides padding, the causal mask hides the future; self-attention is square, cross-attention
  rectangular (target × source).
- The output layer maps $d_\text{model}$ to the vocabulary; tying it with the embeddings saves two
  $V \times d_\text{model}$ matrices.
- The recipe: warm-up to $(d_\text{model} \cdot \text{warmup})^{-0.5}$ (times a factor), label smoothing 0.1
  (loss minimum at $1 - \varepsilon + \varepsilon/V$), length-bucketed token batches (little padding), dropout 0.1.
- Self-attention costs $O(n^2 d)$ per layer but has $O(1)$ sequential steps and path length.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Exercises

Each exercise ends with a call to `check`, which tests your answer against `lib` and prints ✅ or a hint.
""")

md(r"""
:::{exercise}
:label: tr-layer-norm

Write `layer_norm(x)` that normalises a tensor over its **last** axis as in §2, with $\gamma = 1$,
$\beta = 0$ and $\epsilon = 10^{-5}$, using only tensor arithmetic (no `nn.LayerNorm` or `F.layer_norm`).
It must work for any number of leading axes and for a row whose entries are all equal. Finish with
`check("layer_norm_last_axis", layer_norm)`.
:::
""")

solution("tr-layer-norm", r"""
def layer_norm(x, eps=1e-5):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)   # biased: divide by d
    return (x - mu) / torch.sqrt(var + eps)


assert check("layer_norm_last_axis", layer_norm)  # prints ✅; the assert makes `make test` fail if this solution ever stops passing
""")

md(r"""
:::{exercise}
:label: tr-tied-params

Write `embedding_params(vocab_size, d_model, shared)` that returns the number of parameters in the source
embedding, the target embedding and the output projection of a `lib` `Transformer`, counting a tied matrix
once. With `shared=True` all three are one matrix; with `shared=False` none are tied. (Does `lib`'s output
layer have a bias? See §8.) Finish with `check("tied_embedding_params", embedding_params)`.
:::
""")

solution("tr-tied-params", r"""
def embedding_params(vocab_size, d_model, shared):
    one_matrix = vocab_size * d_model            # one d_model-vector per token; the output layer has no bias
    return one_matrix if shared else 3 * one_matrix


assert check("tied_embedding_params", embedding_params)
""")

md(r"""
:::{exercise}
:label: tr-noam-peak

Write `noam_peak(d_model, warmup)` that returns the largest learning rate of the schedule of §9.1 (with
factor 1) without evaluating it step by step. Then use it to compute the factor that makes the capstone's
schedule peak at $10^{-3}$ and compare with `TrainConfig.lr_factor`. Finish with `check("noam_peak", noam_peak)`.
:::
""")

solution("tr-noam-peak", r"""
def noam_peak(d_model, warmup):
    # both branches of the min equal warmup^-0.5 at step = warmup
    return d_model ** -0.5 * warmup ** -0.5


# the capstone's factor: 1e-3 / noam_peak(128, 400) = 0.2263, the same as TrainConfig(max_steps=1).lr_factor(128)
assert check("noam_peak", noam_peak)
""")

code(r"""
assert abs(1e-3 / noam_peak(128, 400) - TrainConfig(max_steps=1).lr_factor(128)) < 1e-12
assert abs(1e-3 / noam_peak(128, 400) - 0.2263) < 1e-4
""", tags=["remove-cell"])

md(r"""
:::{exercise}
:label: tr-causal-mask

Write `causal(n)` that returns the `(n, n)` boolean causal mask of §7 in `lib`'s convention (`True` = may
attend), without calling `lib.attention.causal_mask`. Finish with `check("decoder_causal_mask", causal)`.
:::
""")

solution("tr-causal-mask", r"""
def causal(n):
    rows = torch.arange(n)[:, None]               # query position t
    cols = torch.arange(n)[None, :]               # key position s
    return cols <= rows                           # t may see s = 0 .. t


assert check("decoder_causal_mask", causal)
""")

md(r"""
:::{exercise}
:label: tr-target-padding

`lib`'s `Transformer` masks the padding of the *source* in every attention over the source, but gives the
decoder's self-attention only the causal mask, no padding mask for the *target*. Why does padding at the end
of a target sentence never influence a real target token? And why does it not influence the loss either?
:::

:::{solution} tr-target-padding
:class: dropdown

Padding comes *after* the last real token of a target sentence. The causal mask lets position $t$ attend only
to positions $0..t$, so a real token, which always stands before the padding, never sees a padded position:
the causal mask already hides it. Padded positions themselves do see real tokens and produce outputs, but
those outputs are predictions for padded target positions, which the loss skips (`ignore_index=PAD_ID` in
`label_smoothed_cross_entropy`). In the encoder this argument fails, because encoder self-attention is not
causal: a real source token could attend to padding after it, hence the padding mask of §7.
:::
""")

md(r"""
## References

- Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N., Kaiser, Ł. and Polosukhin, I.
  (2017). Attention Is All You Need. *NeurIPS*. arXiv:1706.03762. §3 (architecture), §4 and Table 1
  (complexity), §5 (training).
- Ba, J. L., Kiros, J. R. and Hinton, G. E. (2016). Layer Normalization. arXiv:1607.06450.
- Ioffe, S. and Szegedy, C. (2015). Batch Normalization: Accelerating Deep Network Training by Reducing
  Internal Covariate Shift. *ICML*.
- He, K., Zhang, X., Ren, S. and Sun, J. (2016). Deep Residual Learning for Image Recognition. *CVPR*.
- Xiong, R., Yang, Y., He, D., Zheng, K., Zheng, S., Xing, C., Zhang, H., Lan, Y., Wang, L. and Liu, T.-Y. (2020).
  On Layer Normalization in the Transformer Architecture. *ICML*.
- Press, O. and Wolf, L. (2017). Using the Output Embedding to Improve Language Models. *EACL*.
- Szegedy, C., Vanhoucke, V., Ioffe, S., Shlens, J. and Wojna, Z. (2016). Rethinking the Inception Architecture
  for Computer Vision. *CVPR* (label smoothing, §7).
- Srivastava, N., Hinton, G., Krizhevsky, A., Sutskever, I. and Salakhutdinov, R. (2014). Dropout: A Simple
  Way to Prevent Neural Networks from Overfitting. *JMLR* 15.
- Elliott, D., Frank, S., Sima'an, K. and Specia, L. (2016). Multi30K: Multilingual English-German Image
  Descriptions. *Workshop on Vision and Language*.
""")

nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, sys.argv[1])
