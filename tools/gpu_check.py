"""The GPU check: run it first whenever a CUDA GPU is available to the project (at most about 8 minutes on one GPU).

1. `predict_memory(..., device='cuda')`, made without touching the GPU, next to CUDA's own counters
   (`max_memory_allocated`, and `max_memory_reserved`) for the same real training step (`measure_memory(device='cuda')`),
   for 10 models x {fp32, bf16};
2. the tracker's overhead on CUDA (`memhelp.bench.tracker_overhead`);
3. every notebook that has `#| gpu` cells, under `nbdev_test --flags gpu` (with `--slow`: `--flags "slow gpu"`).

Each part is written to `bench/gpu.json` as soon as it is done, so a run cut short keeps what it measured; README's
performance section reads that file. On a machine without the project's packages (the lent GPU machine has torch but no
fastai, fastcore, nbdev or IPython), carry the wheels `tools/gpu_wheels.sh` downloads, then:

    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site:. python3 tools/gpu_check.py

`--predict-only` runs part 1's predictions alone, without a GPU (a quick check that the script works).
"""
import argparse, json, os, platform, statistics, subprocess, sys, time
from pathlib import Path

root = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root))
import torch, torch.nn as nn, torchvision
from memhelp.planner import predict_memory, measure_memory, get_model

# (name, input_shape, bs): a batch size at which activations are a large part of the step, as in training
CASES = [('resnet18', (3, 224, 224), 64), ('resnet50', (3, 224, 224), 32), ('mobilenet_v3_large', (3, 224, 224), 64),
         ('efficientnet_b0', (3, 224, 224), 32), ('densenet121', (3, 224, 224), 32), ('convnext_tiny', (3, 224, 224), 32),
         ('swin_t', (3, 224, 224), 16), ('vit_b_16', (3, 224, 224), 32), ('lstm_lm', (128,), 32), ('bert', (128,), 32)]

def _bert():
    "A BERT-base-sized classifier built from its config (no download), fed token ids as a dict, as Hugging Face does"
    from transformers import BertConfig, BertForSequenceClassification
    return BertForSequenceClassification(BertConfig(num_labels=2))

def _case(name, shape, bs, meta):
    "(model, keyword arguments for predict_memory/measure_memory) for one case"
    if name != 'bert':
        return get_model(name, meta=meta), dict(input_shape=shape, bs=bs)
    with torch.device('meta') if meta else torch.device('cpu'): m = _bert()
    ids = torch.zeros((bs, *shape), dtype=torch.long, device='meta')
    labels = torch.zeros(bs, dtype=torch.long, device='meta')
    return m, dict(batch=({'input_ids': ids, 'labels': labels},), n_inp=1, bs=bs)

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

def gpu_notebooks(flags, log, timeout=240)->list:
    "Each notebook with `#| gpu` cells under nbdev_test with `flags`: passed or not, and the seconds it took"
    rows = []
    for nb in sorted((root/'nbs').glob('*.ipynb')):
        if '#| gpu' not in nb.read_text(): continue
        t = time.perf_counter()
        code = f"from nbdev.test import nbdev_test; nbdev_test(path={str(nb)!r}, flags={flags!r}, n_workers=0)"
        try:
            p = subprocess.run([sys.executable, '-c', code], cwd=root, capture_output=True, text=True, timeout=timeout,
                               env={**os.environ, 'PYTHONPATH': os.pathsep.join([str(root), os.environ.get('PYTHONPATH', '')])})
            ok, tail = p.returncode == 0, (p.stdout + p.stderr)[-1500:]
        except subprocess.TimeoutExpired: ok, tail = False, f'stopped after {timeout} s'
        row = dict(notebook=nb.name, flags=flags, passed=ok, seconds=round(time.perf_counter() - t, 1))
        if not ok: row['output_tail'] = tail
        log(row); rows.append(row)
    return rows

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=str(root/'bench'/'gpu.json'), help='where the results go')
    ap.add_argument('--predict-only', action='store_true', help='predictions alone, no GPU needed (nothing written)')
    ap.add_argument('--slow', action='store_true', help='also run the notebooks\' `#| slow` cells')
    ap.add_argument('--skip-notebooks', action='store_true', help='parts 1 and 2 only')
    a = ap.parse_args()
    log = lambda row: print(json.dumps(row, default=str), flush=True)
    if a.predict_only:
        predictions(log, measure=False); return
    if not torch.cuda.is_available(): sys.exit('gpu_check: no CUDA device here; --predict-only checks the predictions')
    out, start = Path(a.out), time.perf_counter()
    res = dict(machine=machine(), label='CUDA allocated bytes (max_memory_allocated); predictions made on fake tensors')
    res['predictions'] = predictions(log); res['summary'] = summary(res['predictions']); _save(res, out)
    try: res['overhead'] = overhead(log)
    except Exception as e: res['overhead_failed'] = f'{type(e).__name__}: {e}'[:300]
    _save(res, out)
    if not a.skip_notebooks:
        res['notebooks'] = gpu_notebooks('slow gpu' if a.slow else 'gpu', log)
    res['seconds'] = round(time.perf_counter() - start, 1); _save(res, out)
    print(json.dumps(res['summary']), f"written to {out} in {res['seconds']} s")

if __name__ == '__main__': main()
