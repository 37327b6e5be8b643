"""Audit the CPU kernels' scratch emulation (08_cuda_emulation) against the CPU allocator, one operator call at a time.

A real training step of each model (Adam; fp32, then bf16 autocast; oneDNN off, as the planner runs the CPU's kernels)
is recorded below autograd and autocast: every distinct operator call (operator, and its arguments' shapes, strides
and dtypes), with copies of its arguments. Each call is then run again alone, by 08's `scratch_check`: twice, the
second inside `target_kernels('cpu')` and `track_memory('cpu', kernel_scratch=True)`, which give the emulation's
scratch beyond the call's outputs (`noted_scratch`, None where it does not know) and the allocator's own
(`kernel_scratch`, torch.profiler's events).

A call whose allocator scratch is above the emulation's, or whose scratch the emulation does not know, is listed. The
list of operators 08 takes as scratch-free (`_NO_SCRATCH`) came from such a run; an operator it lists must never show
up here with more than 0 B. Prints one line per operator; nothing is written.

With `--layouts`, each call also runs again with its tensors laid out otherwise, one at a time (same shape, strides
reversed; channels-last; every other element of a tensor twice as long) and with all its floating tensors in float64,
bf16 and fp16 (contiguous, reversed, channels-last): kernels that copy what they cannot read as it is show up here.
A call its kernel refuses in such a layout or dtype is skipped.

    OMP_NUM_THREADS=1 python tools/scratch_audit.py                     # all cases (about 15 s on one core)
    OMP_NUM_THREADS=1 python tools/scratch_audit.py sdpa ln             # some of them
    OMP_NUM_THREADS=1 python tools/scratch_audit.py --layouts           # and in other layouts and dtypes (minutes)
"""
import sys, time, warnings, collections
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from memhelp.cuda_emulation import scratch_check

warnings.filterwarnings('ignore')
V = 200  # vocabulary of the token models

def _sig(x):
    if isinstance(x, torch.Tensor): return ('T', tuple(x.shape), x.stride(), x.dtype)
    if isinstance(x, (list, tuple)): return tuple(_sig(a) for a in x)
    return repr(x)

def _copy(x):
    "A copy of `x` on a copy of its whole storage (the same strides and offset: an expanded one too); others as they are"
    if isinstance(x, torch.Tensor):
        with torch.no_grad():
            return torch.empty(0, dtype=x.dtype).set_(x.detach().untyped_storage().clone(), x.storage_offset(),
                                                      x.shape, x.stride())
    if isinstance(x, (list, tuple)): return type(x)(_copy(a) for a in x)
    return x

class _Calls(TorchDispatchMode):
    "The distinct operator calls of a block, each with copies of its arguments"
    def __init__(self): super().__init__(); self.calls = {}
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        key = (func, _sig(args), _sig(tuple(sorted(kwargs.items()))))
        if key not in self.calls: self.calls[key] = (func, _copy(args), _copy(kwargs))
        return func(*args, **kwargs)

def _scratch(func, args, kwargs):
    "(emulated, allocator's) bytes beyond the outputs while `func` runs alone on copies of its arguments"
    copies = iter([(_copy(args), _copy(kwargs)) for _ in range(2)])  # one per run, made outside the measured one
    def run(): a, k = next(copies); func(*a, **k)
    with torch.no_grad(): return scratch_check(run)

def _step(model, xb, yb, bf16):
    "The calls of one warm Adam step of `model` (bf16 autocast if `bf16`)"
    opt = torch.optim.Adam(model.parameters())
    def step():
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=bf16):
            out = model(*xb)
            loss = F.cross_entropy(out.float(), yb)
        loss.backward(); opt.step(); opt.zero_grad()
    with torch.backends.mkldnn.flags(enabled=False):
        step()
        with _Calls() as c: step()
    return c.calls.values()

class _Up(nn.Module):
    def __init__(s, mode): super().__init__(); s.m, s.c, s.o = mode, nn.Conv2d(3, 8, 3, padding=1), nn.Linear(8, 10)
    def forward(s, x):
        kw = {'align_corners': False} if s.m == 'bilinear' else {}
        return s.o(F.interpolate(s.c(x), scale_factor=2, mode=s.m, **kw).mean((2, 3)))

class _Attn(nn.Module):
    def __init__(s, causal=False):
        super().__init__(); s.c, s.e, s.q, s.o = causal, nn.Embedding(V, 32), nn.Linear(32, 96), nn.Linear(32, 10)
    def forward(s, x):
        B, S = x.shape; q, k, v = s.q(s.e(x)).view(B, S, 3, 2, 16).permute(2, 0, 3, 1, 4)
        return s.o(F.scaled_dot_product_attention(q, k, v, is_causal=s.c).transpose(1, 2).reshape(B, S, 32).mean(1))

class _Norms(nn.Module):
    def __init__(s):
        super().__init__(); s.c, s.g, s.ln, s.o = nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16), \
            nn.LayerNorm(16), nn.Linear(16, 10)
    def forward(s, x): return s.o(s.ln(s.g(s.c(x)).permute(0, 2, 3, 1)).amax((1, 2)))

class _Seq(nn.Module):
    def __init__(s, rnn):
        super().__init__(); s.e, s.r, s.o = nn.Embedding(V, 32), rnn, nn.Linear(32, 10)
    def forward(s, x): return s.o(s.r(s.e(x))[0].mean(1))

