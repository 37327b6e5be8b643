"""The GPU check: run it first whenever a CUDA GPU is available to the project (at most about 8 minutes on one GPU).

1. `predict_memory(..., device='cuda')`, made without touching the GPU, next to CUDA's own counters
   (`max_memory_allocated`, and `max_memory_reserved`) for the same real training step (`measure_memory(device='cuda')`),
   for 10 models x {fp32, bf16};
2. the tracker's overhead on CUDA (`memhelp.bench.tracker_overhead`);
3. a variable-length text run: a tiny text classifier on fastai's `SortedDL` and padding (documents of the corpus's
   lengths, 28 to 8,571 words), 20 real steps and then the largest batch again, CUDA's `memory_reserved` and
   `max_memory_reserved` after each, beside `Learner.predict_memory(device='cuda')`'s replay of the same batch shapes
   (`text_run`);
4. the OOM threshold: the largest batch that trains under `torch.cuda.set_per_process_memory_fraction(f)`
   (bisected over real steps, `torch.cuda.OutOfMemoryError` caught, `empty_cache` between tries) beside the planner's
   `max_batch_size` for the same budget (`oom_threshold`; `oom_budget` says how the budget is made like with like);
5. every notebook that has `#| gpu` cells, under `nbdev_test --flags gpu` (with `--slow`: `--flags "slow gpu"`).

Time on one H200 (measured 2026-12-04, torch 2.11, `bench/gpu.json`): 292 s in all, of which the eight notebooks took
164 s, the OOM threshold 26 s (the planner's bisection 9 s, 16 real tries 17 s), and parts 1 to 3 the other 102 s.
Parts 3 and 4 are skipped once `--budget-s` (420 s by default) has passed, so the notebooks keep their time;
`--parts` runs some parts only, in the order given (a rerun: `--parts notebooks,predictions --notebooks 00_core`).
The self-test (`--self-test`) took 37 s here on 2 shared CPU cores (17 s of CPU).

Each part is written to `bench/gpu.json` as soon as it is done, so a run cut short keeps what it measured; README's
performance section reads that file. On a machine without the project's packages (the lent GPU machine has torch but no
fastai, fastcore, nbdev or IPython), carry the wheels `tools/gpu_wheels.sh` downloads, then:

    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site:. python3 tools/gpu_check.py

`--predict-only` runs part 1's predictions alone, without a GPU (a quick check that the script works); `--self-test`
runs what parts 3 and 4 do without a GPU (the planner's side, the bisection on a stand-in, the JSON layout) on the CPU.
"""
import argparse, copy, gc, json, os, platform, re, statistics, subprocess, sys, tempfile, time
from pathlib import Path

root = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root))
import torch, torch.nn as nn, torchvision
from memhelp.planner import predict_memory, measure_memory, get_model, max_batch_size, fastai_step, largest_batch
from memhelp.allocator import outside_allocator, gpu_table, cublas_workspace_bytes, replay
from memhelp.data import text_corpus
from memhelp.models import TinyTextNet
from fastai.learner import Learner
from fastai.losses import CrossEntropyLossFlat
from fastai.torch_core import set_seed, TensorCategory
from fastai.data.core import DataLoaders
from fastai.text.data import SortedDL, Pad_Chunk, TensorText

# (name, input_shape, bs): a batch size at which activations are a large part of the step, as in training
CASES = [('resnet18', (3, 224, 224), 64), ('resnet50', (3, 224, 224), 32), ('mobilenet_v3_large', (3, 224, 224), 64),
         ('efficientnet_b0', (3, 224, 224), 32), ('densenet121', (3, 224, 224), 32), ('convnext_tiny', (3, 224, 224), 32),
         ('swin_t', (3, 224, 224), 16), ('vit_b_16', (3, 224, 224), 32), ('lstm_lm', (128,), 32), ('bert', (128,), 32),
         # PyTorch's AdamW with its defaults: on CUDA its multi-tensor path (`foreach`), which a CUDA plan runs too
         ('bert+adamw', (128,), 32)]

def _bert():
    "A BERT-base-sized classifier built from its config (no download), fed token ids as a dict, as Hugging Face does"
    from transformers import BertConfig, BertForSequenceClassification
    return BertForSequenceClassification(BertConfig(num_labels=2))

