"""Random sweeps of the CPU kernels' scratch rules (08_cuda_emulation) against the CPU allocator, family by family.

Each case is a small random call or training step (random shapes, dtypes, layouts and options), measured with 08's
`scratch_check`: the emulation's kernel scratch beyond the tracked peak against the one torch.profiler's allocator
events show. A rule may be over (it errs safe), never under; a kernel without a rule is unknown (the plan says so). The
sweeps that found and checked the rules of stop 45 (scatters, index_add, batch norm, convolutions, losses) are these;
rerun them after changing a rule, or on another torch. Prints a line per case under, then per family: cases, under,
unknown, exact, and how many took scratch beyond the tracked peak (a case whose kernels stay under the peak is exact
trivially). Exit status 1 if any case is under.

The under-counts it found at stop 45 (a grouped or one-input-channel convolution on NNPACK with a channels-last weight,
whose backward picks its layout again; a batch norm's backward on a gradient channels-last where torch suggests
contiguous; reduced MSE/L1 losses: a bf16 mean's floor, several threads' partials) were fixed at stop 46, which added
BCE to `losses` and the families `pool`, `norm`, `resize`, `attention`, `matmul`, `rnn`, `activation`, `reduction`,
`softmax` and `indexing`. Those found one more under-count, fixed: a boolean mask's `nonzero` inside `x[mask]` and
`x[mask] = v` (50 of 300 indexing cases under); and unknowns, now sized: 3d pools, activations' backwards such as
Mish's, `logsumexp`, `cumprod`, transposed 3d convolutions, BCE with `pos_weight`, group norm on channels-last 3d.
Stop 47 added `embedding_bag` (`nn.EmbeddingBag`, unknown before): seeds 1-5 at 2 threads and one at 1 and 4, 300
cases each, all exact (max mode's count of bags not empty is read from real sizes; a plan takes all of them), and
`fft` (`_fft_c2r` unknown before; `_fft_r2c`, `_fft_c2c` taken as scratch-free, which off the last dimension they
are not: under-counts, now sized).
Stop 48 added `pointwise`: every pointwise-tagged operator with operands of random dtypes. It found TensorIterator's
casts to the common dtype taken as none outside `_PROMOTING`'s arithmetic (a bf16 `clamp` with float32 bounds, `sqrt`
of int64), and `isinf`, `deg2rad`, `rad2deg` and `native_dropout_backward` holding their inner operators' results:
all under-counts, now sized (`ldexp` and `mvlgamma`: unknown). It also added `weight_norm` (the last dim's
buffer, unknown before: now sized, all exact) and `vector_norm` (asked for another dtype, a norm casts its input first:
an under-count, now sized), and `pad` (reflection and replication padding, unknown before: sized).
Stop 49 added `foreach`: every `_foreach_*` operator (an optimizer's multi-tensor path), unknown before, now sized
from the plain operator each runs per tensor; it also found `pow(number, t)`'s wrapped base taken as none (8 B under).
At stop 46, 200-300 cases a seed, none under, and none unknown outside conv and losses: seeds 1-5 of every family at
2 threads, of conv and batchnorm at 1 too; seeds 1-3 of the others at 1 and 4 threads.

    OMP_NUM_THREADS=1 python tools/scratch_fuzz.py                          # every family, 200 cases each (~10 s)
    OMP_NUM_THREADS=2 python tools/scratch_fuzz.py batchnorm --threads 2 --seed 3 --cases 500
"""
import argparse, random, sys, warnings
import torch, torch.nn as nn, torch.nn.functional as F
from memhelp.cuda_emulation import scratch_check

warnings.filterwarnings('ignore')
_rev = lambda t: t.permute(*range(t.ndim)[::-1])
_perm = lambda t: _rev(_rev(t).contiguous())  # the same shape, strides reversed
_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}

def _laid(t, how):
    "`t` contiguous ('c'), with strides reversed ('rev'), or channels-last where it has that many dims ('cl')"
    if how == 'rev': return _perm(t)
    if how == 'cl' and t.ndim in _LAST: return t.contiguous(memory_format=_LAST[t.ndim])
    return t

