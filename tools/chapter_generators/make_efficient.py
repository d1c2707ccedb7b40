"""Generate chapters/efficient_attention.ipynb (outputs are filled in by `make execute`).

Usage: python make_efficient.py chapters/efficient_attention.ipynb
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
# Efficient attention

The chapter on self-attention ended at a wall. Every query meets every key, so a layer does $O(n^2 \cdot d)$
work and its weights take $O(n^2)$ memory: at $n = 4096$ tokens, 4 heads hold 256 MiB of weights per sequence,
and each doubling of $n$ multiplies that by four. Seed 002 (§4, 注意力机制的计算优化, *computational optimisation
of attention*) names the problem — "its complexity is $O(n^2)$, a challenge for long texts" — and lists three
families of remedies:

- **sparse attention** (稀疏注意力): compute the scores of only some pairs, "usually based on a locality
  assumption or a predefined sparsity pattern" — Block Sparse Attention, Longformer;
- **linear attention** (线性注意力): approximate the softmax with a kernel, so that a change in the order of the
  matrix products, $\phi(Q)\,(\phi(K)^\top V)$, brings the cost down to $O(n)$ — Performer, Linear Transformer;
- **locality-sensitive hashing** (局部敏感哈希): cluster similar vectors into buckets and let each query meet
  only the keys of its own bucket — Reformer.

This chapter builds one of each with `lib.efficient`, checks it against full attention, measures what it costs
as $n$ grows, and asks what it gives up. You will

1. see the wall in numbers, and the four patterns as masks;
2. build sliding-window attention with global tokens (Longformer) that never forms an $n \times n$ matrix;
3. re-associate linear attention, $\phi(Q)(\phi(K)^\top V)$, and correct the order of seed 002's denominator;
4. approximate softmax itself with positive random features (Performer) and watch the error shrink with the
   number of features;
5. hash, sort and chunk (Reformer), and see when hashing finds the keys that matter;
6. measure time and memory against $n$ for all of them and find the crossover where linear attention wins;
7. see how torch's fused kernel stays *exact* with $O(n)$ memory (FlashAttention's idea).
""")

code(r"""
%matplotlib inline
import inspect
import math

import numpy as np
import torch
import torch.nn.functional as F
from IPython.display import Code, display
from torch.utils.flop_counter import FlopCounterMode

import lib.efficient as efficient
from lib.attention import causal_mask, scaled_dot_product_attention
from lib.cost import attention_weight_bytes, peak_tensor_bytes
from lib.efficient import (attention_methods, crossover, linear_attention, linear_attention_quadratic, lsh_attention,
                           lsh_hash, lsh_mask, lsh_rotations, performer_attention, performer_features,
                           random_projection, scaling_cost, sliding_window_attention, sliding_window_mask)
from lib.exercises import check
from lib.plots import plot_attention_grid, plot_curves, plot_mask

# The knobs of this chapter.
SEED = 0
N_SMALL = 16                                  # positions in the mask figures
WINDOW, GLOBAL = 2, [0]                       # sliding window: ±2 positions; position 0 is a global token ([CLS])
N_CHECK, D_CHECK = 64, 16                     # sizes of the equality checks
FEATURES = [16, 32, 64, 128, 256, 512, 1024, 2048]   # Performer: numbers of random features m
SCORE_SCALES = [0.25, 0.5, 1.0]               # Performer: standard deviation of the scores q·k/√d_k
PERF_N, PERF_SEEDS = 256, range(5)            # Performer: sequence length, seeds of the random features
LSH_N, LSH_TOPICS, LSH_BUCKETS = 256, 16, 16  # LSH: tokens, clusters ("topics") they come from, buckets
LSH_HASHES = [1, 2, 4, 8]                     # LSH: rounds of hashing
SCALING_LENGTHS = [32, 64, 128, 256, 512, 1024, 2048, 4096]   # sequence lengths of the time/memory measurement
HEADS, D_K = 4, 64                            # ... with batch 1
_ = torch.manual_seed(SEED)
# One thread: the measurements compare algorithms, not thread scaling, and single-threaded timings are steadier
# on a shared machine.
torch.set_num_threads(1)
np.set_printoptions(precision=4, suppress=True, linewidth=110)
torch.set_printoptions(precision=4, sci_mode=False, linewidth=110)
MiB = 2**20


def log2_axis(fig, ticks):
    # plot_curves has a linear x axis; the lengths here double, so use a log axis labelled with them.
    ax = fig.axes[0]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    return fig


def qkv(n, d_k=D_CHECK, heads=1, scale=1.0, seed=SEED):
    # random queries, keys and values (batch 1); the entries of q and k have standard deviation `scale`
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, heads, n, d_k, generator=g) for _ in range(3))
    return scale * q, scale * k, v
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 1. The n² wall

The weights of one attention layer are a `(batch, heads, n, n)` tensor. `lib.cost.attention_weight_bytes`
counts them; here for one sequence and the paper's 8 heads, in float32:
""")

code(r"""
wall = {n: attention_weight_bytes(1, 8, n) for n in [512, 1024, 4096, 16384, 65536]}
for n, b in wall.items():
    print(f"n = {n:>6}: {b / MiB:>9,.0f} MiB of weights per layer")
""")

code(r"""
assert wall[512] == 8 * MiB and wall[4096] == 512 * MiB and wall[16384] == 8 * 1024 * MiB
assert wall[65536] == 128 * 1024 * MiB
""", tags=["remove-cell"])

md(r"""
A 512-token sentence pair costs 8 MiB, a 16k-token document 8 GiB, a 64k-token book chapter 128 GiB — per layer.
There are two ways out. Either compute *the same* attention without storing the matrix (exact, still
$O(n^2)$ work: §7 and torch's fused kernel), or compute *a different* attention that needs fewer than $n^2$ pairs
or no pairs at all (§2–§5). The second way changes the model; the question for each method is how much.

Every method is easiest to understand through its **mask**, the pairs (query, key) it scores. Full attention
scores all $n^2$; the causal mask of a decoder half of them — still $O(n^2)$:
""")