def _case(name, shape, bs, meta):
    "(model, keyword arguments for predict_memory/measure_memory) for one case"
    if not name.startswith('bert'):
        return get_model(name, meta=meta), dict(input_shape=shape, bs=bs)
    with torch.device('meta') if meta else torch.device('cpu'): m = _bert()
    ids = torch.zeros((bs, *shape), dtype=torch.long, device='meta')
    labels = torch.zeros(bs, dtype=torch.long, device='meta')
    return m, dict(batch=({'input_ids': ids, 'labels': labels},), n_inp=1, bs=bs,
                   **({'opt': 'adamw'} if name.endswith('+adamw') else {}))

def machine()->dict:
    "What the figures were measured on"
    info = dict(python=platform.python_version(), torch=torch.__version__, torchvision=torchvision.__version__,
                when=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()))
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        info.update(gpu=p.name, capability=f'{p.major}.{p.minor}', gpu_memory=p.total_memory,
                    cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
    return info

def _save(res, out):
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str) + '\n')

def predictions(log, measure=True, precisions=('fp32', 'bf16'))->list:
    "One row per case and precision: the CUDA prediction, and CUDA's counters for the same real step"
    rows = []
    for name, shape, bs in CASES:
        for prec in precisions:
            row = dict(model=name, input_shape=list(shape), bs=bs, precision=prec)
            try:
                m, kw = _case(name, shape, bs, meta=True)
                t = time.perf_counter(); p = predict_memory(m, precision=prec, device='cuda', **kw)
                parts = ('parameters', 'gradients', 'optimizer', 'buffers', 'activations')
                row.update(predicted=p.peak, predicted_reserved=p.reserved, predict_s=time.perf_counter() - t,
                           predicted_parts={k: getattr(p, k) for k in parts})
                if measure:
                    m, kw = _case(name, shape, bs, meta=False)
                    torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_reserved()
                    t = time.perf_counter(); r = measure_memory(m, precision=prec, device='cuda', **kw)
                    row.update(measured=r.peak, measure_s=time.perf_counter() - t,
                               reserved_peak=torch.cuda.max_memory_reserved() - base, error=p.peak / r.peak - 1,
                               # the allocator's replay (two steps, from an empty cache) against CUDA's own reserved
                               reserved_error=p.reserved / max(torch.cuda.max_memory_reserved() - base, 1) - 1,
                               measured_parts={k: getattr(r, k) for k in row['predicted_parts']})
                    del m, r; torch.cuda.empty_cache()
            except Exception as e:  # one failing case must not cost the others
                row['failed'] = f'{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}'[:300]
            log(row); rows.append(row)
    return rows

def summary(rows)->dict:
    "Median and largest |error| of the CUDA predictions, per precision"
    out = {}
    for prec in sorted({r['precision'] for r in rows}):
        errs = [abs(r['error']) for r in rows if r['precision'] == prec and 'error' in r]
        if errs: out[prec] = dict(n=len(errs), median_abs_error=statistics.median(errs), max_abs_error=max(errs))
    return out

def overhead(log)->list:
    "The tracker's overhead on CUDA, as 90_benchmarks measures it"
    from memhelp.bench import tracker_overhead
    rows = tracker_overhead([('cnn', 32, 32), ('cnn', 128, 64), ('lstm', 32, 32)], n_batches=6, repeats=5,
                            device='cuda')
    for r in rows: log(r)
    return rows

def gpu_notebooks(flags, log, timeout=240, names=None)->list:
    "Each notebook with `#| gpu` cells (or of `names`) under nbdev_test with `flags`: passed or not, and its seconds"
    rows = []
    for nb in sorted((root/'nbs').glob('*.ipynb')):
        if '#| gpu' not in nb.read_text() or (names and nb.stem not in names): continue
        t = time.perf_counter()
        code = f"from nbdev.test import nbdev_test; nbdev_test(path={str(nb)!r}, flags={flags!r}, n_workers=0)"
        # one CPU thread, as CI runs the notebooks (`.ci/run`): the CPU cells' figures are the suite's
        env = {**os.environ, 'OMP_NUM_THREADS': '1',
               'PYTHONPATH': os.pathsep.join([str(root), os.environ.get('PYTHONPATH', '')])}
        try:
            p = subprocess.run([sys.executable, '-c', code], cwd=root, capture_output=True, text=True, timeout=timeout,
                               env=env)
            ok, tail = p.returncode == 0, (p.stdout + p.stderr)[-1500:]
        except subprocess.TimeoutExpired: ok, tail = False, f'stopped after {timeout} s'
        row = dict(notebook=nb.name, flags=flags, passed=ok, seconds=round(time.perf_counter() - t, 1))
        missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", tail)
        if not ok and missing:  # a package this machine lacks (spaCy, say): not run, rather than failed
            row.update(passed=None, not_run=f'needs {missing.group(1)}, not installed on this machine')
        if not ok: row['output_tail'] = tail
        log(row); rows.append(row)
    return rows