def scatter(r):
    "scatter, scatter_add, scatter_reduce, index_add: dtypes, expanded or full indices, in place or not, transposed"
    dt = r.choice([torch.float32, torch.bfloat16, torch.float16, torch.float64])
    nd = r.choice([1, 2, 3]); shape = [r.choice([1, 3, 7, 16, 20, 33]) for _ in range(nd)]; K = r.choice([1, 5, 40])
    x = _laid(torch.zeros(shape).to(dt), r.choice(['c', 'rev']))
    src, idx = torch.randn([K] + shape[1:]).to(dt), torch.randint(0, shape[0], (K,))
    ix = r.choice([idx.view([K] + [1] * (nd - 1)).expand([K] + shape[1:]), torch.randint(0, shape[0], [K] + shape[1:])])
    red, inc = r.choice(['sum', 'mean', 'amax', 'prod']), r.random() < 0.5
    return r.choice([lambda: x.scatter_add(0, ix, src), lambda: x.clone().scatter_add_(0, ix, src),
                     lambda: x.index_add(0, idx, src), lambda: x.index_add(0, idx, src, alpha=2),
                     lambda: x.clone().index_add_(0, idx, src), lambda: x.scatter(0, ix, src),
                     lambda: x.scatter(0, ix, 1.5), lambda: x.scatter_reduce(0, ix, src, red, include_self=inc),
                     lambda: x.clone().scatter_reduce_(0, ix, src, red, include_self=inc)])

def batchnorm(r):
    "batch norm forward and backward: 1d to 3d, dtypes, input and gradient layouts, affine, running stats, train/eval"
    dt, nd = r.choice([torch.float32, torch.float64, torch.bfloat16, torch.float16]), r.choice([2, 3, 4, 5])
    shape = [r.choice([1, 2, 3, 5])] + [r.choice([1, 3, 8, 16])] + [r.choice([1, 2, 4, 7]) for _ in range(nd - 2)]
    x = _laid(torch.randn(shape), r.choice(['c', 'rev', 'cl'])).to(dt).requires_grad_(r.random() < 0.7)
    g = _laid(torch.randn(shape), r.choice(['c', 'rev', 'cl'])).to(dt)
    affine = r.random() < 0.7
    bn = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}[nd](
        shape[1], affine=affine, track_running_stats=r.random() < 0.7).to(dt).train(r.random() < 0.7)
    def step():
        y = bn(x)
        if x.requires_grad or affine: y.backward(g); bn.zero_grad(set_to_none=True); x.grad = None
    return step

def conv(r):
    "convolutions, forward and backward: 1d to 3d, transposed, groups, stride, dilation, padding, dtypes, layouts"
    nd, dt = r.choice([1, 2, 2, 3]), r.choice([torch.float32, torch.bfloat16, torch.float64])
    cin = r.choice([1, 3, 4, 8]); g = r.choice([1, 1, cin]) if cin > 1 else 1; cout = g * r.choice([1, 2, 4])
    tr = r.random() < 0.25
    kind = {1: (nn.Conv1d, nn.ConvTranspose1d), 2: (nn.Conv2d, nn.ConvTranspose2d), 3: (nn.Conv3d, nn.ConvTranspose3d)}
    m = kind[nd][tr](cin, cout, r.choice([1, 2, 3]), stride=r.choice([1, 2]), padding=r.choice([0, 1]),
                     dilation=r.choice([1, 1, 2]), groups=g, bias=r.random() < 0.5).to(dt)
    x = torch.randn([r.choice([1, 2, 16]) if nd < 3 else r.choice([1, 2]), cin] +
                    [r.choice([1, 4, 7, 9]) for _ in range(nd)]).to(dt)
    how = r.choice(['c', 'c', 'cl', 'rev'])
    x = _laid(x, how)
    if how == 'cl' and nd == 2: m = m.to(memory_format=torch.channels_last)
    x.requires_grad_(r.random() < 0.7)
    def step():
        y = m(x); y.backward(torch.ones_like(y)); m.zero_grad(set_to_none=True); x.grad = None
    return step

