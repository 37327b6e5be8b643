"""Questions the first GPU run (bench/gpu.json, 2026-12-04) raised, answered on the GPU: what CUDA allocates that the
plan does not. Each probe prints one JSON line and is written to `--out` as it ends; one that fails costs only itself.

- workspaces: what cuBLAS and cuBLASLt allocate through PyTorch's caching allocator on their first use (fp32, bf16);
- text_step: the blocks alive at the allocated peak of one TinyTextNet step on 8 x 8820 tokens (the text run's largest
  batch, where the real peak was 380 MB above the plan), with the Python lines that allocated them;
- softmax_backward: every allocation of 08_cuda_emulation's softmax backward case (C++ frames too);
- image_size: 11_image_size's `gpu` cell's figures;
- sweep: the calls of 90_benchmarks' fast API sweep that do not end in a clear error on a CUDA machine;
- reductions: the buffers CUDA's reductions take inside themselves (casts, staging), real against
  `memhelp.cuda_emulation`'s emulation, on shapes and dims of every kind (`--only reductions`);
- packing: `pack_padded_sequence`'s copies of its runs on CUDA, real against the emulation (`--only packing`; added
  after the H200 run, from PackedSequence.cpp: not yet run on a GPU).
- cudnn_rnn: what cuDNN's recurrent kernels hold on CUDA (`_cudnn_rnn`'s reserve space, the workspaces inside it and
  its backward) and each step's allocated peak, against the plan, which counts PyTorch's step-by-step kernels and lists
  cuDNN's as not known (`--only cudnn_rnn`; added at stop 50, not yet run on a GPU): what a rule for them needs.

Run it after tools/gpu_check.py, with the same wheels: `PYTHONPATH=/tmp/site:. python3 tools/gpu_probe.py --out F`.
"""
import argparse, json, sys, time, traceback
from pathlib import Path
root = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root))
import torch, torch.nn as nn, torch.nn.functional as F

def _frames(e, n=14):
    "The most telling frames of a trace entry: Python lines and C++ names, the allocator's own left out"
    out = []
    for f in e.get('frames', []):
        name, fn = f.get('name', ''), f.get('filename', '')
        if any(s in name for s in ('CUDACachingAllocator', 'c10::cuda::', 'std::', '_record_memory', 'torch::unwind')):
            continue
        out.append(f"{Path(fn).name}:{f.get('line')} {name}"[:140] if fn.endswith('.py') else name[:140])
        if len(out) >= n: break
    return out

def recorded(fn, stacks='python'):
    "Run `fn` with CUDA's memory history on: (its trace entries, the blocks alive at its allocated peak)"
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=500_000, context='alloc', stacks=stacks)
    try: fn(); torch.cuda.synchronize(); snap = torch.cuda.memory._snapshot()
    finally: torch.cuda.memory._record_memory_history(None)
    trace = [e for e in snap['device_traces'][0] if e['action'] in ('alloc', 'free_completed', 'free_requested')]
    live, total, best, at_peak = {}, 0, -1, {}
    for e in trace:
        if e['action'] == 'alloc': live[e['addr']] = e; total += e['size']
        elif e['action'] == 'free_completed' and e['addr'] in live: total -= live.pop(e['addr'])['size']
        if total > best: best, at_peak = total, dict(live)
    return trace, best, sorted(at_peak.values(), key=lambda e: -e['size'])

def workspaces():
    "Allocated bytes added by the first matrix products of this process (cuBLAS, then cuBLASLt with a bias), by dtype"
    res = {}
    for dt in (torch.float32, torch.bfloat16):
        a, w, b = (torch.randn(64, 64, device='cuda', dtype=dt) for _ in range(3))
        for what, f in (('mm', lambda: a @ w), ('linear with bias', lambda: F.linear(a, w, b[0])),
                        ('linear backward', lambda: F.linear(a.requires_grad_(), w.requires_grad_(), b[0]).sum().backward())):
            torch.cuda.synchronize(); before = torch.cuda.memory_allocated()
            r = f(); torch.cuda.synchronize(); res[f'{dt} {what}'] = torch.cuda.memory_allocated() - before
            del r
        a = w = b = None
    res['CUBLAS_WORKSPACE_CONFIG'] = __import__('os').environ.get('CUBLAS_WORKSPACE_CONFIG')
    return res

