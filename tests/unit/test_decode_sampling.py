"""lib.decode's sampling (temperature, top-k, top-p, generate), decoding without the cache, the cache's size,
and beam search's hypothesis tree (with lib.plots.plot_beam_tree)."""

from __future__ import annotations

import io
import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from matplotlib.figure import Figure

from lib import gpt
from lib.decode import (
    BeamTree,
    beam_search,
    filter_top_k,
    filter_top_p,
    generate,
    greedy_decode,
    kv_cache_bytes,
    kv_cache_table,
    sample_next_token,
)
from lib.gpt import GPT, GPTConfig
from lib.modern import ModernGPT, ModernGPTConfig
from lib.plots import plot_beam_tree
from lib.special_tokens import BOS_ID, EOS_ID, PAD_ID
from lib.transformer import Transformer, TransformerConfig

V = 40

# --- filters ----------------------------------------------------------------------------------------------------

PROBS = torch.tensor([0.05, 0.4, 0.1, 0.3, 0.15])  # sorted: 0.4 (1), 0.3 (3), 0.15 (4), 0.1 (2), 0.05 (0)
LOGITS = PROBS.log()


def test_top_k_keeps_exactly_the_k_largest_and_renormalises():
    out = filter_top_k(LOGITS, 2)
    kept = torch.isfinite(out)
    assert kept.tolist() == [False, True, False, True, False]
    torch.testing.assert_close(out.softmax(-1), torch.tensor([0, 0.4, 0, 0.3, 0]) / 0.7)
    torch.testing.assert_close(filter_top_k(LOGITS, 5), LOGITS)  # k = vocab keeps all
    torch.testing.assert_close(filter_top_k(LOGITS, 99), LOGITS)
    # a batch: each row its own top k
    batch = torch.stack([LOGITS, LOGITS.flip(0)])
    assert torch.isfinite(filter_top_k(batch, 1)).nonzero().tolist() == [[0, 1], [1, 3]]


@pytest.mark.parametrize(
    "p, kept",
    [
        (0.4, [1]),  # the most probable token alone already has mass 0.4 ≥ p
        (0.41, [1, 3]),
        (0.7, [1, 3]),  # 0.4 + 0.3 = 0.7 ≥ 0.7
        (0.71, [1, 3, 4]),
        (0.9, [1, 3, 4, 2]),
        (0.96, [0, 1, 2, 3, 4]),
        (1.0, [0, 1, 2, 3, 4]),
        (0.01, [1]),  # always at least one token
    ],
)
def test_top_p_keeps_the_smallest_nucleus_of_mass_p(p, kept):
    out = filter_top_p(LOGITS, p)
    assert sorted(torch.isfinite(out).nonzero().flatten().tolist()) == sorted(kept)
    expected = torch.zeros(5)
    expected[kept] = PROBS[kept] / PROBS[kept].sum()
    torch.testing.assert_close(out.softmax(-1), expected)


def test_top_p_works_row_by_row():
    batch = torch.stack([LOGITS, torch.zeros(5)])  # the second row is uniform: p = 0.5 needs 3 of 5 tokens
    out = filter_top_p(batch, 0.5)
    assert torch.isfinite(out).sum(-1).tolist() == [2, 3]


def test_filter_errors():
    with pytest.raises(ValueError, match="k"):
        filter_top_k(LOGITS, 0)
    with pytest.raises(TypeError, match="k"):
        filter_top_k(LOGITS, 1.5)
    with pytest.raises(ValueError, match="p"):
        filter_top_p(LOGITS, 0.0)
    with pytest.raises(ValueError, match="p"):
        filter_top_p(LOGITS, 1.5)
    with pytest.raises(TypeError, match="logits"):
        filter_top_p(LOGITS.tolist(), 0.5)
    with pytest.raises(ValueError, match="logits"):
        filter_top_k(torch.ones(5, dtype=torch.long), 2)


# --- sampling ---------------------------------------------------------------------------------------------------


