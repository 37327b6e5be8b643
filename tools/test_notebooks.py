#!/usr/bin/env python
"""Run the notebooks as tests with nbdev's own machinery, and fail short.

    python tools/test_notebooks.py                       # every notebook in nbs/, 2 at a time
    python tools/test_notebooks.py nbs/11_image_size.ipynb --flags slow
    python tools/test_notebooks.py --flags slow --flagged_only  # the notebooks with `#| slow` cells, those cells too

Each notebook runs in its own process through `nbdev.test.test_nb` (what `nbdev_test` runs: the same skipped
cells, flags from settings.ini's `tst_flags`, the working directory `nbs/`), so one notebook's state or crash
cannot reach another. Those processes are forked by multiprocessing's forkserver, which imports `PRELOAD` (torch,
fastai, nbdev...) once: a notebook starts with them in `sys.modules`, as a second notebook in a kernel would, and
does not import them again (about 5 s a notebook otherwise: the whole run took 350 s that way, 223 s this way, on 2
cores, measured 2026-12-02). It prints when each notebook starts and completes; then, for each failing notebook, one
short block (the failing cell's first lines and the end of its traceback; an error already shown for another
notebook is named, not repeated); then every notebook's time, slowest first; then `N passed, M failed`.
Exit status 1 if any notebook failed.

The longest notebooks start first (longest-processing-time order: with a few workers, long notebooks at the end
would run on after the rest are done). The times are those of the last run here, kept in `bench_out/` (ignored by
git); on a clean clone, `LONGEST` below.

Why not `nbdev_test` itself: it prints each failure's whole traceback as it happens and exits before its
`--timing` table when a notebook fails, so a failing run ends in pages of tracebacks and no times.
"""
from __future__ import annotations
import argparse, contextlib, io, json, multiprocessing as mp, os, re, sys, tempfile, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL_LINES, TB_LINES = 6, 8  # how much of the failing cell and of its traceback a failure block shows
_ansi = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
TIMES = ROOT/'bench_out'/'notebook_times.json'  # {flags: {notebook name: seconds}} of the last runs here
# the order on a clone with no TIMES (the others: 0): seconds of each in a clean-clone CI run (2 cores, 2 workers) on
# 2026-12-06 (the next longest took 22 s); only their order matters here
# what every notebook's process finds imported (the forkserver imports them once, with nothing run: no threads to
# fork). Not transformers: 07_step tests what happens without it. A module that fails to import is skipped silently
PRELOAD = ['torch', 'torchvision', 'numpy', 'pandas', 'matplotlib.pyplot', 'PIL.Image', 'fastai.vision.all',
           'fastai.text.all', 'fastai.tabular.all', 'fastai.callback.all', 'nbdev.test', 'execnb.shell',
           'memhelp.planner', 'memhelp.explorer']
LONGEST = {'09_fake_step.ipynb': 182, '20_planner.ipynb': 158, '21_distributed.ipynb': 117, '90_benchmarks.ipynb': 46,
           '12_batching.ipynb': 41, 'index.ipynb': 32}

def known_times(flags: str) -> dict:
    "Seconds per notebook name: the last runs' with these `flags` (from `TIMES`), else `LONGEST`'s"
    try: last = json.loads(TIMES.read_text()).get(flags, {})
    except (OSError, ValueError, AttributeError): last = {}
    return {**LONGEST, **last}

def longest_first(nbs: list[Path], flags: str) -> list[Path]:
    "`nbs` in the order to start them: the longest first (by `known_times`), then by name"
    t = known_times(flags)
    return sorted(nbs, key=lambda nb: (-t.get(nb.name, 0), nb.name))

def keep_times(results: dict, flags: str):
    "Add this run's seconds per notebook to `TIMES` (the next run's order)"
    try: old = json.loads(TIMES.read_text())
    except (OSError, ValueError): old = {}
    if not isinstance(old, dict): old = {}
    old[flags] = {**old.get(flags, {}), **{nb.name: round(r['secs'], 1) for nb, r in results.items()}}
    with contextlib.suppress(OSError):
        TIMES.parent.mkdir(exist_ok=True); TIMES.write_text(json.dumps(old, indent=1, sort_keys=True))

