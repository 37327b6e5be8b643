#!/usr/bin/env python
"""Build the documentation site offline, without Quarto: mkdocs-material + mkdocs-jupyter into `_site/`.

1. Execute every notebook in `nbs/` with a Jupyter kernel (nbclient, cwd `nbs/`, like `nbdev_test`) into
   `_build/exec/`, `--jobs` at a time, after adding nbdev's automatic `show_doc` cells (exported public
   definitions without one). Skipped, as nbdev does: `eval: false` cells, the `nbdev_export()` call, and
   cells with a test flag (settings.ini `tst_flags`) not in `--flags` (default `slow`, plus `gpu` on CUDA).
   An executed copy is reused while its notebook, `memhelp/*.py`, this script and the flags are unchanged.
   A notebook whose cell passes `--timeout`, or whose kernel dies, is run once more.
   `--no-execute` executes nothing: it takes the executed copy of a prior run where there is one
   (even a stale one) and the notebook as it is (without outputs) otherwise — a fast check of the site.
2. Turn nbdev's directives into what nbdev's site would show (`_build/docs/`): drop `hide`/`export`
   cells, hide the input of `show_doc`/`hide_input` cells, link backticked names to their API docs,
   link notebook names, and replace live widgets (which need a kernel) by the outputs they hold.
   Pages are named like nbdev's (`00_core.ipynb` -> `core.html`), so `memhelp/_modidx.py` links work.
3. `mkdocs build` with `mkdocs.yml` and a generated nav in notebook order, `index.ipynb` as the home page.

    python tools/build_docs.py                # everything (several minutes of CPU the first time)
    python tools/build_docs.py --no-execute   # fast: no kernel at all
"""
from __future__ import annotations
import argparse, configparser, html, hashlib, json, os, re, shutil, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS, BUILD, SITE = ROOT/'nbs', ROOT/'_build', ROOT/'_site'
EXEC, DOCS = BUILD/'exec', BUILD/'docs'
ASSETS = ROOT/'tools'/'docs_assets'  # the site's css (mkdocs.yml's extra_css) and the kernel's matplotlibrc
RETRY_RC = 3  # exit code of `--exec-one` when a retry may help
HEARTBEAT = 30  # seconds between progress lines while notebooks execute
WIDGET_VIEW, WIDGET_STATE = 'application/vnd.jupyter.widget-view+json', 'application/vnd.jupyter.widget-state+json'

def log(*a): print('[build_docs]', *a, flush=True)

def notebooks() -> list[Path]:
    "Notebooks in site order: `index` first, then by file name (the number prefix)"
    nbs = sorted(p for p in NBS.glob('*.ipynb') if not p.name.startswith(('_', '.')))
    return sorted(nbs, key=lambda p: (p.stem != 'index', p.name))

def page_name(nb: Path) -> str:
    "nbdev's page name: `00_core` -> `core`"
    return re.sub(r'^\d+_', '', nb.stem)

# ---------------------------------------------------------------- directives
_re_dir = re.compile(r'^\s*#\|\s*(.*?)\s*$')

def directives(src: str) -> tuple[dict, str]:
    "The `#|` directives at the top of a code cell, and the source without them"
    lines, d = src.splitlines(), {}
    i = 0
    while i < len(lines) and (_re_dir.match(lines[i]) or not lines[i].strip()):
        m = _re_dir.match(lines[i])
        if m and m.group(1):
            k, v = re.match(r'([\w-]+)\s*:?\s*(.*)', m.group(1)).groups()  # `#| hide`, `#| eval: false`, `#| default_exp core`
            d[k] = v.strip()
        i += 1
    return d, '\n'.join(lines[i:])

def skip_exec(src: str, flags: set) -> bool:
    "Cells the docs build must not run: `eval: false`, the export call, and test flags not asked for"
    d, body = directives(src)
    if d.get('eval', '').lower() == 'false' or 'nbdev_export()' in body: return True
    return any(f in d for f in tst_flags() - flags)