def test_temperature_zero_and_small_temperatures_are_argmax():
    logits = torch.randn(6, 30, generator=torch.Generator().manual_seed(0))
    argmax = logits.argmax(-1)
    assert torch.equal(sample_next_token(logits, temperature=0), argmax)
    assert torch.equal(sample_next_token(logits, temperature=0, top_k=3, top_p=0.5), argmax)
    gen = torch.Generator().manual_seed(1)
    for _ in range(5):  # T → 0: softmax(l / T) concentrates on the argmax
        assert torch.equal(sample_next_token(logits, temperature=1e-4, generator=gen), argmax)
    assert sample_next_token(logits[0], temperature=0).dim() == 0


def test_sampling_is_reproducible_with_a_seed_and_follows_the_distribution():
    logits = LOGITS.repeat(4000, 1)
    draws = sample_next_token(logits, generator=torch.Generator().manual_seed(0))
    again = sample_next_token(logits, generator=torch.Generator().manual_seed(0))
    assert torch.equal(draws, again)
    freq = torch.bincount(draws, minlength=5).float() / 4000
    assert (freq - PROBS).abs().max() < 0.03  # ±4.5 standard errors at most
    # top-p 0.7 then samples only tokens 1 and 3, in the ratio 4 : 3
    nucleus = sample_next_token(logits, top_p=0.7, generator=torch.Generator().manual_seed(0))
    assert set(nucleus.tolist()) == {1, 3}
    assert abs((nucleus == 1).float().mean().item() - 4 / 7) < 0.03
    # a high temperature flattens the distribution towards uniform
    hot = sample_next_token(logits, temperature=100.0, generator=torch.Generator().manual_seed(0))
    assert (torch.bincount(hot, minlength=5).float() / 4000 - 0.2).abs().max() < 0.03


def test_sample_next_token_errors():
    with pytest.raises(ValueError, match="temperature"):
        sample_next_token(LOGITS, temperature=-1.0)
    with pytest.raises(ValueError, match="top_k"):
        sample_next_token(LOGITS, top_k=0)
    with pytest.raises(ValueError, match="top_p"):
        sample_next_token(LOGITS, top_p=0.0)
    with pytest.raises(TypeError, match="generator"):
        sample_next_token(LOGITS, generator=0)
    with pytest.raises(ValueError, match="logits"):
        sample_next_token(torch.zeros(2, 3, 4))


# --- generate for the book's GPT and ModernGPT --------------------------------------------------------------------


def _gpt():
    torch.manual_seed(0)
    return GPT(GPTConfig.tiny(V, d_model=16, num_heads=2, d_ff=32, max_len=12)).eval()


@pytest.mark.parametrize("temperature, top_k", [(0.0, None), (1.0, None), (0.8, 5), (1.3, 1)])
def test_generate_equals_gpt_generate_without_top_p(temperature, top_k):
    model = _gpt()
    prompt = torch.tensor([[BOS_ID, 5, 6], [BOS_ID, 7, 8]])
    ours = generate(model, prompt, 15, temperature, top_k, generator=torch.Generator().manual_seed(3))
    book = gpt.generate(model, prompt, 15, temperature, top_k, generator=torch.Generator().manual_seed(3))
    assert torch.equal(ours, book)
    assert ours.shape == (2, 18)  # past max_len = 12: the window slides


def test_generate_top_p_reproducible_and_on_modern_gpt():
    torch.manual_seed(0)
    modern = ModernGPT(ModernGPTConfig.tiny(V, d_model=16, num_heads=2, num_kv_heads=1, ffn_hidden=24)).eval()
    for model in (_gpt(), modern):
        prompt = torch.tensor([BOS_ID, 5])
        a = generate(model, prompt, 8, top_p=0.9, generator=torch.Generator().manual_seed(7))
        b = generate(model, prompt, 8, top_p=0.9, generator=torch.Generator().manual_seed(7))
        assert torch.equal(a, b) and a.shape == (10,) and torch.equal(a[:2], prompt)
        greedy = generate(model, prompt, 8, temperature=0)
        assert torch.equal(greedy, generate(model, prompt, 8, top_p=1e-6, generator=torch.Generator()))
    assert modern.training is False


def test_generate_stops_at_eos():
    model = _gpt()
    with torch.no_grad():  # make EOS the only likely token after the prompt
        model.token_embed.weight[EOS_ID] *= 0
        model.token_embed.weight[EOS_ID, 0] = 50.0
    out = generate(model, torch.tensor([[BOS_ID, 5]]), 10, temperature=0, eos_id=EOS_ID)
    assert out.size(1) <= 12