def losses(r):
    "losses and their backwards: cross entropy, NLL, BCE (of logits or not), MSE, L1, smooth L1, Huber; options, dtypes"
    dt, C, N = r.choice([torch.float32, torch.bfloat16, torch.float64]), r.choice([2, 5, 100]), r.choice([1, 3, 16, 64])
    extra = r.choice([[], [], [4], [3, 5]])
    x = torch.randn([N, C] + extra).to(dt)
    if r.random() < 0.3 and extra: x = x.transpose(1, -1).contiguous().transpose(1, -1)
    x.requires_grad_()
    y, t, red = torch.randint(0, C, [N] + extra), torch.rand(x.shape).to(dt), r.choice(['mean', 'sum', 'none'])
    # every choice made here, not in the step: `scratch_check` runs it twice, and both runs must be the same call
    smooth, beta, w = r.choice([0.0, 0.1]), r.choice([1.0, 0.5]), r.choice([None, torch.rand(x.shape[-1]).to(dt)])
    pw = r.choice([None, torch.rand(x.shape[-1]).to(dt) * 3])  # BCE's pos_weight, for imbalanced labels
    fns = [lambda: F.cross_entropy(x, y, reduction=red, label_smoothing=smooth),
           lambda: F.nll_loss(F.log_softmax(x, 1), y, reduction=red),
           lambda: F.binary_cross_entropy_with_logits(x, t, w, reduction=red, pos_weight=pw),
           lambda: F.binary_cross_entropy(torch.sigmoid(x), t, w, reduction=red),
           lambda: F.mse_loss(x, t, reduction=red), lambda: F.l1_loss(x, t, reduction=red),
           lambda: F.smooth_l1_loss(x, t, reduction=red, beta=beta), lambda: F.huber_loss(x, t, reduction=red)]
    loss = r.choice(fns)
    def step(): loss().sum().backward(); x.grad = None
    return step

def _grad_step(f, x, ps=()):
    "A step: `f(x)`, and its backward where `x` or a parameter in `ps` needs it (gradients cleared after)"
    def step():
        y = f(x)
        if y.requires_grad: y.float().sum().backward()
        x.grad = None
        for p in ps: p.grad = None
    return step

def pool(r):
    "max, average and adaptive pools, 1d to 3d, and their backwards: sizes, strides, padding, ceil mode, layouts"
    nd, dt = r.choice([1, 2, 2, 3]), r.choice([torch.float32, torch.bfloat16, torch.float64])
    x = torch.randn([r.choice([1, 2, 4]), r.choice([1, 3, 8])] + [r.choice([4, 7, 12]) for _ in range(nd)]).to(dt)
    x = _laid(x, r.choice(['c', 'c', 'cl', 'rev'])).requires_grad_(r.random() < 0.7)
    k, s, pad, ceil = r.choice([2, 3]), r.choice([1, 2, None]), r.choice([0, 1]), r.random() < 0.3
    mp, ap, r_out = getattr(F, f'max_pool{nd}d'), getattr(F, f'avg_pool{nd}d'), r.choice([1, 2, 3])
    f = r.choice([lambda t: mp(t, k, s, pad, ceil_mode=ceil), lambda t: ap(t, k, s, pad, ceil_mode=ceil),
                  lambda t: getattr(F, f'adaptive_avg_pool{nd}d')(t, r_out),
                  lambda t: getattr(F, f'adaptive_max_pool{nd}d')(t, r_out)])
    return _grad_step(f, x)

def norm(r):
    "layer, group and instance norms with their backwards: shapes, affine or not, dtypes, layouts"
    dt, nd = r.choice([torch.float32, torch.bfloat16, torch.float64]), r.choice([2, 3, 4, 5])
    C = r.choice([2, 4, 8, 16])
    x = torch.randn([r.choice([1, 2, 4]), C] + [r.choice([1, 3, 8]) for _ in range(nd - 2)])
    x = _laid(x, r.choice(['c', 'c', 'cl', 'rev'])).to(dt).requires_grad_(r.random() < 0.7)
    affine = r.random() < 0.7
    m = r.choice([lambda: nn.LayerNorm(x.shape[-1], elementwise_affine=affine),
                  lambda: nn.GroupNorm(r.choice([1, 2, C]), C, affine=affine),
                  lambda: nn.InstanceNorm1d(C, affine=affine) if nd == 3 else nn.LayerNorm(x.shape[1:], affine)])()
    m = m.to(dt)
    return _grad_step(m, x, list(m.parameters()))