def text_step():
    "The blocks alive at the peak of one TinyTextNet step on 8 x 8820 tokens, after a warm-up step"
    from memhelp.models import TinyTextNet
    torch.manual_seed(0)
    m = TinyTextNet(5000, 2, nh=512).cuda(); o = torch.optim.Adam(m.parameters())
    def step(n):
        x, y = torch.randint(2, 5000, (8, n), device='cuda'), torch.randint(0, 2, (8,), device='cuda')
        F.cross_entropy(m(x), y).backward(); o.step(); o.zero_grad()
    step(107); base = torch.cuda.memory_allocated(); torch.cuda.reset_peak_memory_stats()
    trace, peak, live = recorded(lambda: step(8820))
    return dict(base=base, max_allocated=torch.cuda.max_memory_allocated(), peak_in_trace=peak,
                live_at_peak=[dict(size=e['size'], frames=_frames(e, 6)) for e in live if e['size'] >= 2**20])

def softmax_backward():
    "08's case: softmax over the last dim of (8, 64, 128), its backward with a contiguous gradient; every allocation"
    out = {}
    for fn in (torch.softmax, torch.log_softmax):
        x = torch.empty(8, 64, 128, device='cuda', requires_grad=True); y = fn(x, -1); g = torch.empty(y.shape, device='cuda')
        torch.cuda.synchronize(); base = torch.cuda.memory_allocated(); torch.cuda.reset_peak_memory_stats()
        trace, peak, live = recorded(lambda: y.backward(g), stacks='all')
        out[fn.__name__] = dict(held=torch.cuda.max_memory_allocated() - base,
                                events=[dict(action=e['action'], size=e['size'], frames=_frames(e)) for e in trace])
        del x, y, g
    return out

def image_size(device='cuda'):
    "11_image_size's gpu cell: the recorder's peaks at 32 and 64 px, the fixed part, the ratio above it"
    from memhelp.imgsize import image_size_run
    g = {s: image_size_run(size=s, bs=16, device=device) for s in (32, 64)}
    cols = ['parameters', 'gradients', 'optimizer']
    return {s: dict(peak=r.peak, label=r.label, last_row=r.df.iloc[-1].to_dict(), max=r.df.max(numeric_only=True).to_dict())
            for s, r in g.items()}

def sweep():
    "90's fast sweep on this machine: the calls that end in anything but a clear error"
    from memhelp.bench import api_sweep, sweep_counts
    rows = api_sweep(['core', 'peak', 'allocator'], timeout=10)
    return dict(counts=sweep_counts(rows), not_clear=[r for r in rows if r['outcome'] not in ('clear', 'justified')])

REDUCTIONS = [  # (name, function of x, shape, dtype, layout: 'c' contiguous, 'cl' channels-last, 't' transposed)
    ('sum of a mask along tokens', lambda x: x.sum(1, keepdim=True), (8, 8820, 512), torch.bool, 'c'),
    ('sum along dim 1', lambda x: x.sum(1), (8, 2000, 512), torch.float32, 'c'),
    ('sum along dim 0', lambda x: x.sum(0), (64, 4096), torch.float32, 'c'),
    ('sum along dim 0, few outputs', lambda x: x.sum(0), (4096, 64), torch.float32, 'c'),
    ('bias gradient sum', lambda x: x.sum((0, 1)), (32, 197, 768), torch.float32, 'c'),
    ('sum along the last dim', lambda x: x.sum(1), (256, 1000), torch.float32, 'c'),
    ('full sum', lambda x: x.sum(), (10_000_000,), torch.float32, 'c'),
    ('bf16 sum along dim 1', lambda x: x.sum(1), (8, 2000, 512), torch.bfloat16, 'c'),
    ('bf16 sum into float32', lambda x: x.sum(1, dtype=torch.float32), (8, 2000, 512), torch.bfloat16, 'c'),
    ('mean over H, W', lambda x: x.mean((2, 3)), (16, 64, 56, 56), torch.float32, 'c'),
    ('mean over H, W, channels-last', lambda x: x.mean((2, 3)), (16, 64, 56, 56), torch.float32, 'cl'),
    ('mean along tokens', lambda x: x.mean(1), (16, 3000, 256), torch.float32, 'c'),
    ('amax along tokens', lambda x: x.amax(1), (8, 4000, 400), torch.float32, 'c'),
    ('max along tokens', lambda x: x.max(1), (8, 4000, 400), torch.float32, 'c'),
    ('argmax along tokens', lambda x: x.argmax(1), (8, 4000, 400), torch.float32, 'c'),
    ('var along tokens', lambda x: x.var(1), (8, 4000, 400), torch.float32, 'c'),
    ('norm along tokens', lambda x: torch.linalg.vector_norm(x, dim=1), (8, 4000, 400), torch.float32, 'c'),
    ('prod along dim 0', lambda x: x.prod(0), (64, 4096), torch.float32, 'c'),
    ('sum of a transposed tensor', lambda x: x.sum(0), (512, 8000), torch.float32, 't'),
    ('int32 sum', lambda x: x.sum(1), (8, 5000, 256), torch.int32, 'c'),
]