def bisect_largest(trains, limit:int=4096)->int:
    "The largest n in [1, `limit`] for which `trains(n)` holds, taking it to hold below any n where it does; 0 if none"
    if not trains(1): return 0
    lo, hi = 1, 2
    while hi <= limit and trains(hi): lo, hi = hi, hi * 2  # double until a try fails: the bracket [lo, hi)
    if hi > limit:
        if trains(limit): return limit
        hi = limit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if trains(mid): lo = mid
        else: hi = mid
    return lo

def _text_learner(bs=8, nh=512, n_vocab=5000):
    "A tiny text classifier on fastai's `SortedDL` and padding, documents as long as the corpus's, batches on the host"
    # the corpus's training documents split on spaces, random token ids: fastai's tokenizer needs spaCy, which the GPU
    # machine has not (nor a wheel of it: it is compiled); what memory sees is the same, lengths and padding
    df = text_corpus(); df = df[~df.is_valid.astype(bool)]
    labels, g = {l: i for i, l in enumerate(sorted(set(df.label)))}, torch.Generator().manual_seed(0)
    items = [(TensorText(torch.randint(2, n_vocab, (len(t.split()),), generator=g)), TensorCategory(labels[l]))
             for t, l in zip(df.text, df.label)]
    dl = SortedDL(items, bs=bs, shuffle=True, drop_last=True, before_batch=Pad_Chunk(pad_idx=1, seq_len=72),
                  res=[len(x) for x, _ in items])
    return Learner(DataLoaders(dl, dl), TinyTextNet(n_vocab, len(labels), nh=nh), loss_func=CrossEntropyLossFlat())

def _free():
    "Python's garbage, then CUDA's cached, unused segments (a no-op without CUDA)"
    gc.collect(); torch.cuda.empty_cache()

def _counters(device)->dict:
    "CUDA's counters since the last reset (none on another device: the self-test runs the same loop on the CPU)"
    if device != 'cuda': return {}
    torch.cuda.synchronize()
    return dict(allocated_peak=torch.cuda.max_memory_allocated(), reserved_peak=torch.cuda.max_memory_reserved(),
                allocated=torch.cuda.memory_allocated(), reserved=torch.cuda.memory_reserved())

def _cuda_steps(learn, batches, device='cuda')->list:
    "CUDA's counters after each real step of a copy of `learn`'s model on `batches` (moved to the GPU in the step)"
    m = copy.deepcopy(learn.model).to(device).train()
    o = learn.opt_func(learn.splitter(m), lr=1e-3)
    for q in m.parameters(): q.grad = torch.zeros_like(q)
    o.step(); o.zero_grad()  # gradients and optimizer state exist: the steady state the plan predicts
    _free(); rows, prev = [], ()
    for b in batches:
        if device == 'cuda': torch.cuda.reset_peak_memory_stats()
        xb, yb = (t.as_subclass(torch.Tensor).to(device) for t in b)  # made in the step, as the loader makes it
        fastai_step(m, o, xb, previous=[prev, ()], yb=(yb,), loss_func=learn.loss_func); prev = (xb, yb)
        rows.append(_counters(device))
    del m, o, xb, yb, prev; _free()
    return rows