code(r"""
display(plot_mask(torch.ones(N_SMALL, N_SMALL, dtype=torch.bool), title="Full attention: n² pairs"),
        plot_mask(causal_mask(N_SMALL), title="Causal attention: n(n+1)/2 pairs"))
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 2. Sparse attention: a sliding window and a few global tokens

**The idea.** In text most of what a word needs is nearby. Child et al. (2019) showed that a Transformer can
work with *fixed sparse patterns*: each position attends to a local block and to every $s$-th position before it
(a "strided" pattern), about $n\sqrt{n}$ pairs instead of $n^2$. Longformer (Beltagy et al. 2020) keeps the
local part only — a **sliding window**: query $i$ sees the keys $j$ with $|i - j| \le w$ — and adds a few
**global tokens** (a [CLS] token, the question in question answering) that see every position and are seen by
every position. Stacking layers widens the view: after $\ell$ layers, information has travelled $\ell \cdot w$
positions (the second exercise at the end of the chapter).

With $w = 2$, $n = 16$ and position 0 global, `lib.efficient.sliding_window_mask` gives:
""")

code(r"""
band = sliding_window_mask(N_SMALL, WINDOW)
band_global = sliding_window_mask(N_SMALL, WINDOW, global_tokens=GLOBAL)
i, j = torch.meshgrid(torch.arange(N_SMALL), torch.arange(N_SMALL), indexing="ij")
strided = (j <= i) & ((i - j < 4) | ((i - j) % 4 == 0))     # Child et al.'s strided pattern, stride 4, causal
pairs = {"full": N_SMALL**2, "window": int(band.sum()), "window + global": int(band_global.sum()),
         "strided": int(strided.sum())}
print("pairs scored:", pairs)
display(plot_mask(band, title=f"Sliding window, w = {WINDOW}"),
        plot_mask(strided, title="Strided (Child et al. 2019), stride 4"))
""")

code(r"""
n, w = N_SMALL, WINDOW
assert pairs["window"] == n * (2 * w + 1) - w * (w + 1) == 74          # the band, minus what falls off the ends
assert pairs["window + global"] == 74 + 2 * (n - 1 - w) == 100           # row 0 and column 0 fill up
assert torch.equal(band_global, band | (i == 0) | (j == 0))
""", tags=["remove-cell"])

md(r"""
The band has $2w + 1$ entries per row (fewer at the two ends): 74 of the 256 pairs here, and for a fixed $w$ the
count grows like $n$, not $n^2$. Seed 002 says sparse attention brings the cost down "to $O(n \log n)$ or lower":
Longformer's window is $O(n \cdot w)$, linear in $n$; Child et al.'s strided pattern, with a stride of about
$\sqrt{n}$, is $O(n \sqrt{n})$.

**The code.** Masking full attention with this band would give the right numbers and save nothing. `lib`
computes only the band: it cuts the queries into blocks of $b$ positions; block $t$ can only see the keys from
$t b - w$ to $t b + b - 1 + w$, a window of $b + 2w$ keys that `Tensor.unfold` takes out of the padded keys as a
view. Each block's $b \times (b + 2w)$ scores are masked to the band and soft-maxed. Global tokens get extra key
columns in every row and their own full rows:
""")

code(r"""
display(Code(inspect.getsource(sliding_window_attention), language="python"))
""")

md(r"""
**The check.** It must equal full attention with the band mask — `lib`'s explicit attention and PyTorch's fused
kernel — with and without global tokens, causal or not, and a window as wide as the sequence must give plain
full attention:
""")

code(r"""
q, k, v = qkv(N_CHECK)
sw_diffs = {}
for glob in (None, GLOBAL, [0, 31, 63]):
    for causal in (False, True):
        mask = sliding_window_mask(N_CHECK, 5, glob, causal)
        out, _ = sliding_window_attention(q, k, v, 5, glob, causal)
        sw_diffs[(str(glob), causal)] = max((out - scaled_dot_product_attention(q, k, v, mask)[0]).abs().max().item(),
                                            (out - F.scaled_dot_product_attention(q, k, v, attn_mask=mask)).abs().max().item())
wide = (sliding_window_attention(q, k, v, N_CHECK)[0] - F.scaled_dot_product_attention(q, k, v)).abs().max().item()
print(f"largest difference from full attention with the mask: {max(sw_diffs.values()):.1e}; "
      f"window ≥ n vs full attention: {wide:.1e}")
""")

code(r"""
assert max(sw_diffs.values()) < 1e-5 and wide < 1e-5
""", tags=["remove-cell"])

md(r"""
Change the window, the global tokens or the causal switch and draw the mask again. The figure below is the
default, the mask of $w = 2$ with position 0 global:
""")

code(r"""
plot_mask(band_global, title=f"Sliding window w = {WINDOW} + global token {GLOBAL}")
""")

code(r"""
from ipywidgets import Checkbox, IntSlider, Text, interact_manual


def draw_window(n, window, global_tokens, causal):
    positions = [int(p) for p in global_tokens.replace(",", " ").split()]
    mask = sliding_window_mask(n, window, positions or None, causal)
    display(plot_mask(mask, title=f"w = {window}, global {positions}, causal = {causal}: "
                                  f"{int(mask.sum())} of {n * n} pairs"))


_ = interact_manual.options(manual_name="Draw")(
    draw_window,
    n=IntSlider(value=N_SMALL, min=4, max=48, description="n"),
    window=IntSlider(value=WINDOW, min=1, max=16, description="window w"),
    global_tokens=Text(value=" ".join(map(str, GLOBAL)), description="global"),
    causal=Checkbox(value=False, description="causal"),
)
""", tags=["nbval-ignore-output", "remove-output"])

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 3. Linear attention: change the kernel, then re-associate

**Attention as a kernel smoother.** Write the output of query $i$ with a general similarity function
(Katharopoulos et al. 2020, Eq. 2–3):

$$
V'_i = \frac{\sum_{j} \operatorname{sim}(q_i, k_j)\, v_j}{\sum_{j} \operatorname{sim}(q_i, k_j)} .
$$

Softmax attention is $\operatorname{sim}(q, k) = \exp(q^\top k / \sqrt{d_k})$. Any non-negative similarity gives
an attention; choose one that is a dot product of *features*, $\operatorname{sim}(q, k) = \phi(q)^\top \phi(k)$
with $\phi: \mathbb{R}^{d_k} \to \mathbb{R}^{m}_{>0}$. Then $\phi(q_i)$ does not depend on $j$ and moves out of
both sums (Eq. 5):