def notebooks(paths: list[str]) -> list[Path]:
    "The notebooks to test: files as given, folders globbed as nbdev_test does (no `_`/`.` names, no `.notest` folder)"
    from nbdev.doclinks import nbglob
    out = []
    for p in paths or [None]:
        if p and Path(p).is_file(): out.append(Path(p).absolute()); continue
        out += [f.absolute() for f in nbglob(p, as_path=True) if not (f.parent/'.notest').exists()]
    return sorted(dict.fromkeys(out))

def flagged(nb: Path, flags: str) -> bool:
    "Whether a code cell of `nb` carries one of `flags` as nbdev reads directives (`#| slow`): test_nb runs more there"
    from nbdev.process import NBProcessor
    want = set(flags.split())
    return any(want & set(getattr(c, 'directives_', None) or {})
               for c in NBProcessor(nb, process=True).nb.cells if c.cell_type == 'code')

def run_one(nb: Path, flags: str, out: Path, log: Path|None=None):
    "In a child process: test `nb` with nbdev's `test_nb`; write ok, seconds, failing cell and traceback to `out`"
    if log is not None:  # what the process prints outside the notebook's cells (kept for a crash's report)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC); os.dup2(fd, 1); os.dup2(fd, 2); os.close(fd)
    mp.set_start_method(None, force=True)  # the platform's default again, as in a fresh process (not the forkserver)
    from nbdev.config import get_config
    from nbdev.test import test_nb
    cfg = get_config()
    err = io.StringIO()
    with contextlib.chdir(cfg.nbs_path if cfg.nbs_path.exists() else os.getcwd()), contextlib.redirect_stderr(err):
        ok, secs = test_nb(nb, skip_flags=cfg.tst_flags.split(), force_flags=flags.split(), basepath=cfg.config_path)
    tb = _ansi.sub('', err.getvalue())
    m = re.search(r'While Executing Cell #(\d+):', tb)
    out.write_text(json.dumps(dict(ok=bool(ok), secs=secs, cell=int(m.group(1)) if m else None,
                                   tb=tb[m.end():] if m else tb)))

def cell_head(nb: Path, n: int | None) -> list[str]:
    "The first lines of cell number `n` (1-based, as execnb counts) of notebook `nb`"
    if n is None: return []
    try: src = json.loads(nb.read_text())['cells'][n - 1]['source']
    except (OSError, ValueError, IndexError, KeyError): return []
    lines = (''.join(src) if isinstance(src, list) else src).splitlines()
    return lines[:CELL_LINES] + ([f'... ({len(lines) - CELL_LINES} more lines)'] if len(lines) > CELL_LINES else [])

_CTX = mp.get_context('forkserver' if 'forkserver' in mp.get_all_start_methods() else 'spawn')  # Windows: spawn

def test(nb: Path, flags: str, timeout: float) -> dict:
    "Test `nb` in a process of its own (forked with `PRELOAD` imported); `run_one`'s result (a crash or timeout fails)"
    with tempfile.TemporaryDirectory() as d:
        res, log, t0 = Path(d)/'result.json', Path(d)/'output.txt', time.time()
        p = _CTX.Process(target=run_one, args=(nb, flags, res, log)); p.start(); p.join(timeout)
        if p.is_alive():
            p.kill(); p.join()
            return dict(ok=False, secs=time.time() - t0, cell=None, tb=f'timed out after {timeout:.0f} s (--timeout)\n')
        if res.exists(): return json.loads(res.read_text())
        out = log.read_text(errors='replace') if log.exists() else ''
        return dict(ok=False, secs=time.time() - t0, cell=None,
                    tb=f'the test process ended with exit status {p.exitcode} and no result:\n{out}')