def resize(r):
    "interpolation (nearest, linear to trilinear, bicubic, area) and its backward: sizes, align corners, layouts"
    nd, dt = r.choice([1, 2, 2, 3]), r.choice([torch.float32, torch.bfloat16, torch.float64])
    x = torch.randn([r.choice([1, 2]), r.choice([1, 3, 8])] + [r.choice([3, 5, 8]) for _ in range(nd)]).to(dt)
    x = _laid(x, r.choice(['c', 'c', 'cl', 'rev'])).requires_grad_(r.random() < 0.7)
    mode = r.choice(['nearest', 'nearest-exact', 'area', {1: 'linear', 2: 'bilinear', 3: 'trilinear'}[nd]]
                    + (['bicubic'] if nd == 2 else []))
    size = [r.choice([2, 6, 11]) for _ in range(nd)]
    corners = r.choice([None, True, False]) if mode in ('linear', 'bilinear', 'trilinear', 'bicubic') else None
    return _grad_step(lambda t: F.interpolate(t, size=size, mode=mode, align_corners=corners), x)

def attention(r):
    "scaled dot-product attention and its backward: lengths, heads, masks (bool, float, causal), dropout off, layouts"
    dt = r.choice([torch.float32, torch.bfloat16, torch.float64])
    B, H, L, S, E = r.choice([1, 2]), r.choice([1, 4]), r.choice([1, 7, 64, 300]), r.choice([1, 9, 64, 600]), \
        r.choice([8, 16, 64])
    causal, mask = r.random() < 0.3, r.choice([None, None, 'bool', 'float'])
    if causal: mask = None
    q, k, v = (torch.randn(B, n, H, E).transpose(1, 2) if r.random() < 0.3 else torch.randn(B, H, n, E)
               for n in (L, S, S))
    q, k, v = (t.to(dt).requires_grad_(r.random() < 0.7) for t in (q, k, v))
    m = None if mask is None else torch.rand(L, S) > 0.3 if mask == 'bool' else torch.randn(L, S).to(dt)
    def step():
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)
        if y.requires_grad: y.float().sum().backward()
        for t in (q, k, v): t.grad = None
    return step

def matmul(r):
    "matrix products and their backwards: mm, bmm, batched and broadcast matmul, linear, einsum; strided operands"
    dt = r.choice([torch.float32, torch.bfloat16, torch.float64])
    b, n, k, m = r.choice([1, 3]), r.choice([1, 5, 32]), r.choice([1, 7, 64]), r.choice([1, 6, 33])
    lay = lambda t: r.choice([t, t.transpose(-1, -2).contiguous().transpose(-1, -2), t])
    a = lay(torch.randn(b, n, k)).to(dt).requires_grad_(r.random() < 0.7)
    w = lay(torch.randn(k, m)).to(dt).requires_grad_(r.random() < 0.7)
    wb = lay(torch.randn(b, k, m)).to(dt)
    bias = torch.randn(m).to(dt) if r.random() < 0.5 else None
    f = r.choice([lambda: a @ w, lambda: torch.bmm(a, wb), lambda: F.linear(a, w.t(), bias),
                  lambda: torch.einsum('bnk,km->bnm', a, w), lambda: a[0] @ w, lambda: a[:, ::2] @ w])
    def step():
        y = f()
        if y.requires_grad: y.float().sum().backward()
        a.grad = w.grad = None
    return step

def rnn(r):
    "LSTM, GRU and RNN layers with their backwards: layers, directions, batch first, projections, dtypes, lengths"
    kind, dt = r.choice([nn.LSTM, nn.GRU, nn.RNN]), r.choice([torch.float32, torch.float64])
    I, Hs, L = r.choice([3, 8]), r.choice([4, 16]), r.choice([1, 2])
    kw = dict(num_layers=L, bidirectional=r.random() < 0.3, batch_first=r.random() < 0.5)
    if kind is nn.LSTM and r.random() < 0.3: kw['proj_size'] = 2
    m = kind(I, Hs, **kw).to(dt)
    T, B = r.choice([1, 5, 12]), r.choice([1, 3])
    x = torch.randn((B, T, I) if kw['batch_first'] else (T, B, I)).to(dt).requires_grad_(r.random() < 0.5)
    return _grad_step(lambda t: m(t)[0], x, list(m.parameters()))