$$
V'_i = \frac{\phi(q_i)^\top \sum_{j} \phi(k_j)\, v_j^\top}{\phi(q_i)^\top \sum_{j} \phi(k_j)}
\qquad\Longleftrightarrow\qquad
V' = \frac{\phi(Q)\,\big(\phi(K)^\top V\big)}{\phi(Q)\,\big(\phi(K)^\top \mathbf{1}\big)} \;\text{(row by row)}.
$$

The $m \times d_v$ matrix $\phi(K)^\top V$ and the $m$-vector $\phi(K)^\top \mathbf{1}$ are computed once and reused
by every query: $O(n \cdot m \cdot d_v)$ time, $O(m \cdot d_v)$ extra memory, no $n \times n$ matrix. The product
is the same as $(\phi(Q)\phi(K)^\top)\,V$ — matrix products are associative — only the order of work differs.
Katharopoulos et al. take $\phi(x) = \operatorname{elu}(x) + 1$ (Eq. 7), positive and with $m = d_k$.

**The order of the denominator.** Seed 002 writes the Performer formula as

$$
\text{Attention}(Q, K, V) \approx \phi(Q)\big(\phi(K)^\top V\big) \,/\, \big(\phi(Q)\,\phi(K)^\top \mathbf{1}\big).
$$

The numerator is in the cheap order. The denominator, read as written, is not. `FlopCounterMode` counts the
multiply-adds of both orders and `peak_tensor_bytes` the memory they hold, for $n = 4096$ and $m = 64$:
""")

code(r"""
n, m = 4096, 64
phi_q, phi_k = F.elu(torch.randn(n, m)) + 1, F.elu(torch.randn(n, m)) + 1
ones = torch.ones(n, 1)
orders = {"(φ(Q) φ(K)ᵀ) 1  (seed 002, left to right)": lambda: (phi_q @ phi_k.T) @ ones,
          "φ(Q) (φ(K)ᵀ 1)": lambda: phi_q @ (phi_k.T @ ones)}
denominator_cost = {}
for name, f in orders.items():
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        f()
    denominator_cost[name] = (counter.get_total_flops(), peak_tensor_bytes(f))
    print(f"{name:45s} {denominator_cost[name][0]:>15,} FLOPs   {denominator_cost[name][1] / 1024:>10,.1f} KiB")
slow, fast = denominator_cost.values()
same = torch.allclose(orders["φ(Q) (φ(K)ᵀ 1)"](), list(orders.values())[0](), rtol=1e-4)
print(f"the same numbers: {same}; {slow[0] // fast[0]} times the work, {slow[1] // fast[1]} times the memory")
""")

code(r"""
assert slow[0] == 2 * n * n * m + 2 * n * n == 2_181_038_080 and fast[0] == 4 * n * m == 1_048_576
assert slow[0] // fast[0] == 2080 and same
assert slow[1] == n * n * 4 + n * 4 == 64 * MiB + 16 * 1024         # the n × n matrix, then the column
assert fast[1] == m * 4 + n * 4                                    # an m-vector, then the column
""", tags=["remove-cell"])

md(r"""
:::{note}
Seed 002's denominator $\phi(Q)\phi(K)^\top\mathbf{1}$, evaluated left to right, first builds the $n \times n$
matrix $\phi(Q)\phi(K)^\top$: $O(n^2 m)$ time and $O(n^2)$ memory, the very cost linear attention is meant to
remove. To stay $O(n)$ the denominator must be bracketed like the numerator, $\phi(Q)\,(\phi(K)^\top\mathbf{1})$:
the sum of the key features first ($m$ numbers), then one dot product per query. At $n = 4096$, $m = 64$ that is
2080 times fewer FLOPs and 16 KiB instead of 64 MiB, for the same numbers.
:::