def tst_flags() -> set:
    cfg = configparser.ConfigParser(); cfg.read(ROOT/'settings.ini')
    return set(cfg['DEFAULT'].get('tst_flags', '').split())

# ---------------------------------------------------------------- 1. execute
def with_show_docs(src: Path):
    "Notebook `src` with nbdev's `show_doc` cells added after exported definitions that have none (as nbdev's site does)"
    import nbformat
    from execnb.nbio import read_nb
    from nbdev.process import NBProcessor
    from nbdev.processors import add_show_docs
    nb = nbformat.read(src, as_version=4)
    proc = read_nb(src)  # execnb's reader: directives parsed (and taken out of the source), as nbdev's processors want
    NBProcessor(nb=proc, procs=[add_show_docs]).process()
    pos = {c.get('id'): i for i, c in enumerate(nb.cells)}
    after, prev = {}, None
    for c in proc.cells:
        if getattr(c, 'has_sd', False): after.setdefault(prev, []).append(c.source)
        else: prev = c.get('id')
    for cid in sorted(after, key=lambda k: pos.get(k, -1), reverse=True):
        i = pos.get(cid, len(nb.cells) - 1) + 1
        nb.cells[i:i] = [nbformat.v4.new_code_cell(s) for s in after[cid]]
    return nb

def cache_key(nb: Path, flags: set) -> str:
    h = hashlib.sha256(nb.read_bytes())
    h.update(Path(__file__).read_bytes())  # how it is executed
    h.update((ASSETS/'matplotlibrc').read_bytes())
    for p in sorted((ROOT/'memhelp').glob('*.py')): h.update(p.name.encode()); h.update(p.read_bytes())
    h.update(' '.join(sorted(flags)).encode())
    return h.hexdigest()[:16]

def cached_key(dst: Path):
    try: return json.loads(dst.read_text())['metadata'].get('memhelp_docs', {}).get('key')
    except Exception: return None