_ACTS = [nn.ELU, nn.SELU, nn.CELU, nn.GLU, nn.ReLU6, nn.Hardtanh, nn.LeakyReLU, nn.Mish, nn.Softplus, nn.PReLU,
         nn.Hardsigmoid, nn.Hardswish, nn.GELU, nn.SiLU, nn.ReLU, nn.Tanh, nn.Sigmoid, nn.Softsign, nn.Tanhshrink]

def activation(r):
    "activations and their backwards (fastai's Mish, ReLU6, GELU...): dtypes, layouts, in place or not"
    dt, m = r.choice([torch.float32, torch.bfloat16, torch.float64]), r.choice(_ACTS)()
    x = torch.randn(r.choice([1, 16, 64]), r.choice([2, 30, 600])).to(dt)
    x = r.choice([x, x.t(), x[:, ::2]]).detach().requires_grad_(r.random() < 0.8)
    return _grad_step(m.to(dt), x, list(m.parameters()))

def _any_layout(r, shape, dt):
    "A random tensor of `shape` and dtype `dt`: contiguous, strides reversed, or a strided slice of a larger one"
    how = r.choice(['c', 'rev', 'slice'])
    if how == 'slice': return torch.randn([*shape[:-1], shape[-1] * 2]).to(dt)[..., ::2]
    return _laid(torch.randn(shape).to(dt), how)

def reduction(r):
    "reductions and their backwards: sum, mean, var, std, norm, amax, logsumexp, prod, cumsum; dims, keepdim, dtypes"
    dt, nd = r.choice([torch.float32, torch.bfloat16, torch.float64]), r.choice([1, 2, 3])
    shape = [r.choice([1, 2, 7, 300, 40000 if nd == 1 else 60]) for _ in range(nd)]
    x = _any_layout(r, shape, dt).requires_grad_(r.random() < 0.7)
    dims, keep = r.choice([None, 0, -1, (0, -1)]), r.random() < 0.3
    d = dims if dims is not None else tuple(range(nd))
    f = r.choice([lambda t: t.sum(d, keep), lambda t: t.mean(d, keep), lambda t: t.var(d, keepdim=keep),
                  lambda t: t.std(d, keepdim=keep), lambda t: t.norm(dim=d, keepdim=keep), lambda t: t.amax(d, keep),
                  lambda t: t.logsumexp(d, keep), lambda t: t.prod(d if isinstance(d, int) else -1, keep),
                  lambda t: t.cumsum(d if isinstance(d, int) else -1)])
    return _grad_step(f, x)

def softmax(r):
    "softmax and log-softmax with their backwards (attention scores, classifiers): dims, dtypes, layouts"
    dt = r.choice([torch.float32, torch.bfloat16, torch.float64])
    x = _any_layout(r, [r.choice([1, 4]), r.choice([3, 16]), r.choice([5, 128])], dt).requires_grad_(r.random() < 0.8)
    dim, log = r.choice([0, 1, -1]), r.random() < 0.5
    return _grad_step(lambda t: (F.log_softmax if log else F.softmax)(t, dim), x)

def indexing(r):
    "gathers and their backwards: embedding (padding, max-norm off), index_select, gather, masked select, cat, stack"
    dt = r.choice([torch.float32, torch.bfloat16, torch.float64])
    V, E, n = r.choice([10, 500]), r.choice([4, 64]), r.choice([1, 8, 40])
    w = _any_layout(r, [V, E], dt).requires_grad_(r.random() < 0.8)
    ids = r.choice([torch.randint(0, V, (n,)), torch.randint(0, V, (n, 3)), torch.randint(0, V, (3, n)).t()])
    other, r_pad, r_cat = torch.randn(V, E).to(dt), r.choice([None, 0]), r.choice([dt, torch.float64])
    f = r.choice([lambda t: F.embedding(ids, t, padding_idx=r_pad), lambda t: t.index_select(0, ids.flatten()),
                  lambda t: t.gather(1, torch.randint(0, E, (V, 3))), lambda t: t[t > 0],
                  lambda t: torch.cat([t, other.to(r_cat)]), lambda t: torch.stack([t, other], 1), lambda t: t[ids]])
    return _grad_step(f, w)