def _made(shape, dtype, layout, device):
    x = torch.zeros(shape, dtype=dtype, device=device) if dtype == torch.bool else torch.ones(shape, device=device).to(dtype)
    if layout == 'cl': x = x.contiguous(memory_format=torch.channels_last)
    if layout == 't': x = x.t().contiguous().t()
    return x

def _out_bytes(o)->int:
    "Bytes of the tensors in `o`, each rounded as CUDA's caching allocator rounds a request (512 B)"
    from memhelp.core import round_up
    from torch.utils._pytree import tree_flatten
    return sum(round_up(t.untyped_storage().nbytes(), 512) for t in tree_flatten(o)[0])

def emulated_bytes(f, shape, dtype, layout)->int:
    "Bytes `memhelp.cuda_emulation` says the reduction `f` holds above its input and output on CUDA (no GPU needed)"
    from torch._subclasses.fake_tensor import FakeTensorMode
    from memhelp.core import track_memory
    from memhelp.cuda_emulation import target_kernels
    strides = _made(shape, dtype, layout, 'meta').stride()
    with FakeTensorMode(), target_kernels('cuda'):
        xf = torch.empty_strided(shape, strides, dtype=dtype)  # a fake input of the same layout
        with track_memory('cpu', round_to=512) as tr: o = f(xf)
        return tr.peak - _out_bytes(o)

def reductions():
    "Each case's bytes held above its input and output while it runs: CUDA's, and the emulation's"
    rows = []
    for name, f, shape, dtype, layout in REDUCTIONS:
        x = _made(shape, dtype, layout, 'cuda'); f(x); torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
        o = f(x); torch.cuda.synchronize(); real = torch.cuda.max_memory_allocated() - base - _out_bytes(o)
        del o, x; torch.cuda.empty_cache()
        rows.append(dict(case=name, shape=list(shape), dtype=str(dtype), layout=layout, real=real,
                         emulated=emulated_bytes(f, shape, dtype, layout)))
    return rows

PACKINGS = [  # (name, padded shape, batch_first, lengths): `_pack_padded_sequence`'s runs, copied when not contiguous
    ('batch-first, all as long', (8, 400, 256), True, [400] * 8),
    ('batch-first, lengths 400 down to 50', (8, 400, 256), True, [400, 350, 300, 250, 200, 150, 100, 50]),
    ('time-first, all as long', (400, 8, 256), False, [400] * 8),
    ('time-first, lengths 400 down to 50', (400, 8, 256), False, [400, 350, 300, 250, 200, 150, 100, 50]),
]

def packing_emulated(shape, batch_first, lengths)->int:
    "Bytes `memhelp.cuda_emulation` says packing holds above its input and outputs on CUDA (no GPU needed)"
    from memhelp.cuda_emulation import pack_copy_bytes  # the rule itself (real batch sizes are read): no fake step needed
    ls = torch.tensor(lengths)
    sizes = (ls[None] > torch.arange(int(ls.max()))[:, None]).sum(1)
    return pack_copy_bytes(torch.empty(shape, device='meta'), batch_first, sizes, round_to=512)

def packing():
    "Each case's CUDA bytes held above its input and packed data while it packs, and the emulation's (note_transient)"
    from torch.nn.utils.rnn import pack_padded_sequence
    from memhelp.core import round_up
    rows = []
    for name, shape, bf, lengths in PACKINGS:
        x = torch.randn(shape, device='cuda'); L = torch.tensor(lengths)
        pack_padded_sequence(x, L, bf); torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
        p = pack_padded_sequence(x, L, bf); torch.cuda.synchronize()
        real = torch.cuda.max_memory_allocated() - base - round_up(p.data.untyped_storage().nbytes(), 512)
        rows.append(dict(case=name, shape=list(shape), batch_first=bf, real=real,
                         emulated=packing_emulated(shape, bf, lengths)))
        del x, p
    return rows