def text_run(log, n_steps:int=20, measure=True)->dict:
    "Reserved after each of `n_steps` variable-length text steps (and the largest batch again): real and replayed"
    learn = _text_learner()
    set_seed(0); t = time.perf_counter()
    plan = learn.predict_memory(device='cuda', n_steps=n_steps, show_progress=False)  # the loader's next batches
    res = dict(label='CUDA bytes: predicted = the replay of the plan (emulated), real = torch.cuda counters',
               n_steps=n_steps, predict_s=round(time.perf_counter() - t, 2), predicted_peak=plan.peak,
               predicted_reserved=plan.reserved, steps=[])
    set_seed(0); batches = []  # the same batches: reseeded (`loader_batches` leaves the generators as it found them)
    while len(batches) < n_steps: batches += [b for b, _ in zip(learn.dls.train, range(n_steps - len(batches)))]
    batches.append(largest_batch(learn.dls.train))
    pred, card = plan.replay_steps(), _card_name() if measure else 'H200'
    # as `MemPlan.on_card` replays it: two cuBLAS workspaces first (cited for the card, not measured), in the allocator
    ws = [(('<cuBLAS workspace>', i), cublas_workspace_bytes(card)) for i in range(2)] if card else None
    pws = replay(ws + plan.events).steps if ws else None
    res['workspaces_card'] = card
    real = _cuda_steps(learn, batches, 'cuda' if measure else 'cpu')  # the CPU: the loop runs, nothing is counted
    for i, (b, r) in enumerate(zip(batches, real)):
        res['steps'].append(dict(step=i, batch=list(b[0].shape), predicted_allocated_peak=int(pred.allocated_peak[i]),
                                 predicted_reserved_peak=int(pred.reserved_peak[i]),
                                 predicted_reserved=int(pred.reserved[i]), **{f'real_{k}': v for k, v in r.items()}))
        if pws is not None: res['steps'][-1]['predicted_reserved_peak_with_workspaces'] = int(pws.reserved_peak[i])
    if pws is not None: res['predicted_reserved_with_workspaces'] = int(pws.reserved_peak.max())
    if measure:
        res['real_reserved'] = max(s['real_reserved_peak'] for s in res['steps'])
        res['reserved_error'] = res['predicted_reserved'] / res['real_reserved'] - 1
        if pws is not None:
            res['reserved_error_with_workspaces'] = (res['predicted_reserved_with_workspaces']
                                                     / res['real_reserved'] - 1)
    log({k: v for k, v in res.items() if k != 'steps'})
    return res

def _card_name():
    "The card of `gpu_table()` this GPU is, by name (e.g. 'H200' in 'NVIDIA H200'), or None"
    name = torch.cuda.get_device_name(0)
    key = lambda g: g.replace(' ', '').replace('-', '').upper()
    return next((g for g in sorted(gpu_table().gpu, key=len, reverse=True) if key(g) in key(name)), None)

def oom_budget(fraction:float, total:int, others:int)->dict:
    "The planner's budget for a run capped by `set_per_process_memory_fraction(fraction)`, like with like"
    # torch caps what its caching allocator reserves at fraction x total (its allowed_memory_maximum);
    # the CUDA context is outside the allocator, so not under the cap; cuBLAS's workspaces are allocated through it, so
    # under it. The planner takes a size budget as a card: it keeps the largest cited context outside the allocator and
    # replays two cuBLAS workspaces inside (memhelp.fake_step's `on_card`). So it is given the cap, less what this
    # process already holds in the allocator (`others`), plus that context, which it takes off again.
    context = max(sum(outside_allocator(g).values()) for g in gpu_table().gpu)
    allowed = int(fraction * total)
    return dict(fraction=fraction, total_memory=total, allowed=allowed, others_reserved=others, context_added=context,
                planner_budget=allowed - others + context, replay_capacity=allowed - others)

def _tries(name, shape, device='cuda', n_steps=3, step=fastai_step):
    "trains(bs): whether `n_steps` real steps of model `name` at `bs` run under the cap, the previous batch held"
    m = get_model(name, meta=False).to(device).train()
    o = torch.optim.Adam(m.parameters())  # 'adam', as the planner's default; warmed up: its state exists
    for q in m.parameters(): q.grad = torch.zeros_like(q)
    o.step(); o.zero_grad()
    def trains(bs):
        _free()
        try:
            prev = ()
            for _ in range(n_steps):
                xb = torch.randn(bs, *shape, device=device); step(m, o, xb, previous=[prev, ()]); prev = (xb,)
            _counters(device); return True
        except torch.cuda.OutOfMemoryError: return False
        finally: o.zero_grad(); prev = xb = None; _free()
    return trains

def oom_threshold(log, name='resnet18', shape=(3, 224, 224), fraction=0.04, measure=True, total=None)->dict:
    "The largest batch that trains under the fraction (real, bisected) beside the planner's `max_batch_size`"
    gc.collect()
    if measure: torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory if measure else total
    res = dict(model=name, input_shape=list(shape), precision='fp32', opt='adam',
               **oom_budget(fraction, total, torch.cuda.memory_reserved() if measure else 0))
    t = time.perf_counter()
    res['planner_bs'] = max_batch_size(name, shape, res['planner_budget'], device='cuda', show_progress=False)
    res['planner_s'] = round(time.perf_counter() - t, 1)
    if measure:
        torch.cuda.set_per_process_memory_fraction(fraction)
        try:
            t, tries = time.perf_counter(), []
            trains = _tries(name, shape)
            res['real_bs'] = bisect_largest(lambda bs: tries.append(bs) or trains(bs))
            res.update(real_tries=tries, real_s=round(time.perf_counter() - t, 1))
        finally: torch.cuda.set_per_process_memory_fraction(1.0); gc.collect(); torch.cuda.empty_cache()
        res['error'] = res['planner_bs'] / max(res['real_bs'], 1) - 1  # > 0: the planner lets a batch too big through
    log(res)
    return res