`lib.efficient.linear_attention` does this for both the numerator and the denominator; its core (shared with
the Performer of §4) is:
""")

code(r"""
display(Code(inspect.getsource(efficient._kernel_attention), language="python"))
""")

md(r"""
**Causal linear attention** cannot use one sum over all keys: query $i$ may only see keys $j \le i$. The sums
become prefix sums (Eq. 9–10), $S_i = \sum_{j \le i} \phi(k_j) v_j^\top$ and $Z_i = \sum_{j \le i} \phi(k_j)$, and
$V'_i = \phi(q_i)^\top S_i / \phi(q_i)^\top Z_i$. Read one step at a time this is a recurrent network whose state
$(S_i, Z_i)$ has a fixed size $m \times d_v + m$ (the paper's title: "Transformers are RNNs"): generating a token
costs $O(1)$ in the length of what came before, where softmax attention must look at all of it. `lib` computes the
prefix sums chunk by chunk: sums over whole chunks carry the state, and a small lower-triangular product handles
the inside of each chunk.

**The check.** Linear attention must equal the same kernel evaluated in the quadratic order
(`linear_attention_quadratic`: $\phi(Q)\phi(K)^\top$, rows normalised, times $V$), causal or not, and the causal
version must not look ahead:
""")

code(r"""
q, k, v = qkv(N_CHECK, heads=2)
lin_diffs = {}
for causal in (False, True):
    fast_out, _ = linear_attention(q, k, v, causal=causal, chunk_size=16)
    slow_out, lin_weights = linear_attention_quadratic(q, k, v, causal=causal)
    lin_diffs[causal] = ((fast_out - slow_out).abs().max() / slow_out.abs().max()).item()
t = 40
k2, v2 = k.clone(), v.clone()
k2[..., t + 1:, :], v2[..., t + 1:, :] = 10.0, -10.0                    # change every key and value after t
before = linear_attention(q, k, v, causal=True, chunk_size=16)[0][..., :t + 1, :]
after = linear_attention(q, k2, v2, causal=True, chunk_size=16)[0][..., :t + 1, :]
print(f"relative difference linear vs quadratic order: {lin_diffs[False]:.1e} (non-causal), "
      f"{lin_diffs[True]:.1e} (causal)")
print(f"causal outputs 0..{t} after changing the future: largest change {(before - after).abs().max().item():.1e}")
""")

code(r"""
assert lin_diffs[False] < 1e-5 and lin_diffs[True] < 1e-5
assert torch.equal(before, after)
assert (lin_weights.triu(1) == 0).all() and torch.allclose(lin_weights.sum(-1), torch.ones(1, 2, N_CHECK))
""", tags=["remove-cell"])

md(r"""
**What it trades away.** Linear attention is exact — for *its* kernel. It is not an approximation of softmax
attention but a different attention, and a model must be trained with it. The elu + 1 kernel grows only
linearly with $q \cdot k$, where softmax grows exponentially, so its weights are much flatter. Eight queries and
keys, the same for both:
""")

code(r"""
q8, k8, v8 = qkv(8, d_k=8, scale=1.5, seed=3)
soft_w = scaled_dot_product_attention(q8, k8, v8)[1][0, 0]
lin_w = linear_attention_quadratic(q8, k8, v8)[1][0, 0]
largest = {"softmax": soft_w.max(-1).values.mean().item(), "elu + 1": lin_w.max(-1).values.mean().item()}
print("mean of each row's largest weight:", {name: round(x, 3) for name, x in largest.items()})
plot_attention_grid(torch.stack([soft_w, lin_w])[None], col_titles=["softmax(QKᵀ/√d_k)", "linear, φ = elu + 1"],
                    row_titles=[""], panel_size=2.6)
""")

code(r"""
assert largest["softmax"] > 0.5 > 0.2 > largest["elu + 1"]
""", tags=["remove-cell"])

md(r"""
On average a softmax row puts more than half of its weight on its largest key; with elu + 1 the largest weight
is less than a fifth. Sharp, "look-up"-like attention is what linear attention finds hardest.

## 4. Performer: random features for the softmax kernel itself

Could a feature map reproduce the *softmax* kernel, $\exp(q^\top k)$? Not exactly with finitely many features,
but in expectation. Choromanski et al. (2021, Lemma 1) use, for $\omega \sim \mathcal{N}(0, I_{d})$,

$$
\exp(x^\top y) = \mathbb{E}_{\omega}\!\left[\exp\!\big(\omega^\top x - \tfrac{\|x\|^2}{2}\big)\,
\exp\!\big(\omega^\top y - \tfrac{\|y\|^2}{2}\big)\right],
\qquad
\phi(x) = \frac{1}{\sqrt{m}}\Big(\exp\!\big(\omega_r^\top x - \tfrac{\|x\|^2}{2}\big)\Big)_{r = 1 \dots m} ,
$$

so that $\phi(x)^\top \phi(y)$ averages $m$ samples and estimates $\exp(x^\top y)$ without bias. Every feature is
positive (the older $\sin$/$\cos$ random features are not, and their denominators can cross zero). Queries and
keys are scaled by $d_k^{-1/4}$ first, so that $x^\top y = q^\top k / \sqrt{d_k}$, softmax's score. The $\omega_r$
are drawn in blocks of $d_k$ exactly orthogonal directions ("FAVOR+", with orthogonal random features), which
lowers the variance. Then linear attention does the rest: $O(n \cdot m \cdot d)$.
""")

code(r"""
display(Code(inspect.getsource(performer_features), language="python"))
""")

md(r"""
**Unbiased.** With many independent features the estimate should match $\exp(x^\top y)$ on average:
""")

code(r"""
g = torch.Generator().manual_seed(SEED)
x, y = (0.3 * torch.randn(6, 8, generator=g, dtype=torch.float64) for _ in range(2))
omega = random_projection(2**16, 8, seed=SEED, orthogonal=False, dtype=torch.float64)
ratio = (performer_features(x, omega) @ performer_features(y, omega).T) / torch.exp(x @ y.T)
print(f"estimate / exp(xᵀy) over 36 pairs, m = 65536: mean {ratio.mean().item():.4f}, "
      f"range {ratio.min().item():.4f} … {ratio.max().item():.4f}")
""")

code(r"""
assert abs(ratio.mean().item() - 1) < 0.01 and (ratio - 1).abs().max() < 0.05
""", tags=["remove-cell"])

md(r"""
**How many features?** Unbiased is not accurate. The variance of one product is
$\exp(x^\top y)^2\,(e^{\|x + y\|^2} - 1)$ (Choromanski et al., Lemma 2): it grows exponentially with the lengths of
the queries and keys, that is, with how *peaked* the attention is. We measure the error on the attention weights
(`linear_attention_quadratic` with the Performer's features gives them) as the share of attention mass put in the
wrong place, the total-variation distance $\tfrac12 \sum_j |\hat a_{ij} - a_{ij}|$, averaged over the queries and
over 5 seeds, for $n = 256$, $d_k = 64$ and scores $q \cdot k / \sqrt{d_k}$ of standard deviation 0.25, 0.5 and 1:
""")

code(r"""
def performer_weights(q, k, m, seed):
    omega = random_projection(m, q.size(-1), seed=seed)
    phi = lambda x: performer_features(x * q.size(-1) ** -0.25, omega)   # the Performer's map, with its scaling
    return linear_attention_quadratic(q, k, k, feature_map=phi)[1]


perf_error = {}
for s in SCORE_SCALES:
    q, k, _ = qkv(PERF_N, d_k=D_K, scale=math.sqrt(s))              # entries of variance s: scores of std s
    exact = scaled_dot_product_attention(q, k, k)[1]
    perf_error[s] = [np.mean([0.5 * (performer_weights(q, k, m, seed) - exact).abs().sum(-1).mean().item()
                              for seed in PERF_SEEDS]) for m in FEATURES]
    print(f"score std {s}: " + "  ".join(f"m={m}: {e:.3f}" for m, e in zip(FEATURES, perf_error[s])))
curves = {f"scores of std {s}": (FEATURES, perf_error[s]) for s in SCORE_SCALES}
curves["∝ 1/√m"] = (FEATURES, [perf_error[SCORE_SCALES[0]][0] * math.sqrt(FEATURES[0] / m) for m in FEATURES])
fig = plot_curves(curves, xlabel="random features m", ylabel="misplaced attention mass (log scale)", logy=True,
                  title=f"Performer vs softmax, n = {PERF_N}, d_k = {D_K}", figsize=(6.5, 3.6))
log2_axis(fig, FEATURES)
""")

code(r"""
for s in SCORE_SCALES:
    assert all(a > b for a, b in zip(perf_error[s], perf_error[s][1:]))         # more features, smaller error
low, high = perf_error[0.25], perf_error[1.0]
assert low[FEATURES.index(1024)] < low[0] / 4 and low[-1] < 0.055 and low[0] > 0.25
assert high[-1] > 0.4 and all(h > lo for h, lo in zip(high, low))
slope = np.polyfit(np.log(FEATURES), np.log(low), 1)[0]
assert -0.5 < slope < -0.25
""", tags=["remove-cell"])

md(r"""
Every curve falls as $m$ grows, as it must, but how far depends on the scores. With broad attention (scores of
standard deviation 0.25) 16 features misplace more than a quarter of the mass and 2048 features about 5 %;
the error falls somewhat more slowly than $1/\sqrt{m}$ here. With scores of standard deviation 1 — the size
that the $1/\sqrt{d_k}$ scaling aims for (self-attention chapter, §5) — even 2048 features, 32 times $d_k$,
leave more than 40 % of the mass in the wrong place. That is the Performer's trade: linear cost, an unbiased but noisy estimate of softmax whose noise grows
exponentially with the size of the scores, and a constant factor $m/d_k$ (often 4 or more) over linear
attention. Causal attention works, with the prefix sums of §3.

## 5. LSH attention: let hashing find the keys that matter

Softmax attention is dominated by its largest scores: a query puts almost all its weight on the few keys most
similar to it. Reformer (Kitaev et al. 2020) finds those keys without comparing all pairs, with
**locality-sensitive hashing** (LSH): a hash under which similar vectors probably collide. For angles, pick a
random matrix $R \in \mathbb{R}^{d_k \times b/2}$ and hash $x$ to the bucket

$$
h(x) = \arg\max\,\big[\,x R \,;\, -x R\,\big] \in \{0, \dots, b - 1\},
$$

the nearest of $b$ random directions (and their opposites). Then:

1. **Shared QK.** Queries and keys come from one projection; the keys are the unit-length queries,
   $k_j = q_j / \|q_j\|$. A query and its own key then always share a bucket, and one sort orders both. (A token's
   score with itself is then high; Reformer masks it unless there is nothing else — `mask_self=True` in `lib`.)
2. **Sort** the positions by bucket (and by position within a bucket).
3. **Chunk** the sorted sequence into pieces of $c$ positions (about the average bucket size $n / b$); each chunk
   attends to itself and to the chunk before it, in case a bucket straddles a chunk boundary: $c \times 2c$
   scores per chunk, $O(n \cdot c)$ in all.
4. **Unsort** the outputs. Several **rounds** of hashing with different $R$ catch what one round misses; the
   rounds are combined with their softmax normalisers, each key counted once.

Here are the pairs of 32 tokens drawn from 4 "topics" (clusters), with 4 buckets: in the original order they look
scattered; sorted by bucket they are the chunks on the diagonal plus one chunk back:
""")

code(r"""
def topic_tokens(n, topics, d_k, scale, seed=SEED):
    # n vectors around `topics` random centres: tokens of the same topic point in similar directions
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(topics, d_k, generator=g)
    topic = torch.randint(0, topics, (n,), generator=g)
    x = centres[topic] + 0.5 * torch.randn(n, d_k, generator=g)
    return scale * x[None, None], topic                                   # (1, 1, n, d_k)


q32, topic32 = topic_tokens(32, 4, 8, 1.0)                           # 32 tokens, 4 topics, d_k = 8
buckets = lsh_hash(q32, lsh_rotations(8, 4, seed=SEED))[0, 0, 0]    # (32,): one bucket per token, round 0
order = (buckets * 32 + torch.arange(32)).argsort()
mask32 = lsh_mask(q32, num_buckets=4, seed=SEED)[0, 0]
same_topic = topic32[:, None] == topic32[None, :]
same_bucket = buckets[:, None] == buckets[None, :]
collide = {"same topic": same_bucket[same_topic].float().mean().item(),
           "different topics": same_bucket[~same_topic].float().mean().item()}
print("topics: ", topic32.tolist())
print("buckets:", buckets.tolist())
print("sorted positions:", order.tolist())
print("pairs that share a bucket:", {name: round(x, 2) for name, x in collide.items()})
display(plot_mask(mask32, title="LSH attention, 4 buckets: original order"),
        plot_mask(mask32[order][:, order], title="… the same pairs, positions sorted by bucket"))
""")

code(r"""
assert collide["same topic"] > 0.6 and collide["different topics"] < 1 / 6
sorted_mask = mask32[order][:, order]
blocks = torch.zeros(32, 32, dtype=torch.bool)
for t in range(4):                                   # chunk t and chunk t - 1 (chunk 0 looks at chunk 3)
    blocks[8 * t:8 * t + 8, 8 * t:8 * t + 8] = True
    blocks[8 * t:8 * t + 8, 8 * ((t - 1) % 4):8 * ((t - 1) % 4) + 8] = True
assert torch.equal(sorted_mask, blocks) and mask32.sum() == 32 * 16
""", tags=["remove-cell"])

md(r"""
Hashing is random: about two thirds of the pairs of tokens of one topic share a bucket, against fewer than one
in six of the pairs from different topics. In sorted order each query sees its chunk of 8 and the chunk before:
16 of 32 keys. The code:
""")

code(r"""
display(Code(inspect.getsource(lsh_attention), language="python"))
""")

md(r"""
**The checks.** With a single bucket everything is one chunk, and LSH attention must be full attention with
shared QK (for any number of rounds). In general it must be full attention restricted to its mask, `lsh_mask`,
the union of what the rounds see:
""")

code(r"""
q, _, v = qkv(N_CHECK)
k_shared = q / q.norm(dim=-1, keepdim=True)
one_bucket = max((lsh_attention(q, None, v, num_buckets=1, num_hashes=h)[0]
                  - F.scaled_dot_product_attention(q, k_shared, v)).abs().max().item() for h in (1, 3))
lsh_diffs = []
for buckets_, hashes, causal in [(4, 1, False), (8, 2, False), (8, 4, True)]:
    out, _ = lsh_attention(q, None, v, buckets_, hashes, seed=SEED, causal=causal)
    mask = lsh_mask(q, buckets_, hashes, seed=SEED, causal=causal)
    lsh_diffs.append((out - scaled_dot_product_attention(q, k_shared, v, mask)[0]).abs().max().item())
print(f"one bucket vs full attention: {one_bucket:.1e}; vs full attention with lsh_mask: {max(lsh_diffs):.1e}")
""")

code(r"""
assert one_bucket < 1e-5 and max(lsh_diffs) < 1e-5
""", tags=["remove-cell"])

md(r"""
**Does hashing find the right keys?** What counts is the share of the *attention mass* (of full attention) that
falls on the keys LSH lets a query see, compared with the share of keys it sees. For 256 tokens from 16 topics,
16 buckets (chunks of 16) and self-attention masked as in Reformer:
""")

code(r"""
q, topic = topic_tokens(LSH_N, LSH_TOPICS, D_K, 6.0)
k_shared = q / q.norm(dim=-1, keepdim=True)
not_self = ~torch.eye(LSH_N, dtype=torch.bool)
full_w = scaled_dot_product_attention(q, k_shared, q, not_self)[1]         # full shared-QK attention, no self
keys_seen, mass_seen = [], []
for h in LSH_HASHES:
    seen = lsh_mask(q, LSH_BUCKETS, h, seed=SEED) & not_self
    keys_seen.append(seen.float().sum(-1).mean().item() / (LSH_N - 1))
    mass_seen.append((full_w * seen).sum(-1).mean().item())
print("rounds:             ", LSH_HASHES)
print("share of keys seen: ", np.round(keys_seen, 3))
print("share of mass seen: ", np.round(mass_seen, 3))
fig = plot_curves({"attention mass on the keys seen": (LSH_HASHES, mass_seen),
                   "keys seen": (LSH_HASHES, keys_seen)},
                  xlabel="hash rounds", ylabel="share", title=f"LSH, n = {LSH_N}, {LSH_BUCKETS} buckets",
                  figsize=(5.5, 3.4))
log2_axis(fig, LSH_HASHES)
""")

code(r"""
assert all(m > 1.4 * k for m, k in zip(mass_seen, keys_seen))             # hashing finds the heavy keys
assert all(a < b for a, b in zip(mass_seen, mass_seen[1:])) and all(a < b for a, b in zip(keys_seen, keys_seen[1:]))
assert keys_seen[0] < 0.15 and mass_seen[0] > 0.4 and keys_seen[-1] < 0.6 and mass_seen[-1] > 0.9
""", tags=["remove-cell"])

md(r"""
With one round a query sees about an eighth of the keys but more than 40 % of the attention mass; with 8
rounds fewer than 60 % of the keys but more than 90 % of the mass. Hashing works here because the attention is peaked — the tokens come in
topics and the scores are large. For broad attention (random, short vectors) LSH sees the same share of the mass
as of the keys: nothing to find. That is the mirror image of the Performer, which is accurate exactly when
attention is broad. What LSH trades away: exactness (keys in other buckets get weight 0), the shared-QK
restriction, a sort per round ($O(n \log n)$, seed 002's figure), several rounds for good recall, and gathers and
scatters that are slow on hardware built for dense matrix products.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## 6. Time and memory against n

`lib.efficient.scaling_cost` runs all six on random inputs (batch 1, 4 heads, $d_k = 64$, one thread), the
methods taking turns (`lib.cost.median_ms`, median of 3 calls), and measures each call's peak tensor memory
(`lib.cost.peak_tensor_bytes`). The contestants (`attention_methods()`): `lib`'s explicit full attention, torch's
fused kernel, a sliding window of ±64, linear attention with elu + 1, the Performer with 256 features and LSH with
chunks of 64 ($n / 64$ buckets, one round). Timings depend on the machine, so they are shown, not checked:
""")

code(r"""
# NBVAL_IGNORE_OUTPUT
points = scaling_cost(SCALING_LENGTHS, attention_methods(seed=SEED), heads=HEADS, d_k=D_K, repeats=3, max_ms=None)
names = list(attention_methods())
ms = {name: [p.ms for p in points if p.method == name] for name in names}
peak = {name: [p.peak_bytes for p in points if p.method == name] for name in names}
print(f"{'n':>5} " + " ".join(f"{name:>18}" for name in names) + "   (ms per call)")
for i, n in enumerate(SCALING_LENGTHS):
    print(f"{n:>5} " + " ".join(f"{ms[name][i]:>18.2f}" for name in names))
cross_full = crossover(SCALING_LENGTHS, ms["full (lib)"], ms["linear (elu+1)"])
cross_fused = crossover(SCALING_LENGTHS, ms["full (torch fused)"], ms["linear (elu+1)"])
print(f"linear attention is faster than lib's full attention from n = {cross_full} on, "
      f"than torch's fused kernel from n = {cross_fused} on (this machine, this run)")
fig = plot_curves({name: (SCALING_LENGTHS, ms[name]) for name in names}, xlabel="sequence length n",
                  ylabel="ms per call (log scale)", logy=True, figsize=(7, 4),
                  title=f"Self-attention, batch 1, {HEADS} heads, d_k = {D_K}, one thread")
log2_axis(fig, SCALING_LENGTHS)
""")

md(r"""
On the log–log plot a cost $\propto n^p$ is a line of slope $p$. Both full attentions bend up to slope 2 — twice
the tokens, four times the time — while the sliding window, linear attention, the Performer and LSH stay near
slope 1. For short sequences the picture is the other way round: full attention is a few large, well-optimised
matrix products, and the efficient methods pay fixed costs (padding, feature maps, sorting, gathering). The
crossover — the shortest measured $n$ from which linear attention stays faster — is printed above: on the machine
that built this page it came at a few hundred tokens, against both full attentions. The Performer and LSH need
longer sequences to win: their constant factors (256 features; sorting and gathering) are large. `python bench/attention_scaling.py --threads 1` repeats the measurement up to $n = 16384$.

**Memory** is measured by watching the tensors each call creates, so it is exact and reproducible:
""")

code(r"""
print(f"{'n':>5} " + " ".join(f"{name:>18}" for name in names) + "   (peak MiB)")
for i, n in enumerate(SCALING_LENGTHS):
    print(f"{n:>5} " + " ".join(f"{peak[name][i] / MiB:>18.2f}" for name in names))
fig = plot_curves({name: (SCALING_LENGTHS, [b / MiB for b in peak[name]]) for name in names},
                  xlabel="sequence length n", ylabel="peak MiB (log scale)", logy=True, figsize=(7, 4),
                  title="Peak tensor memory of one call")
log2_axis(fig, SCALING_LENGTHS)
""")

code(r"""
growth = {name: peak[name][-1] / peak[name][-2] for name in names}   # the last doubling of n, 2048 -> 4096
assert peak["full (lib)"][-1] == 516 * MiB and 3.9 < growth["full (lib)"] < 4.0
for name in names[1:]:
    assert 1.9 < growth[name] < 2.1, (name, growth[name])                # O(n)
assert peak["linear (elu+1)"][-1] < peak["full (lib)"][-1] / 30
assert peak["full (torch fused)"][-1] < peak["linear (elu+1)"][-1]
""", tags=["remove-cell"])

md(r"""
`lib`'s explicit attention quadruples with every doubling (516 MiB at $n = 4096$: scores and weights). Every other
method doubles — including torch's *exact* fused kernel, which holds the least of all. Saving memory, then, does
not require giving up exactness; saving *time* at long $n$ does.

## 7. Exact attention in O(n) memory: what the fused kernel does

FlashAttention (Dao et al. 2022) computes softmax attention exactly without the $n \times n$ matrix: it walks
through the keys block by block and keeps, for every query, a running maximum $m$, a running sum of exponentials
$\ell$ and a running weighted sum of values. When a new block raises the maximum, the old sums are rescaled by
$e^{m_\text{old} - m_\text{new}}$ (the "online softmax"). Work stays $O(n^2 d)$ — every pair is still scored — but
only one block of scores exists at a time, and on a GPU the blocks stay in fast on-chip memory. PyTorch's fused
`F.scaled_dot_product_attention` uses the same scheme on the CPU, which is why its memory grew like $n$ above. In a
dozen lines:
""")

code(r"""
def blockwise_attention(q, k, v, block=16):
    # exact softmax(q kᵀ / √d) v, one block of keys at a time: O(n · block) scores alive, never n × n
    scale = q.size(-1) ** -0.5
    running_max = torch.full(q.shape[:-1] + (1,), float("-inf"))
    running_sum = torch.zeros(q.shape[:-1] + (1,))
    acc = torch.zeros(q.shape[:-1] + (v.size(-1),))
    for start in range(0, k.size(-2), block):
        s = q @ k[..., start:start + block, :].transpose(-1, -2) * scale   # (…, n, block)
        new_max = torch.maximum(running_max, s.amax(-1, keepdim=True))
        rescale = torch.exp(running_max - new_max)                          # shrink what was summed so far
        p = torch.exp(s - new_max)
        running_sum = running_sum * rescale + p.sum(-1, keepdim=True)
        acc = acc * rescale + p @ v[..., start:start + block, :]
        running_max = new_max
    return acc / running_sum


q, k, v = qkv(N_CHECK, scale=3.0)
flash_diff = (blockwise_attention(q, k, v) - scaled_dot_product_attention(q, k, v)[0]).abs().max().item()
print(f"block by block vs lib's attention: largest difference {flash_diff:.1e}")
""")

code(r"""
assert flash_diff < 1e-5
""", tags=["remove-cell"])

md(r"""
## 8. What each method trades away

| method | pairs scored | time | memory | exact? | causal? | the catch |
| --- | --- | --- | --- | --- | --- | --- |
| full attention (`lib`) | $n^2$ | $O(n^2 d)$ | $O(n^2)$ | yes | yes (mask) | the wall |
| fused / FlashAttention | $n^2$ | $O(n^2 d)$ | $O(n)$ | yes | yes | still quadratic time |
| sliding window + global (Longformer) | $\approx n(2w + 1) + 2gn$ | $O(n w d)$ | $O(n w)$ | for its mask | yes | no direct long-range link except through global tokens or many layers |
| linear, elu + 1 (Katharopoulos) | none | $O(n m d)$ | $O(n m + m d)$ | for its kernel | yes (prefix sums) | a different, flatter attention; sharp look-ups are hard |
| Performer (FAVOR+) | none | $O(n m d)$, $m \gg d$ | $O(n m)$ | unbiased estimate | yes (prefix sums) | variance grows like $e^{\lVert q + k \rVert^2}$; large constant factor |
| LSH (Reformer) | $\approx 2 n c$ per round | $O(h\, n c d + h\, n \log n)$ | $O(h\, n c)$ | for its buckets | yes | shared QK; misses keys in other buckets; sorting and gathering are slow |

The "exact for its mask/kernel" rows are *different models*: they must be trained that way, and whether they
match full attention on a task is an empirical question, not a property of the code. The fused kernel is the one
entry that changes nothing but the cost, and for the sentence lengths of translation ($n < 100$) it is all
one needs.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Summary

- Full attention stores $n^2$ weights per head: 512 MiB per layer at $n = 4096$ with 8 heads, 128 GiB at
  $n = 65536$.
- **Sliding window** (Longformer): each query sees $\pm w$ neighbours, plus global tokens that see and are seen by
  all; computed block by block in $O(n \cdot w)$, equal to full attention with the band mask.
- **Linear attention** (Katharopoulos et al.): replace $\exp(q \cdot k)$ by $\phi(q) \cdot \phi(k)$ and
  re-associate: $\phi(Q)(\phi(K)^\top V) / \phi(Q)(\phi(K)^\top \mathbf{1})$ — the denominator bracketed like the
  numerator (seed 002's $\phi(Q)\phi(K)^\top\mathbf{1}$ is $O(n^2)$: 2080 times the FLOPs at $n = 4096$). Causal
  by prefix sums: an RNN with a fixed-size state.
- **Performer** (FAVOR+): positive random features make $\phi(x)\cdot\phi(y)$ an unbiased estimate of
  $\exp(x^\top y)$; the error falls as features are added, but grows exponentially with the size of the scores.
- **LSH attention** (Reformer): angular hashing, sort, chunk, attend within a chunk and one back; it finds the
  heavy keys when attention is peaked, and needs shared QK and several rounds.
- Measured: the efficient methods' time and memory grow like $n$, the full attentions' time like $n^2$; linear
  attention overtakes full attention after a few hundred tokens on this machine. torch's fused kernel
  (FlashAttention's online softmax) is exact with $O(n)$ memory.
""")

# ---------------------------------------------------------------------------------------------------------
md(r"""
## Exercises

Each exercise ends with a call to `check`, which tests your answer against `lib` and prints ✅ or a hint.
""")

md(r"""
:::{exercise}
:label: ea-window-mask

Write `window_mask(seq_len, window, causal)` that returns the `(seq_len, seq_len)` boolean mask of sliding-window
attention: `True` where query $i$ may attend to key $j$, that is $|i - j| \le$ `window`, and, when `causal` is
true, also $j \le i$. Finish with `check("ea_window_mask", window_mask)`.
:::
""")

solution("ea-window-mask", r"""
def window_mask(seq_len, window, causal):
    i = torch.arange(seq_len)[:, None]               # query positions (rows)
    j = torch.arange(seq_len)[None, :]               # key positions (columns)
    allowed = (i - j).abs() <= window                # the band: window positions each side
    if causal:
        allowed &= j <= i                            # and nothing from the future
    return allowed


assert check("ea_window_mask", window_mask)  # prints ✅; the assert makes `make test` fail if this solution ever stops passing
""")

md(r"""
:::{exercise}
:label: ea-receptive-field

In a stack of sliding-window layers, token $j$ can influence token $i$'s output after one layer only if
$|i - j| \le w$; after two layers, also through a token in between. Write `receptive_field(seq_len, window,
layers)` that returns the largest distance $|i - j|$ over which information can travel through `layers` layers of
a sequence of `seq_len` tokens (no global tokens). Finish with `check("ea_receptive_field", receptive_field)`.
:::
""")

solution("ea-receptive-field", r"""
def receptive_field(seq_len, window, layers):
    # each layer moves information at most `window` positions further; no distance exceeds seq_len - 1
    return min(layers * window, seq_len - 1)


assert check("ea_receptive_field", receptive_field)
""")

md(r"""
:::{exercise}
:label: ea-linear-attention

Write `linear_attention_head(phi_q, phi_k, v)` for one head: `phi_q` of shape `(n_q, m)` and `phi_k` of shape
`(n_k, m)` are the (positive) features of the queries and keys, `v` of shape `(n_k, d_v)` the values; return the
`(n_q, d_v)` output $\phi(Q)(\phi(K)^\top V) / \phi(Q)(\phi(K)^\top \mathbf{1})$ with torch, without ever forming an
$n \times n$ matrix — the checker measures your function's memory at $n = 2048$. Finish with
`check("ea_linear_attention", linear_attention_head)`.
:::
""")

solution("ea-linear-attention", r"""
def linear_attention_head(phi_q, phi_k, v):
    kv = phi_k.T @ v                              # (m, d_v): Σ_j φ(k_j) v_jᵀ, computed once
    z = phi_k.sum(dim=0)                          # (m,):     φ(K)ᵀ 1, the denominator's sum, computed once
    return (phi_q @ kv) / (phi_q @ z)[:, None]    # (n_q, d_v): one dot product per query for the denominator


assert check("ea_linear_attention", linear_attention_head)
""")

md(r"""
:::{exercise}
:label: ea-performer-features

Write `positive_features(x, w)`: for the rows of `x` (shape `(n, d)`) and random vectors $\omega_r$, the rows of
`w` (shape `(m, d)`), return the `(n, m)` FAVOR+ features $\exp(\omega_r^\top x - \|x\|^2/2) / \sqrt{m}$. Finish
with `check("ea_performer_features", positive_features)`.
:::
""")

solution("ea-performer-features", r"""
def positive_features(x, w):
    m = w.shape[0]
    half_sq_norm = (x * x).sum(dim=-1, keepdim=True) / 2        # ‖x‖²/2, one per row
    return torch.exp(x @ w.T - half_sq_norm) / math.sqrt(m)     # (n, m), every entry positive


assert check("ea_performer_features", positive_features)
""")

md(r"""
:::{exercise}
:label: ea-choose

You must summarise 20 000-token documents with a Transformer encoder on one GPU. For each of the four approaches
of this chapter (and the fused exact kernel), say what would limit you — memory, time, accuracy — and which you
would try first. What would change for a decoder that generates 20 000 tokens one at a time?
:::

:::{solution} ea-choose
:class: dropdown

At $n = 20\,000$ explicit attention needs $4 \cdot h \cdot n^2$ bytes = 1.6 GB per head and layer: out. The fused
exact kernel needs $O(n)$ memory and is the first thing to try: it changes nothing in the model, and $n^2 d$
FLOPs per layer (about 26 GFLOPs per head at $d = 64$) are affordable on a GPU for a handful of layers. If time is
the limit, a sliding window with global tokens (Longformer) is the standard choice for documents: summaries
depend mostly on local context plus a few global positions, and the model is easy to fine-tune from a
full-attention one. Linear attention and the Performer are attractive for their $O(n)$ cost but change the
attention (flatter, or noisy where it is peaked), so they need training and an evaluation of quality; LSH needs
shared QK and several rounds and its sorting is slow in practice. For a decoder generating token by token, causal
linear attention is an RNN with a constant-size state — $O(1)$ per new token instead of attending over all
previous tokens (a growing key/value cache) — which is its strongest argument.
:::
""")

md(r"""
## References

- Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N., Kaiser, Ł. and Polosukhin, I.
  (2017). Attention Is All You Need. *NeurIPS*. arXiv:1706.03762. §3.2.1 (Eq. 1), Table 1 (complexity).
- Child, R., Gray, S., Radford, A. and Sutskever, I. (2019). Generating Long Sequences with Sparse Transformers.
  arXiv:1904.10509. §4 (strided and fixed sparse patterns).
- Beltagy, I., Peters, M. E. and Cohan, A. (2020). Longformer: The Long-Document Transformer. arXiv:2004.05150.
  §3.1 (sliding window, dilation, global attention), §3.2 (implementation).
- Katharopoulos, A., Vyas, A., Pappas, N. and Fleuret, F. (2020). Transformers are RNNs: Fast Autoregressive
  Transformers with Linear Attention. *ICML*. §3.2, Eq. (2)–(7); §3.3, Eq. (8)–(10) (causal, RNN view).
- Choromanski, K., Likhosherstov, V., Dohan, D., Song, X., Gane, A., Sarlos, T., Hawkins, P., Davis, J.,
  Mohiuddin, A., Kaiser, Ł., Belanger, D., Colwell, L. and Weller, A. (2021). Rethinking Attention with
  Performers. *ICLR*. §2.2–2.4 (FAVOR+: kernelised attention and prefix sums, Lemma 1 and 2, orthogonal random
  features).
- Kitaev, N., Kaiser, Ł. and Levskaya, A. (2020). Reformer: The Efficient Transformer. *ICLR*. §2 (LSH attention,
  multi-round hashing, shared-QK, masking attention to oneself).
- Dao, T., Fu, D. Y., Ermon, S., Rudra, A. and Ré, C. (2022). FlashAttention: Fast and Memory-Efficient Exact
  Attention with IO-Awareness. *NeurIPS*. §3.1 (tiling, online softmax).
""")

nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
nb.metadata["language_info"] = {"name": "python"}
nbf.write(nb, sys.argv[1])