def embedding_bag(r):
    "embedding bags and their backwards (`nn.EmbeddingBag`): modes, per-sample weights, offsets or 2d, dtypes, layouts"
    dt = r.choice([torch.float32, torch.bfloat16, torch.float16, torch.float64])
    V, E = r.choice([10, 500]), r.choice([4, 64])
    w = r.choice([lambda: _any_layout(r, [V, E], dt), lambda: torch.randn(V, 2 * E).to(dt)[:, :E]])()  # a column slice
    w.requires_grad_(r.random() < 0.8)
    mode, idt = r.choice(['sum', 'mean', 'max']), r.choice([torch.int64, torch.int32])
    pad, last = r.choice([None, 0]), False
    if r.random() < 0.4:  # 2d: a bag per row
        ids, offs = torch.randint(0, V, (r.choice([1, 3, 16]), r.choice([1, 5, 20]))).to(idt), None
        ids = r.choice([ids, ids.t().contiguous().t()])
    else:  # 1d with offsets: bags of any length, empty ones too, more bags than indices at times
        N = r.choice([1, 7, 50, 400]); ids = torch.randint(0, V, (N,)).to(idt)
        offs = torch.sort(torch.randint(0, N, (r.choice([1, 4, 16, 64]),))).values; offs[0] = 0
        if last := r.random() < 0.3: offs = torch.cat([offs, torch.tensor([N])])
        offs = offs.to(r.choice([idt, torch.int64, torch.int32]))  # another dtype than the indices' at times
    ps = torch.rand(ids.shape).to(dt).requires_grad_(r.random() < 0.5) if mode == 'sum' and r.random() < 0.4 else None
    freq = r.random() < 0.2
    f = lambda t: F.embedding_bag(ids, t, offs, mode=mode, per_sample_weights=ps, include_last_offset=last,
                                  padding_idx=pad, scale_grad_by_freq=freq)
    return _grad_step(f, w, [ps] if ps is not None else [])

def fft(r):
    "inverse real FFTs (spectral layers, FNOs): irfft, irfft2, irfftn over random dims, layouts, dtypes; backwards"
    nd, dt = r.choice([1, 2, 3, 4]), r.choice([torch.float32, torch.float64])
    x = _any_layout(r, [r.choice([1, 2, 5, 8, 16, 17]) for _ in range(nd)], dt).requires_grad_(r.random() < 0.5)
    dims = sorted(r.sample(range(nd), r.choice(range(1, nd + 1))))
    inv = r.choice([lambda z: torch.fft.irfft(z, dim=dims[-1]), lambda z: torch.fft.irfftn(z, dim=dims)])
    return _grad_step(lambda t: inv(torch.fft.rfftn(t, dim=dims)), x)

def weight_norm(r):
    "weight norm's fused kernel (`torch._weight_norm`): dim 0, the last or another, 1-4 dims, dtypes, a permuted weight"
    nd, dt = r.choice([1, 2, 3, 4]), r.choice([torch.float32, torch.float64, torch.bfloat16])
    shape = [r.choice([1, 2, 3, 8, 17, 64]) for _ in range(nd)]; dim = r.choice([0, nd - 1, r.randrange(nd)])
    v = _laid(torch.randn(shape), r.choice(['c', 'c', 'rev'])).to(dt).requires_grad_()
    g = torch.randn([s if i == dim else 1 for i, s in enumerate(shape)]).to(dt).requires_grad_(r.random() < 0.8)
    return _grad_step(lambda t: torch._weight_norm(t, g, dim), v, [g] if g.requires_grad else [])