def self_test():
    "What parts 3 and 4 do without a GPU: the bisection on stand-ins, the planner's side, the JSON they write"
    for cut in (0, 1, 37, 64, 4096):
        calls = []
        got = bisect_largest(lambda n: calls.append(n) or n <= cut)
        assert got == cut and len(calls) <= 26, (cut, got, calls)
    log = lambda row: print(json.dumps(row, default=str)[:300], flush=True)
    t = text_run(log, measure=False)
    assert len(t['steps']) == 21 and t['predicted_reserved'] == max(s['predicted_reserved_peak'] for s in t['steps'])
    assert t['steps'][1]['batch'] != t['steps'][2]['batch']  # the batches change shape
    o = oom_threshold(log, measure=False, total=141 * 2**30)  # an H200's capacity, roughly: the JSON's layout only
    def no_room(*args, **kw): raise torch.cuda.OutOfMemoryError('CUDA out of memory (a stand-in)')
    assert _tries('resnet18', (3, 32, 32), 'cpu')(2) and not _tries('resnet18', (3, 32, 32), 'cpu', step=no_room)(2)
    assert o['planner_bs'] > 0 and o['replay_capacity'] == int(0.04 * 141 * 2**30)
    out = Path(tempfile.mkdtemp())/'gpu.json'
    _save(dict(text_run=t, oom_threshold=o), out)
    back = json.loads(out.read_text())
    assert back['text_run']['steps'][0]['batch'] == t['steps'][0]['batch'] and back['oom_threshold']['planner_bs']
    print(f"self-test passed: text run {len(t['steps'])} steps, predicted reserved {t['predicted_reserved']:,} B; "
          f"planner's bs under {o['fraction']} of {o['total_memory']:,} B: {o['planner_bs']}")

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=str(root/'bench'/'gpu.json'), help='where the results go')
    ap.add_argument('--predict-only', action='store_true', help='predictions alone, no GPU needed (nothing written)')
    ap.add_argument('--slow', action='store_true', help='also run the notebooks\' `#| slow` cells')
    ap.add_argument('--skip-notebooks', action='store_true', help='parts 1 to 4 only')
    ap.add_argument('--self-test', action='store_true', help="parts 3 and 4's code without a GPU (nothing written)")
    ap.add_argument('--budget-s', type=float, default=420, help='skip parts 3 and 4 after this many seconds')
    ap.add_argument('--parts', default='predictions,overhead,text_run,oom_threshold,notebooks',
                    help='the parts to run, in this order (a rerun of some: `--parts notebooks,predictions`)')
    ap.add_argument('--notebooks', default='', help='comma-separated notebook names (e.g. 00_core): these only')
    a = ap.parse_args()
    log = lambda row: print(json.dumps(row, default=str), flush=True)
    if a.self_test: self_test(); return
    if a.predict_only:
        predictions(log, measure=False); return
    if not torch.cuda.is_available(): sys.exit('gpu_check: no CUDA device here; --predict-only checks the predictions')
    out, start = Path(a.out), time.perf_counter()
    res = dict(machine=machine(), label='CUDA allocated bytes (max_memory_allocated); predictions made on fake tensors')
    for part in a.parts.split(','):
        try:
            if part == 'predictions': res['predictions'] = predictions(log); res['summary'] = summary(res['predictions'])
            elif part == 'overhead': res['overhead'] = overhead(log)
            elif part in ('text_run', 'oom_threshold'):
                if time.perf_counter() - start > a.budget_s:
                    res[part + '_skipped'] = f'over --budget-s {a.budget_s:g}'
                else: res[part] = (text_run if part == 'text_run' else oom_threshold)(log)
            elif part == 'notebooks' and not a.skip_notebooks:
                res['notebooks'] = gpu_notebooks('slow gpu' if a.slow else 'gpu', log,
                                                 names=set(filter(None, a.notebooks.split(','))))
        except Exception as e: res[part + '_failed'] = f'{type(e).__name__}: {e}'[:300]
        _save(res, out)
    res['seconds'] = round(time.perf_counter() - start, 1); _save(res, out)
    print(json.dumps(res.get('summary')), f"written to {out} in {res['seconds']} s")

if __name__ == '__main__': main()