class _Layers(nn.Module):
    "Layers the models above do not reach: pools, pixel shuffles, fold, grid sampling, padding, top-k, triangles"
    def __init__(s):
        super().__init__(); s.c, s.g, s.o = nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.Linear(16, 10)
    def forward(s, x):
        y = s.g(s.c(x))
        y = F.avg_pool2d(F.max_pool2d(y, 2), 2) + F.adaptive_max_pool2d(y, 8) + F.adaptive_avg_pool2d(y, 8)
        y = F.pixel_unshuffle(F.pixel_shuffle(y, 2), 2)
        y = F.fold(F.unfold(y, 3, padding=1), (8, 8), 3, padding=1) + F.pad(y, (1, 1, 1, 1))[..., 1:-1, 1:-1]
        grid = torch.tanh(y[:, :2].permute(0, 2, 3, 1))
        y = F.grid_sample(y, grid, align_corners=False).tril().flip(-1)
        return s.o(y.flatten(2).topk(4, -1).values.mean(-1))

def _cases():
    import torchvision
    img = lambda m, px=32: (m, (torch.randn(4, 3, px, px),), torch.randint(0, 10, (4,)))
    tok = lambda m: (m, (torch.randint(0, V, (4, 24)),), torch.randint(0, 10, (4,)))
    return {'cnn': lambda: img(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))),
            'resnet18': lambda: img(torchvision.models.resnet18(num_classes=10)),
            'mobilenet': lambda: img(torchvision.models.mobilenet_v3_small(num_classes=10)),
            'nearest': lambda: img(_Up('nearest')), 'bilinear': lambda: img(_Up('bilinear')),
            'ln': lambda: img(_Norms()), 'layers': lambda: img(_Layers()),
            'sdpa': lambda: tok(_Attn()), 'causal': lambda: tok(_Attn(True)),
            'lstm': lambda: tok(_Seq(nn.LSTM(32, 32, 2, batch_first=True))),
            'gru': lambda: tok(_Seq(nn.GRU(32, 32, batch_first=True))),
            'encoder': lambda: tok(nn.Sequential(nn.Embedding(V, 32), nn.TransformerEncoder(
                nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2), nn.Flatten(), nn.Linear(32 * 24, 10)))}

def _relayout(t, how:str):
    "`t` in layout `how`: 'T' (strides reversed), 'CL' (channels-last, 4d), 'slice' (every other element); or as it is"
    if not isinstance(t, torch.Tensor) or t.ndim < 2 or t.numel() < 2: return t
    if how == 'T': return t.permute(*range(t.ndim)[::-1]).contiguous().permute(*range(t.ndim)[::-1])
    if how == 'CL' and t.ndim == 4: return t.contiguous(memory_format=torch.channels_last)
    if how == 'slice':
        wide = torch.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype); wide[..., ::2] = t
        return wide[..., ::2]
    return t

def _map(x, f):
    "`f` applied to each tensor in `x` (nested lists and tuples too)"
    if isinstance(x, torch.Tensor): return f(x)
    if isinstance(x, (list, tuple)): return type(x)(_map(a, f) for a in x)
    return x

def _variants(args:tuple):
    "(label, args) for `args` with one tensor in another layout at a time, then all floating ones in other dtypes"
    for how in ('T', 'CL', 'slice'):
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) and a.ndim >= 2:
                yield f'{how}@{i}', args[:i] + (_relayout(a, how),) + args[i + 1:]
    for dt in (torch.float64, torch.bfloat16, torch.float16):
        cast = _map(args, lambda t: t.detach().to(dt) if t.is_floating_point() else t)
        for how in ('', 'T', 'CL'):
            yield f'{str(dt)[6:]}{"+" + how if how else ""}', _map(cast, lambda t, how=how: _relayout(t, how))

def audit(names=None, layouts=False, log=print):
    "Operators whose allocator scratch the emulation misses or does not know, over `names` of `_cases()` (all if None)"
    cases, found, start, seen = _cases(), collections.defaultdict(list), time.monotonic(), set()
    for i, name in enumerate(names or cases):
        for bf16 in (False, True):
            torch.manual_seed(0); model, xb, yb = cases[name]()
            for func, args, kwargs in _step(model, xb, yb, bf16):
                for label, a in [('', tuple(args))] + (list(_variants(tuple(args))) if layouts else []):
                    if (key := (func, _sig(a), _sig(tuple(sorted(kwargs.items()))))) in seen: continue
                    seen.add(key)
                    try: emulated, real = _scratch(func, a, kwargs)
                    except Exception: continue  # a layout or dtype the kernel refuses
                    if real is None: continue
                    if emulated is None or real > emulated:
                        found[func.name()].append((name + ('-bf16' if bf16 else '') + (f' {label}' if label else ''),
                                                   emulated, real))
        log(f"{i + 1}/{len(names or cases)} {name} done ({time.monotonic() - start:.0f} s)")
    return found

if __name__ == '__main__':
    names = [a for a in sys.argv[1:] if a != '--layouts']
    for op, rows in sorted(audit(names or None, layouts='--layouts' in sys.argv).items()):
        under = [r for r in rows if r[1] is not None]  # the emulation's figure below the allocator's: a bug
        worst = max(under or rows, key=lambda r: r[2])
        print(f"{op}: {len(rows)} calls{f', {len(under)} UNDER-COUNTED' if under else ' unknown'}; largest "
              f"{worst[2]:,} B beyond the outputs in {worst[0]} "
              f"(emulated: {'unknown' if worst[1] is None else f'{worst[1]:,} B'})")