RNNS = [  # (name, the layer, sequence length, batch, precision): LSTMs and GRUs of the sizes the lessons train
    ('LSTM 1 x 256, 128 tokens x 32', lambda: nn.LSTM(256, 256), 128, 32, 'fp32'),
    ('LSTM 2 x 512, 256 tokens x 16', lambda: nn.LSTM(400, 512, 2), 256, 16, 'fp32'),
    ('LSTM 2 x 512, bf16 autocast', lambda: nn.LSTM(400, 512, 2), 256, 16, 'bf16'),
    ('LSTM 3 x 1152 (AWD_LSTM), 72 tokens x 64', lambda: nn.LSTM(400, 1152, 3), 72, 64, 'fp32'),
    ('LSTM 2 x 512, 2048 tokens x 4', lambda: nn.LSTM(400, 512, 2), 2048, 4, 'fp32'),
    ('LSTM bidirectional 2 x 256', lambda: nn.LSTM(256, 256, 2, bidirectional=True), 256, 16, 'fp32'),
    ('LSTM with proj_size 128', lambda: nn.LSTM(256, 512, 2, proj_size=128), 256, 16, 'fp32'),
    ('GRU 2 x 512', lambda: nn.GRU(400, 512, 2), 256, 16, 'fp32'),
]

class _Seq(nn.Module):
    "A recurrent layer and a linear head: a step with a loss, as the planner runs it"
    def __init__(self, rnn):
        super().__init__(); self.rnn = rnn
        self.head = nn.Linear((getattr(rnn, 'proj_size', 0) or rnn.hidden_size) * (2 if rnn.bidirectional else 1), 8)
    def forward(self, x): return self.head(self.rnn(x)[0])

def _mse(out, y): return F.mse_loss(out.float(), y)

def _cudnn_calls(fn)->list:
    "Each cuDNN RNN call `fn()` makes: its outputs' bytes and the peak it reached above them while it ran (workspaces)"
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    calls, ops = [], (torch.ops.aten._cudnn_rnn.default, torch.ops.aten._cudnn_rnn_backward.default)
    class Calls(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func not in ops: return func(*args, **(kwargs or {}))
            torch.cuda.synchronize(); before = torch.cuda.memory_allocated(); torch.cuda.reset_peak_memory_stats()
            out = func(*args, **(kwargs or {})); torch.cuda.synchronize()
            outs = [t.untyped_storage().nbytes() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            calls.append(dict(op=func.overloadpacket.__name__, outputs=outs,
                              inside=torch.cuda.max_memory_allocated() - before - _out_bytes(out)))
            return out
    with Calls(): fn()
    return calls

def cudnn_rnn():
    "Each case's cuDNN calls and CUDA's allocated peak for one SGD step, against `predict_memory(..., device='cuda')`"
    from memhelp.fake_step import predict_memory, measure_memory
    rows = []
    for name, make, T, B, prec in RNNS:
        torch.manual_seed(0); m = _Seq(make())
        x, y = torch.randn(T, B, m.rnn.input_size), torch.zeros(T, B, 8)
        plan = predict_memory(m, batch=(x, y), loss_func=_mse, precision=prec, opt='sgd', device='cuda')
        mc, xc, yc = m.cuda(), x.cuda(), y.cuda()
        real = measure_memory(mc, batch=(xc, yc), loss_func=_mse, precision=prec, opt='sgd', device='cuda')
        def step():
            with torch.autocast('cuda', torch.bfloat16, enabled=prec == 'bf16'): out = mc(xc)
            _mse(out, yc).backward()
        calls = _cudnn_calls(step); mc.zero_grad(set_to_none=True)
        rows.append(dict(case=name, seq_len=T, bs=B, precision=prec, planned=plan.peak, measured=real.peak,
                         planned_reserved=plan.reserved, unknowns=list(plan.unknowns), cudnn_calls=calls))
        del mc, xc, yc; torch.cuda.empty_cache()
    return rows

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0]); ap.add_argument('--out', required=True)
    ap.add_argument('--only', default='workspaces,text_step,softmax_backward,image_size,sweep',
                    help='comma-separated probes, in order')
    a = ap.parse_args(); out, res = Path(a.out), {}
    for name in a.only.split(','):  # workspaces first, where it runs: it needs a fresh process
        t = time.perf_counter()
        try: res[name] = globals()[name]()
        except Exception as e: res[name] = dict(failed=f'{type(e).__name__}: {e}', tb=traceback.format_exc()[-2000:])
        res[name + '_s'] = round(time.perf_counter() - t, 1)
        print(json.dumps({name: res[name]}, default=str)[:6000], flush=True)
        out.write_text(json.dumps(res, indent=1, default=str) + '\n')

if __name__ == '__main__': main()