def vector_norm(r):
    "vector norms (`linalg_vector_norm`, the legacy `norm`): orders, dims, keepdim, `dtype=`, dtypes, layouts"
    nd, dt = r.choice([1, 2, 3, 4]), r.choice([torch.float32, torch.float64, torch.bfloat16, torch.float16])
    x = _any_layout(r, [r.choice([1, 2, 3, 7, 16, 33, 200]) for _ in range(nd)], dt)
    dims, p = sorted(r.sample(range(nd), r.choice(range(1, nd + 1)))), r.choice([2, 1, 3, float('inf'), 0, 0.5])
    kw, kd = r.choice([{}, dict(dtype=torch.float32), dict(dtype=torch.float64)]), r.random() < 0.5
    aten = torch.ops.aten
    vn = torch.linalg.vector_norm
    return r.choice([lambda: vn(x, p, dims, kd, **kw), lambda: vn(x, p, **kw),
                     lambda: aten.norm.ScalarOpt_dim(x, p, dims, kd), lambda: aten.norm.Scalar(x, p),
                     lambda: aten.norm.ScalarOpt_dim_dtype(x, p, dims, kd, dtype=kw.get('dtype', dt))])

def pad(r):
    "reflection, replication and circular padding with their backwards: 1d to 3d, batched or not, layouts, dtypes"
    k = r.choice([1, 2, 3]); batched = r.random() < 0.8
    shape = [r.choice([1, 2, 3])] * batched + [r.choice([1, 3, 8])] + [r.choice([4, 7, 16]) for _ in range(k)]
    dt = r.choice([torch.float32, torch.float64, torch.bfloat16])
    x = _laid(torch.randn(shape), r.choice(['c', 'cl', 'rev'])).to(dt).requires_grad_(r.random() < 0.7)
    p, mode = [r.choice([0, 1, 2]) for _ in range(2 * k)], r.choice(['reflect', 'replicate', 'circular'])
    g = _laid(torch.randn(F.pad(x.detach(), p, mode=mode).shape), r.choice(['c', 'cl', 'rev'])).to(dt)
    def step():
        y = F.pad(x, p, mode=mode)
        if y.requires_grad: y.backward(g); x.grad = None
    return step

_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.uint8,
           torch.bool]
_POINTWISE = None  # every pointwise-tagged aten overload (no `out=`), listed at the first case

def _pointwise_ops()->list:
    global _POINTWISE
    if _POINTWISE is None:  # every registered name, sorted: `dir(torch.ops.aten)` lists only those looked up so far
        names = sorted(n[6:] for n in torch._C._dispatch_get_all_op_names() if n.startswith('aten::'))
        ops = [getattr(getattr(torch.ops.aten, p), o or 'default') for p, _, o in (n.partition('.') for n in names)]
        pointwise = lambda f: torch.Tag.pointwise in f.tags and not any(a.is_out for a in f._schema.arguments)
        _POINTWISE = [f for f in ops if pointwise(f)]
    return _POINTWISE

def _operand(r, shape, dt):
    if dt.is_floating_point: return (torch.rand(shape) * 2 + 0.1).to(dt)
    return torch.rand(shape) > 0.5 if dt == torch.bool else torch.randint(1, 4, tuple(shape)).to(dt)

def pointwise(r):
    "every pointwise-tagged operator, its tensors of random dtypes (mixed: TensorIterator's casts), shapes, 0-dim ones"
    f, shape = r.choice(_pointwise_ops()), [r.choice([1, 3, 16, 33]) for _ in range(r.choice([1, 2, 3]))]
    plain = {'Scalar': lambda: r.choice([2, 0.5]), 'float': lambda: 0.5, 'int': lambda: 1, 'SymInt': lambda: 1,
             'bool': lambda: False, 'str?': lambda: None, 'Generator?': lambda: None}
    args = []
    for a in f._schema.arguments:
        t = str(a.type).removesuffix('?') if str(a.type) != 'str?' else 'str?'
        if a.kwarg_only and a.default_value is not None: continue
        if t == 'Tensor': args.append(_operand(r, shape if r.random() < 0.8 else [], r.choice(_DTYPES)))
        elif t in plain or str(a.type) in plain: args.append(plain.get(t, plain.get(str(a.type)))())
        else: raise ValueError(f"{f}: no sample for {a.type}")
    if f._schema.name.endswith('_'): run = lambda: f(args[0].clone(), *args[1:])
    else: run = lambda: f(*args)
    try: run()
    except Exception as e: raise ValueError(str(e)) from None  # a combination of dtypes the operator refuses
    return run

_FOREACH = None  # every `_foreach_*` aten overload with no `out=`, listed at the first case