def failure_block(nb: Path, r: dict, seen: dict) -> str:
    "A failed notebook's block: the cell's head and the traceback's end, or the notebook that had the same error"
    lines = [l for l in r['tb'].rstrip().splitlines() if l.strip()]
    cell_at = [i for i, l in enumerate(lines) if re.match(r'\s*(File "<ipython-input-|Cell In\[)', l)]
    tail = lines[cell_at[0] if cell_at else 0:][-TB_LINES:]  # from the notebook's cell: IPython's frames say nothing
    head = f"---- FAIL {nb.name}" + (f", cell {r['cell']}" if r['cell'] else '')
    key = '\n'.join(tail[-2:])
    if key in seen: return f"{head}: {tail[-1] if tail else '?'} (the same error as {seen[key]})"
    seen[key] = nb.name
    cell = cell_head(nb, r['cell'])
    return '\n'.join([head] + (['  cell:'] + [f'    {l}' for l in cell] if cell else [])
                     + ['  traceback (end):'] + [f'    {l}' for l in tail])

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('paths', nargs='*', help="notebooks or folders (default: settings.ini's nbs_path)")
    ap.add_argument('--flags', default='', help="test flags to run that are skipped otherwise: 'slow', 'slow gpu'")
    ap.add_argument('--n_workers', type=int, default=2, help='notebooks tested at once (default 2)')
    ap.add_argument('--timeout', type=float, default=1800, help='seconds a notebook may take (default 1800)')
    ap.add_argument('--flagged_only', action='store_true',
                    help="only the notebooks with a cell that carries one of --flags: the others would run as without")
    a = ap.parse_args(argv)
    if a.n_workers < 1: ap.error(f'--n_workers must be at least 1, got {a.n_workers}')
    if a.flagged_only and not a.flags.split(): ap.error('--flagged_only: give the flags too, e.g. --flags slow')
    nbs = notebooks(a.paths)
    if a.flagged_only: nbs = [nb for nb in nbs if flagged(nb, a.flags)]
    if not nbs: print('No files were eligible for testing'); return 1
    # notebooks run side by side share the cores: more threads each than cores / workers only make them wait
    os.environ.setdefault('OMP_NUM_THREADS', str(max(1, (os.cpu_count() or 1) // a.n_workers)))
    os.environ.setdefault('MPLBACKEND', 'Agg')
    os.chdir(ROOT)  # the forkserver's and so every test's working directory, as before (`run_one` moves to nbs/)
    if _CTX.get_start_method() == 'forkserver': _CTX.set_forkserver_preload(PRELOAD)
    print(f"testing {len(nbs)} notebook(s), {min(a.n_workers, len(nbs))} at a time, "
          f"{os.environ['OMP_NUM_THREADS']} thread(s) each"
          + (f", flags: {a.flags}" if a.flags else ''), flush=True)
    t0, results, lock = time.time(), {}, threading.Lock()
    def say(line):  # one write per line, so that lines from two threads never run into each other
        with lock: sys.stdout.write(line + '\n'); sys.stdout.flush()
    def one(nb):
        say(f'Starting {nb.name}')
        r = results[nb] = test(nb, a.flags, a.timeout)
        say(f"- {'Completed' if r['ok'] else 'FAILED'} {nb.name} ({r['secs']:.0f} s)")
    flags = ' '.join(sorted(a.flags.split()))  # one key for 'slow gpu' and 'gpu slow'
    with ThreadPoolExecutor(a.n_workers) as ex: list(ex.map(one, longest_first(nbs, flags)))
    keep_times(results, flags)
    failed, seen = [nb for nb in nbs if not results[nb]['ok']], {}
    for nb in failed: print(failure_block(nb, results[nb], seen))
    print(f'times, slowest first (all {len(nbs)} in {time.time() - t0:.0f} s):')
    for nb in sorted(nbs, key=lambda n: -results[n]['secs']):
        print(f"  {results[nb]['secs']:6.0f} s  {nb.name}{'' if results[nb]['ok'] else '  FAILED'}")
    print(f'{len(nbs) - len(failed)} passed, {len(failed)} failed')
    return 1 if failed else 0

if __name__ == '__main__': sys.exit(main())