def test_generate_errors():
    model = _gpt()
    transformer = Transformer(TransformerConfig.tiny(V))
    with pytest.raises(TypeError, match="model"):
        generate(transformer, torch.tensor([1, 2]), 3)
    with pytest.raises(ValueError, match="prompt_ids"):
        generate(model, torch.ones(13, dtype=torch.long), 3)
    with pytest.raises(ValueError, match="prompt_ids"):
        generate(model, torch.tensor([1, V]), 3)
    with pytest.raises(ValueError, match="prompt_ids"):
        generate(model, torch.ones(3), 3)
    with pytest.raises(ValueError, match="top_p"):
        generate(model, torch.tensor([1, 2]), 3, top_p=2.0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(model, torch.tensor([1, 2]), -1)


# --- decoding with and without the key/value cache; the cache's size ---------------------------------------------


def _transformer(seed=0):
    torch.manual_seed(seed)
    return Transformer(TransformerConfig.tiny(V, max_len=32)).eval()


@pytest.mark.parametrize("seed", [0, 1])
def test_greedy_with_and_without_the_cache_gives_identical_ids(seed):
    model = _transformer(seed)
    src = torch.randint(4, V, (4, 7), generator=torch.Generator().manual_seed(seed))
    src[1, 4:] = PAD_ID
    cached = greedy_decode(model, src, max_len=20)
    uncached = greedy_decode(model, src, max_len=20, use_cache=False)
    assert cached == uncached
    assert max(len(row) for row in cached) > 5  # the test decodes more than a couple of tokens
    with pytest.raises(TypeError, match="use_cache"):
        greedy_decode(model, src, use_cache=1)


@pytest.mark.parametrize("batch, steps", [(1, 1), (3, 7)])
def test_kv_cache_bytes_equals_the_transformers_cached_tensors(batch, steps):
    model = _transformer()
    c = model.config
    src = torch.randint(4, V, (batch, 6), generator=torch.Generator().manual_seed(0))
    memory, src_mask = model.encode(src)
    cache = model.new_cache()
    tgt = torch.randint(4, V, (batch, steps), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        for t in range(steps):
            model.decode(tgt[:, t : t + 1], memory, src_mask, cache, offset=t)
    cached = sum(layer.self_kv.key.nbytes + layer.self_kv.value.nbytes for layer in cache)
    assert cached == kv_cache_bytes(c.num_decoder_layers, c.num_heads, c.d_k, steps, batch, bytes_per_value=4)
    assert cached == 2 * c.num_decoder_layers * c.num_heads * c.d_k * steps * 4 * batch


def test_kv_cache_formula_and_table():
    assert kv_cache_bytes(3, 4, 32, 10) == 2 * 3 * 4 * 32 * 10 * 4
    assert kv_cache_bytes(3, 4, 32, 0) == 0
    assert kv_cache_table(3, 4, 128, 10, 2) == {
        "MHA": kv_cache_bytes(3, 4, 32, 10, bytes_per_value=2),
        "GQA": kv_cache_bytes(3, 2, 32, 10, bytes_per_value=2),
        "MQA": kv_cache_bytes(3, 1, 32, 10, bytes_per_value=2),
    }
    with pytest.raises(ValueError, match="seq_len"):
        kv_cache_bytes(3, 4, 32, -1)
    with pytest.raises(TypeError, match="d_k"):
        kv_cache_bytes(3, 4, 32.0, 1)
    with pytest.raises(ValueError, match="num_kv_heads"):
        kv_cache_table(3, 4, 128, 10, 3)


# --- beam search's tree -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_search_tree_does_not_change_the_result(seed):
    model = _transformer(seed)
    src = torch.randint(4, V, (3, 6), generator=torch.Generator().manual_seed(seed))
    plain = beam_search(model, src, beam_size=3, max_len=12)
    hyps, trees = beam_search(model, src, beam_size=3, max_len=12, return_tree=True)
    assert hyps == plain
    assert len(trees) == 3 and all(isinstance(t, BeamTree) for t in trees)


def _logprob(model, src_row, tokens):
    """Summed log-probability of target tokens (after BOS) under teacher forcing."""
    with torch.no_grad():
        ys = torch.tensor([[BOS_ID, *tokens[:-1]]])
        logp = model(src_row[None], ys).log_softmax(-1)[0]
    return logp.gather(-1, torch.tensor(tokens)[:, None]).sum().item()


def test_beam_tree_nodes_are_the_hypotheses_with_their_log_probabilities():
    # model seed 2 and 16 steps: both trees hold ended hypotheses (with seed 3 and 8 steps none ended, and the
    # check of ended nodes below compared nothing)
    model = _transformer(2)
    src = torch.randint(4, V, (2, 6), generator=torch.Generator().manual_seed(3))
    k = 3
    hyps, trees = beam_search(model, src, beam_size=k, alpha=0.6, max_len=16, return_tree=True)
    ended = 0
    for b, tree in enumerate(trees):
        n = len(tree.tokens)
        assert len(tree.parents) == len(tree.scores) == len(tree.ended) == n
        assert tree.tokens[0] == BOS_ID and tree.parents[0] == -1
        depth = tree.depth
        assert all(tree.parents[i] < i for i in range(1, n))
        # at most K nodes per step, exactly K at the first step (vocab ≫ K)
        counts = [depth.count(d) for d in range(1, max(depth) + 1)]
        assert counts[0] == k and max(counts) <= k
        # a node's score is the model's log-probability of its tokens
        for i in range(1, n, 3):
            path, node = [], i
            while node > 0:
                path.append(tree.tokens[node])
                node = tree.parents[node]
            assert tree.scores[i] == pytest.approx(_logprob(model, src[b], path[::-1]), abs=1e-4)
        assert all(lp <= 1e-6 for lp in tree.token_logprobs())
        # the best path spells the returned hypothesis (plus EOS if it ended)
        spelled = [tree.tokens[i] for i in tree.best_path[1:]]
        if spelled and spelled[-1] == EOS_ID:
            spelled = spelled[:-1]
        assert spelled == hyps[b]
        assert tree.best_path[0] == 0
        # an ended node has no children
        for i in range(n):
            if tree.ended[i]:
                assert i not in tree.parents
                ended += 1
    assert ended >= 2, f"only {ended} ended nodes: the check that an ended node has no children compared too few"


def test_plot_beam_tree_draws_the_tree_and_highlights_the_path():
    model = _transformer(0)
    src = torch.randint(4, V, (1, 6), generator=torch.Generator().manual_seed(0))
    _, (tree,) = beam_search(model, src, beam_size=3, max_len=6, return_tree=True)
    labels = ["<s>"] + [f"t{t}" for t in tree.tokens[1:]]
    fig = plot_beam_tree(labels, tree.parents, tree.scores, tree.best_path, title="beam 3")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == len(labels)
    assert texts[1] == f"{labels[1]}\n{tree.scores[1]:.2f}"
    assert len(ax.lines) == len(labels) - 1  # one edge per non-root node
    thick = [line for line in ax.lines if line.get_linewidth() > 2]
    assert len(thick) == len(tree.best_path) - 1
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")  # it renders
    assert buffer.getvalue().startswith(b"\x89PNG")


def test_plot_beam_tree_errors():
    with pytest.raises(ValueError, match="parents"):
        plot_beam_tree(["a", "b"], [0, -1], [0.0, -1.0])
    with pytest.raises(ValueError, match="one length"):
        plot_beam_tree(["a", "b"], [-1, 0], [0.0])
    with pytest.raises(ValueError, match="best_path"):
        plot_beam_tree(["a", "b", "c"], [-1, 0, 0], [0.0, -1.0, -2.0], best_path=[0, 1, 2])
    with pytest.raises(ValueError, match="best_path"):
        plot_beam_tree(["a", "b"], [-1, 0], [0.0, -1.0], best_path=[1])


def test_beam_tree_of_beam_one_is_the_greedy_path():
    model = _transformer(1)
    src = torch.randint(4, V, (2, 6), generator=torch.Generator().manual_seed(1))
    hyps, (tree, _) = beam_search(model, src, beam_size=1, max_len=10, return_tree=True)
    assert hyps == greedy_decode(model, src, max_len=10)
    assert len(tree.tokens) == len(tree.best_path)  # a beam of one is a single path
    assert not math.isnan(sum(tree.scores))