def exec_one(src: Path, dst: Path, flags: set, timeout: int, key: str):
    "Execute notebook `src` into `dst` (runs in its own process: see `main`)"
    import nbformat
    from nbclient import NotebookClient
    nb = with_show_docs(src)
    blanked = {}
    for i, c in enumerate(nb.cells):
        if c.cell_type == 'code' and skip_exec(c.source, flags): blanked[i], c.source = c.source, ''
    os.environ.pop('MPLBACKEND', None)  # the kernel must keep matplotlib's inline backend, or figures vanish
    os.environ['MATPLOTLIBRC'] = str(ASSETS/'matplotlibrc')  # text big enough at the page's width (see that file)
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    progress, n = dst.with_suffix('.progress'), len(nb.cells)
    def started(cell, cell_index, **_): progress.write_text(f'cell {cell_index + 1} of {n}')  # for the heartbeat
    client = NotebookClient(nb, timeout=timeout, kernel_name='python3', resources={'metadata': {'path': str(NBS)}},
                            on_cell_start=started)
    dst.parent.mkdir(parents=True, exist_ok=True)
    try: client.execute()
    except (CellTimeoutError, DeadKernelError) as e:
        print(f"{src.name}: {e.__class__.__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
        sys.exit(RETRY_RC)
    except CellExecutionError as e:
        i = next((j for j, c in enumerate(nb.cells) if any(o.get('output_type') == 'error' for o in c.get('outputs', []))), None)
        cell = (nb.cells[i].source if i is not None else '?').splitlines()
        tb = [l for l in re.sub(r'\x1b\[[0-9;]*[A-Za-z]', '', str(e)).splitlines() if l.strip()]
        # fail short: the error, the head of the cell and the end of the traceback
        print(f"{src.name}: cell {i} failed: {e.ename}: {e.evalue}".splitlines()[0] + '\n  cell:\n'
              + '\n'.join(f'    {l}' for l in cell[:6]) + '\n  traceback (end):\n'
              + '\n'.join(f'    {l}' for l in tb[-8:]), file=sys.stderr)
        sys.exit(1)
    except Exception:  # not a cell's error but the kernel's machinery (seen once in CI: a bare AssertionError while
        import traceback; traceback.print_exc()  # 2 notebooks started their kernels; the same notebook then ran): once more
        sys.exit(RETRY_RC)
    for i, s in blanked.items(): nb.cells[i].source = s
    nb.metadata['memhelp_docs'] = {'key': key}
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_suffix('.tmp'); nbformat.write(nb, tmp); tmp.replace(dst)

def execute_all(nbs, flags, jobs, timeout, may_run) -> tuple[dict, list]:
    "Map each notebook to the file to render; run the stale ones in `may_run`, `jobs` at a time"
    src_of, todo, failed = {}, [], []
    for nb in nbs:
        dst, key = EXEC/nb.name, cache_key(nb, flags)
        have = cached_key(dst)
        if have == key: src_of[nb] = dst
        elif nb not in may_run:
            src_of[nb] = dst if have else nb
            log(f"{nb.name}: {'stale outputs of a prior run' if have else 'no outputs (never executed)'}")
        else: todo.append((nb, dst, key))
    if todo: log(f"executing {len(todo)} notebook(s), {jobs} at a time: {' '.join(n.name for n, *_ in todo)}")
    running, lock, done = {}, threading.Lock(), threading.Event()
    def heartbeat():  # nothing silent for long: every `HEARTBEAT` s, which notebooks run and where they are
        while not done.wait(HEARTBEAT):
            with lock: now = [(nb, t, dst.with_suffix('.progress')) for nb, (t, dst) in running.items()]
            for nb, t, prog in now:
                where = prog.read_text() if prog.exists() else 'starting the kernel'
                log(f"  ... {nb.name}: {time.time() - t:.0f} s, {where}")
    def run(job):
        nb, dst, key = job
        t0 = time.time()
        log(f"start {nb.name}")
        with lock: running[nb] = (t0, dst)
        cmd = [sys.executable, __file__, '--exec-one', str(nb), str(dst), '--flags', ' '.join(sorted(flags)),
               '--timeout', str(timeout), '--key', key]
        r = subprocess.run(cmd, cwd=NBS, capture_output=True, text=True)
        own = any(l.startswith(f'{nb.name}: cell ') for l in r.stderr.splitlines())  # a cell's own error: not retried
        if r.returncode == RETRY_RC or (r.returncode and not own):  # a cell past `--timeout`, the kernel died or its
            # machinery failed (a bare AssertionError, once in CI); a timeout seen once with ipykernel 7 (a kernel that
            log(f"{nb.name}: {(r.stderr.strip().splitlines() or ['?'])[-1]}; running it again")  # stalled for 15 min)
            r = subprocess.run(cmd, cwd=NBS, capture_output=True, text=True)
        with lock: running.pop(nb, None)
        dst.with_suffix('.progress').unlink(missing_ok=True)
        log(f"{'ok  ' if r.returncode == 0 else 'FAIL'} {nb.name} ({time.time() - t0:.0f} s)")
        return nb, dst, r
    threading.Thread(target=heartbeat, daemon=True).start()
    with ThreadPoolExecutor(max(1, jobs)) as ex: results = list(ex.map(run, todo))
    done.set()
    seen = {}  # an error already shown for another notebook is named, not repeated
    for nb, dst, r in results:
        if r.returncode == 0: src_of[nb] = dst; continue
        failed.append(nb.name); src_of[nb] = nb
        lines = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
        head = next((l for l in lines if l.startswith(f'{nb.name}: ')), lines[-1] if lines else '?')
        key = head.split(' failed: ', 1)[-1]
        if key in seen: print(f'---- FAIL {head} (the same error as {seen[key]})', file=sys.stderr); continue
        seen[key] = nb.name
        mine = head.startswith(f'{nb.name}: ')  # a cell's error: from it on, not the kernel's warnings; else a traceback
        block = lines[lines.index(head):] if mine else lines
        print(f'---- FAIL {nb.name}:\n' + '\n'.join(block[-20:]), file=sys.stderr)
    return src_of, failed

# ---------------------------------------------------------------- 2. prepare for the site
def linker():
    "Backticked names -> relative links to their API docs, via the nbdev index of installed libraries"
    try: from nbdev.doclinks import NbdevLookup
    except ImportError: return lambda s: s
    cfg = configparser.ConfigParser(); cfg.read(ROOT/'settings.ini')
    base = cfg['DEFAULT']['doc_host'].rstrip('/') + '/' + cfg['DEFAULT'].get('doc_baseurl', '').strip('/') + '/'
    class Lookup(NbdevLookup):  # private names (`_x`) have no API section to link to
        def doc(self, sym): return None if re.search(r'(^|\.)_(?!_)', sym) else super().doc(sym)
    nl = Lookup()
    def link(md):  # not in headings: mkdocs-jupyter's table of contents would get other ids than the page
        return '\n'.join(l if l.lstrip().startswith('#') else (nl.linkify(l) or l) for l in md.split('\n')).replace(f'({base}', '(')
    return link

def nbdev_anchors(md: str) -> str:
    "Before each show_doc heading, an anchor with the id nbdev's links use (`MemTrace.mark` -> `memtrace.mark`)"
    def add(m):
        a = m.group(2).strip().lower()
        return m.group(0) if re.fullmatch(r'[a-z0-9_-]+', a) else f'<a id="{a}"></a>\n\n{m.group(0)}'
    return re.sub(r'^(#{2,4}) +([\w.]+) *$', add, md, flags=re.MULTILINE)

def link_notebooks(md: str, pages: dict) -> str:
    "Links to `NN_name.ipynb` become links to the page; a bare `NN_name` (as in the home page's table) a link"
    md = re.sub(r'\]\((?:\./)?(?:nbs/)?(\d+_\w+)\.ipynb(#[^)]*)?\)',
                lambda m: f"]({pages[m.group(1)]}.html{m.group(2) or ''})" if m.group(1) in pages else m.group(0), md)
    out, fence = [], False
    for l in md.splitlines():
        if l.lstrip().startswith('```'): fence = not fence
        elif not fence and not l.startswith('    '):
            l = re.sub(r'(?<!\[)`(\d\d_[a-z]\w*)`(?!\])',
                       lambda m: f"[`{m.group(1)}`]({pages[m.group(1)]}.html)" if m.group(1) in pages else m.group(0), l)
            l = re.sub(r'(?<![\w`/\[.(#-])(\d\d_[a-z]\w*)(?![\w`\].(/-])',
                       lambda m: f"[{m.group(1)}]({pages[m.group(1)]}.html)" if m.group(1) in pages else m.group(1), l)
        out.append(l)
    return '\n'.join(out)

def code_in_headings(md: str) -> str:
    "`x` -> <code>x</code> in headings: mkdocs-jupyter 0.26 drops inline code from its table of contents, so its ids differ"
    return re.sub(r'^#{1,6} .*$', lambda m: re.sub(r'`([^`]+)`', lambda c: f'<code>{html.escape(c.group(1))}</code>', m.group(0)),
                  md, flags=re.MULTILINE)

def show_doc_attrs(md: str) -> str:
    "Quarto's `[source](url){target=... style=...}` in show_doc output -> an HTML link (Markdown would print the braces)"
    return re.sub(r'\[([^\]]*)\]\(([^)\s]+)\)\{([^}]*)\}', lambda m: f'<a href="{m.group(2)}" {m.group(3)}>{m.group(1)}</a>', md)

def none_defaults(md: str) -> str:
    """`ax:NoneType=None` -> `ax=None` in show_doc signatures (fastcore's docments call an unannotated `None`
    default's type NoneType); a source link without a line (nbdev writes `#LNone`) points at the file"""
    return re.sub(r'(\w):NoneType=None\b', r'\1=None', md).replace('#LNone)', ')')

def _text(v): return ''.join(v) if isinstance(v, list) else v

def widget_outputs(model_id: str, state: dict, seen=None) -> tuple[list, list]:
    "The outputs held by `Output` widgets inside widget `model_id`, and the descriptions of its controls"
    seen = seen if seen is not None else set()
    if model_id in seen or model_id not in state: return [], []
    seen.add(model_id)
    m = state[model_id]
    st, name = m.get('state', {}), m.get('model_name', '')
    if name == 'OutputModel': return list(st.get('outputs', [])), []
    outs, ctl = [], []
    if name.endswith(('SliderModel', 'DropdownModel', 'CheckboxModel', 'ButtonModel', 'TextModel')):
        ctl.append(str(st.get('description') or name.replace('Model', '')))
    if name == 'HTMLModel' and st.get('value', '').strip(): outs.append({'output_type': 'display_data', 'metadata': {},
                                                                        'data': {'text/html': st['value']}})
    for c in st.get('children', []):
        o, c2 = widget_outputs(str(c).removeprefix('IPY_MODEL_'), state, seen)
        outs += o; ctl += c2
    return outs, ctl

def static_widgets(cell, state: dict):
    "Replace each live widget in `cell`'s outputs by the outputs it holds and a note (the site has no kernel)"
    new = []
    for o in cell.get('outputs', []):
        mid = o.get('data', {}).get(WIDGET_VIEW, {}).get('model_id')
        if mid is None: new.append(o); continue
        held, ctl = widget_outputs(mid, state)
        note = (f"<p class='admonition note'><em>Interactive in Jupyter: {', '.join(ctl)}. "
                "Below, what it showed when this page was built.</em></p>") if ctl else None
        if note: new.append({'output_type': 'display_data', 'metadata': {}, 'data': {'text/html': note}})
        new += held
        if not held and not note and 'text/plain' in o.get('data', {}): new.append(o)
    cell['outputs'] = new

def prepare(nb_path: Path, pages: dict, link) -> dict:
    "The notebook as the site shows it (a dict in nbformat 4)"
    nb = json.loads(nb_path.read_text())
    state = nb.get('metadata', {}).get('widgets', {}).get(WIDGET_STATE, {}).get('state', {})
    cells = []
    for c in nb['cells']:
        src = _text(c.get('source', ''))
        if c['cell_type'] == 'markdown':
            c['source'] = code_in_headings(link_notebooks(link(src), pages)); cells.append(c); continue
        if c['cell_type'] != 'code': cells.append(c); continue
        d, body = directives(src)
        if d.keys() & {'hide', 'export', 'exporti', 'default_exp'} or d.get('include') == 'false' or 'nbdev_export()' in body:
            continue
        tags = set(c.get('metadata', {}).get('tags', []))
        if 'hide_input' in d or d.get('echo') == 'false' or re.match(r'\s*show_doc\(', body): tags.add('remove_input')
        if 'hide_output' in d or d.get('output') == 'false': c['outputs'] = []
        c['source'] = body
        static_widgets(c, state)
        for o in c.get('outputs', []):
            if o.get('output_type') == 'stream': o['text'] = re.sub(r'\x1b\[[0-9;]*[A-Za-z]', '', _text(o['text']))
            md = o.get('data', {}).get('text/markdown')
            if md is not None:
                md = link_notebooks(link(none_defaults(_text(md))), pages)
                o['data']['text/markdown'] = nbdev_anchors(show_doc_attrs(md))
        c.setdefault('metadata', {})['tags'] = sorted(tags)
        cells.append(c)
    nb['cells'] = cells
    nb.get('metadata', {}).pop('widgets', None)  # no widget manager from a CDN: the widgets are static above
    return nb

def title_of(nb: dict, default: str) -> str:
    for c in nb['cells']:
        if c['cell_type'] == 'markdown':
            m = re.search(r'^#\s+(.+)$', _text(c['source']), re.MULTILINE)
            if m: return m.group(1).strip()
    return default

# ---------------------------------------------------------------- 3. mkdocs
def write_config(nav: list) -> Path:
    cfg = BUILD/'mkdocs.yml'
    lines = ['# generated by tools/build_docs.py: the nav, and where things are; the rest is in ../mkdocs.yml',
             'INHERIT: ../mkdocs.yml', f'docs_dir: {json.dumps(str(DOCS))}', f'site_dir: {json.dumps(str(SITE))}', 'nav:']
    lines += [f'  - {json.dumps(t)}: {json.dumps(f)}' for t, f in nav]
    cfg.write_text('\n'.join(lines) + '\n')
    return cfg

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--no-execute', action='store_true', help='execute nothing: outputs of a prior run where present')
    ap.add_argument('--jobs', type=int, default=2, help='notebooks executed at once (default 2)')
    ap.add_argument('--flags', default='slow', help="test flags whose cells run (default 'slow'; 'gpu' is added on CUDA)")
    ap.add_argument('--timeout', type=int, default=300, help='seconds per cell (default 300); a notebook past it is run once more')
    ap.add_argument('--only', nargs='*', default=None,
                    help='execute only these notebooks (e.g. 00_core index); the other pages use prior outputs, as with --no-execute')
    ap.add_argument('--exec-one', nargs=2, metavar=('SRC', 'DST'), help=argparse.SUPPRESS)
    ap.add_argument('--key', help=argparse.SUPPRESS)
    a = ap.parse_args()
    flags = set(a.flags.split())
    if a.exec_one:
        exec_one(Path(a.exec_one[0]), Path(a.exec_one[1]), flags, a.timeout, a.key); return 0
    try:
        import torch
        if torch.cuda.is_available(): flags.add('gpu')
    except ImportError: pass
    t0 = time.time()
    nbs = notebooks()
    if not nbs: log('no notebooks found'); return 1
    may_run = [] if a.no_execute else [n for n in nbs if not a.only or n.stem in a.only or n.name in a.only]
    if a.only and len(may_run) < len(a.only): log(f'--only: no such notebook among {a.only}'); return 1
    src_of, failed = execute_all(nbs, flags, a.jobs, a.timeout, may_run)
    t1 = time.time()
    shutil.rmtree(DOCS, ignore_errors=True); DOCS.mkdir(parents=True)
    shutil.copytree(ASSETS, DOCS/'css', ignore=shutil.ignore_patterns('matplotlibrc'))
    pages, link, nav = {n.stem: page_name(n) for n in notebooks()}, linker(), []
    for nb in nbs:
        doc = prepare(src_of[nb], pages, link)
        (DOCS/f'{page_name(nb)}.ipynb').write_text(json.dumps(doc, indent=1))
        nav.append(('Home' if nb.stem == 'index' else title_of(doc, nb.stem), f'{page_name(nb)}.ipynb'))
    cfg = write_config(nav)
    shutil.rmtree(SITE, ignore_errors=True)
    env = {**os.environ, 'NO_MKDOCS_2_WARNING': '1'}; env.pop('MPLBACKEND', None)
    r = subprocess.run([sys.executable, '-m', 'mkdocs', 'build', '--config-file', str(cfg)], cwd=ROOT, env=env)
    t2 = time.time()
    log(f"execute {t1 - t0:.0f} s, render {t2 - t1:.0f} s; site: {SITE/'index.html'}")
    if r.returncode: log('mkdocs build failed'); return r.returncode
    if failed: log(f"these notebooks failed to execute (their pages have no outputs): {' '.join(failed)}"); return 1
    return 0

if __name__ == '__main__': sys.exit(main())