def foreach(r):
    "every `_foreach_*` operator (an optimizer's multi-tensor path) over lists of random dtypes, shapes and lengths"
    global _FOREACH
    if _FOREACH is None:
        names = sorted(n[6:] for n in torch._C._dispatch_get_all_op_names() if n.startswith('aten::_foreach_'))
        ops = [getattr(getattr(torch.ops.aten, p), o or 'default') for p, _, o in (n.partition('.') for n in names)]
        _FOREACH = [f for f in ops if not any(a.is_out for a in f._schema.arguments)]
    f, k = r.choice(_FOREACH), r.choice([1, 2, 5])
    shapes = [[r.choice([1, 3, 16, 33]) for _ in range(r.choice([1, 2]))] for _ in range(k)]
    dts = [r.choice(_DTYPES[:4]) for _ in range(2)]  # the lists' dtypes: mostly floats, as an optimizer's
    args, nl = [], 0
    for a in f._schema.arguments:
        t = str(a.type)
        if a.kwarg_only and a.default_value is not None: continue
        if t in ('Tensor[]', 'List[Tensor]'): args.append([_operand(r, s, dts[min(nl, 1)]) for s in shapes]); nl += 1
        elif t == 'Tensor': args.append(_operand(r, [] if r.random() < 0.5 else shapes[0], r.choice(_DTYPES[:4])))
        elif t in ('Scalar', 'number'): args.append(r.choice([2, 0.5]))
        elif t in ('Scalar[]', 'List[number]', 'List[Scalar]'): args.append([r.choice([2, 0.5]) for _ in range(k)])
        elif t in ('Scalar?', 'ScalarType?', 'Optional[number]', 'Optional[ScalarType]', 'Optional[int]'): args.append(None)
        elif t in ('float', 'int'): args.append(2)
        elif t == 'bool': args.append(False)
        else: raise ValueError(f"{f}: no sample for {a.type}")
    if f._schema.name.endswith('_'): run = lambda: f([t.clone() for t in args[0]], *args[1:])
    else: run = lambda: f(*args)
    try: run()
    except Exception as e: raise ValueError(str(e)) from None  # a combination of dtypes the operator refuses
    return run

FAMILIES = {f.__name__: f for f in (scatter, batchnorm, conv, losses, pool, norm, resize, attention, matmul, rnn,
                                    activation, reduction, softmax, indexing, embedding_bag, fft, pointwise,
                                    weight_norm, vector_norm, pad, foreach)}

def sweep(name:str, seed:int, cases:int)->dict:
    "Run `cases` random cases of family `name`: counts of cases, under, unknown, exact, with scratch; unders printed"
    r, n = random.Random(seed), dict(cases=0, under=0, unknown=0, exact=0, scratch=0)
    for i in range(cases):
        try: emulated, real = scratch_check(FAMILIES[name](r))
        except (RuntimeError, ValueError): continue  # a combination the kernel (or the module) refuses
        n['cases'] += 1; n['scratch'] += real > 0  # cases whose kernels held memory beyond the tracked peak
        if emulated is None: n['unknown'] += 1
        elif emulated < real: n['under'] += 1; print(f"UNDER {name} case {i} (seed {seed}): {emulated} < {real}")
        elif emulated == real: n['exact'] += 1
    return n

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('families', nargs='*', default=list(FAMILIES), help=f'some of {list(FAMILIES)}')
    ap.add_argument('--seed', type=int, default=1); ap.add_argument('--cases', type=int, default=200)
    ap.add_argument('--threads', type=int, default=None, help="torch's threads (default: as OMP_NUM_THREADS sets)")
    a = ap.parse_args()
    if bad := [f for f in a.families if f not in FAMILIES]: ap.error(f"unknown families {bad}; known: {list(FAMILIES)}")
    if a.threads: torch.set_num_threads(a.threads)
    under = 0
    for name in a.families:
        n = sweep(name, a.seed, a.cases); under += n['under']
        print(f"{name}: {n['cases']} cases, {n['under']} under, {n['unknown']} unknown, {n['exact']} exact; "
              f"{n['scratch']} with scratch beyond the peak ({torch.get_num_threads()} threads)", flush=True)
    sys.exit(1 if under else 0)
