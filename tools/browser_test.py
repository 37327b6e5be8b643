#!/usr/bin/env python
"""Browser tests with headless Chromium (Debian's `chromium`) driven by Playwright.

lab:  starts JupyterLab on a copy of the notebooks, opens a lesson notebook, runs all cells, finds the
      explorer widget, moves its first slider with the keyboard, presses Run and checks that the new run
      shows in the widget's table with the slider's value, that widgets rendered and no cell failed.
docs: serves the built site (`python tools/build_docs.py` first) and checks the home page and a lesson
      page: plots, API sections, and that every internal link and fragment resolves.

    python tools/browser_test.py                        # both parts
    python tools/browser_test.py --only lab --notebook nbs/02_explorer.ipynb nbs/11_image_size.ipynb
    python tools/browser_test.py --only docs --site _site

Prints one line per check and `N passed, M failed` at the end; exits 0 only if every check passed and
at least one ran. Screenshots go to `--shots` (default `_browser/`).
"""
from __future__ import annotations
import argparse, html, json, os, re, secrets, shutil, signal, socket, subprocess, sys, tempfile, time, traceback
import urllib.request, urllib.error
from pathlib import Path
from urllib.parse import urljoin, urlsplit, unquote

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
                 '--no-first-run', '--disable-sync', '--disable-quic']

class Checks:
    "Counts and prints checks"
    def __init__(self): self.passed, self.failed = 0, 0
    def __call__(self, name, ok, detail=''):
        if ok: self.passed += 1
        else: self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + str(detail) if detail else ''}", flush=True)
        return ok

check = Checks()
DROVE = []  # pages the browser actually loaded
def log(*a): print('   ', *a, flush=True)

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def start(cmd, env=None, cwd=None, log_path=None):
    "Start `cmd` in its own process group (so `stop` ends it and its children)"
    out = open(log_path, 'w') if log_path else subprocess.DEVNULL
    return subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

def stop(proc):
    if proc is None or proc.poll() is not None: return
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try: os.killpg(proc.pid, sig)
        except ProcessLookupError: return
        try: proc.wait(wait); return
        except subprocess.TimeoutExpired: pass

def wait_http(url, proc, timeout, what):
    "Wait until `url` answers 200, or fail if `proc` died"
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None: raise RuntimeError(f"{what} exited with code {proc.returncode} before answering")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200: return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError): pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not answer {url} within {timeout} s")

def launch(p, tmp: Path, executable: str):
    "A headless Chromium with a fresh profile"
    return p.chromium.launch_persistent_context(str(tmp/'chromium-profile'), executable_path=executable, headless=True,
                                                args=CHROMIUM_ARGS, viewport={'width': 1400, 'height': 1000})

def shot(page, shots: Path, name: str):
    path = shots/f'{name}.png'
    try: page.screenshot(path=str(path), full_page=False); log(f'screenshot {path}')
    except Exception as e: log(f'no screenshot {name}: {e}')

# ======================================================================= JupyterLab
LAB_SETTINGS = {  # user settings, in a fresh settings dir
    '@jupyterlab/notebook-extension/tracker.jupyterlab-settings': {'windowingMode': 'none'},  # every cell in the DOM
    '@jupyterlab/docmanager-extension/plugin.jupyterlab-settings': {'autosave': False},
    '@jupyterlab/apputils-extension/notification.jupyterlab-settings': {'checkForUpdates': False, 'fetchNews': 'false'},
    '@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings': {'enabled': False},
}
LAB_CONFIG = {'LabApp': {'news_url': None, 'check_for_updates_class': 'jupyterlab.handlers.announcements.NeverCheckForUpdate',
                         'extension_manager': 'readonly'},
              'ServerApp': {'open_browser': False}}

def start_lab(tmp: Path):
    "JupyterLab on a copy of the repo's notebooks (running cells must not touch the repo); returns (proc, base url, token)"
    root = tmp/'lab'
    shutil.copytree(ROOT/'nbs', root/'nbs', ignore=shutil.ignore_patterns('.*', '_*'))
    shutil.copytree(ROOT/'memhelp', root/'memhelp', ignore=shutil.ignore_patterns('__pycache__'))  # `nbdev_export()` cells write here
    shutil.copy(ROOT/'settings.ini', root/'settings.ini')
    for rel, val in LAB_SETTINGS.items():
        f = tmp/'lab-settings'/rel; f.parent.mkdir(parents=True, exist_ok=True); f.write_text(json.dumps(val))
    (tmp/'jupyter-config').mkdir()
    for name in ('jupyter_server_config.json', 'jupyter_lab_config.json'): (tmp/'jupyter-config'/name).write_text(json.dumps(LAB_CONFIG))
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, 'JUPYTERLAB_SETTINGS_DIR': str(tmp/'lab-settings'), 'JUPYTERLAB_WORKSPACES_DIR': str(tmp/'lab-workspaces'),
           'JUPYTER_CONFIG_DIR': str(tmp/'jupyter-config'), 'JUPYTER_RUNTIME_DIR': str(tmp/'jupyter-runtime'),
           'PATH': f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop('MPLBACKEND', None)  # the kernel needs matplotlib's inline backend
    cmd = [sys.executable, '-m', 'jupyter', 'lab', '--ip=127.0.0.1', f'--port={port}', '--no-browser',
           '--ServerApp.open_browser=False', f'--ServerApp.root_dir={root}', f'--IdentityProvider.token={token}',
           '--ServerApp.port_retries=0', '--LabApp.extension_manager=readonly']
    if hasattr(os, 'geteuid') and os.geteuid() == 0: cmd.append('--allow-root')  # CI containers run as root
    proc = start(cmd, env=env, cwd=root, log_path=tmp/'jupyter-lab.log')
    base = f'http://127.0.0.1:{port}'
    wait_http(f'{base}/api/status?token={token}', proc, 120, 'jupyter lab')
    return proc, base, token

CELLS_JS = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const cells = [...panel.querySelectorAll('.jp-CodeCell')];
  const prompts = cells.map(c => (c.querySelector('.jp-InputPrompt') || {}).textContent || '');
  const ind = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  return {n: cells.length, done: prompts.filter(p => /\\[\\d+\\]/.test(p)).length,
          busy: prompts.filter(p => p.includes('*')).length, status: ind ? ind.getAttribute('data-status') : null,
          kernel: ((document.querySelector('.jp-StatusBar-TextItem[title*="ernel"], .jp-KernelStatus') || {}).textContent || '')};
}"""

ERRORS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')]
  .filter(o => o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stderr' && /Traceback/.test(o.textContent))
  .map(o => o.textContent.slice(0, 600))"""

TABLE_JS = """(vbox) => {
  const tables = vbox.querySelectorAll('.widget-output table');
  if (!tables.length) return null;
  const t = tables[tables.length - 1];
  const head = [...t.querySelectorAll('thead tr')[0].querySelectorAll('th')].map(x => x.textContent.trim());
  const rows = [...t.querySelectorAll('tbody tr')].map(r => [...r.querySelectorAll('th,td')].map(x => x.textContent.trim()));
  return {head, last: rows[rows.length - 1], n: rows.length};
}"""

def wait_run_all(page, timeout, name):
    "Wait until every code cell has run (or execution stopped at an error); returns the last state"
    end, last, idle_since = time.time() + timeout, None, None
    while time.time() < end:
        st = page.evaluate(CELLS_JS)
        if st != last: log(f'{name}: {st}'); last = st
        if st and st['n'] and st['busy'] == 0 and (st['status'] in (None, 'idle')):
            if st['done'] == st['n']: return st
            idle_since = idle_since or time.time()
            if time.time() - idle_since > 10: return st  # idle, nothing queued: execution stopped at an error
        else: idle_since = None
        time.sleep(1)
    return last

def same(a: str, b: str) -> bool:
    try: return abs(float(a) - float(b)) < 1e-9
    except ValueError: return a == b

def test_lab_notebook(page, base, token, rel, shots, timeout):
    name = Path(rel).stem
    page.goto(f'{base}/lab/tree/{rel}?token={token}&reset', wait_until='domcontentloaded', timeout=120_000)
    page.wait_for_selector('.jp-NotebookPanel .jp-Cell', timeout=120_000)
    DROVE.append(rel)
    ok = check(f'{name}: notebook opened in JupyterLab', page.locator('.jp-NotebookPanel .jp-CodeCell').count() > 0)
    if not ok: return shot(page, shots, f'{name}-0-open')
    try: page.wait_for_function("() => { const i = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');"
                                " return i && i.getAttribute('data-status') === 'idle'; }", timeout=120_000)
    except Exception as e: log(f'{name}: kernel not idle before running ({e.__class__.__name__}); going on')
    page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell').first.click()
    # Run -> Run All Cells, from the menu bar
    page.locator('.lm-MenuBar-itemLabel', has_text=re.compile(r'^Run$')).click()
    page.locator('.lm-Menu-itemLabel', has_text=re.compile(r'^Run All Cells$')).click()
    t0 = time.time()
    st = wait_run_all(page, timeout, name)
    log(f'{name}: run all took {time.time() - t0:.0f} s')
    shot(page, shots, f'{name}-1-after-run-all')
    errors = page.evaluate(ERRORS_JS)
    check(f'{name}: every code cell ran', bool(st) and st['n'] > 0 and st['done'] == st['n'] and st['busy'] == 0,
          f"{st and st['done']}/{st and st['n']} cells have run, {st and st['busy']} running" if not (st and st['done'] == st['n']) else '')
    check(f'{name}: no cell shows an error', not errors, '\n'.join(errors)[:2000])
    outs = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')
    texts = outs.all_inner_texts()
    bad = [t for t in texts if 'Loading widget' in t or 'Error displaying widget' in t or 'Failed to load model' in t]
    reprs = [t for t in texts if re.search(r'\b(IntSlider|FloatSlider|VBox|HBox|Button|Output)\(', t)]
    check(f'{name}: widgets rendered (no "Loading widget...", no plain-text widget repr)', not bad and not reprs, (bad + reprs)[:3])

    # the explorer: a VBox with sliders and a Run button (the last one in the notebook)
    exps = page.locator('.jp-OutputArea-output .widget-vbox').filter(has=page.locator('button', has_text=re.compile(r'^\s*Run\s*$'))) \
               .filter(has=page.locator('.widget-slider'))
    if not check(f'{name}: explorer widget found', exps.count() > 0, f'{exps.count()} found'): return
    exp = exps.last
    exp.scroll_into_view_if_needed()
    status = exp.locator('.widget-html').last
    before = status.inner_text().strip()
    m = re.search(r'run (\d+)', before)
    n_before = int(m.group(1)) if m else 0
    slider = exp.locator('.widget-slider').first
    label = slider.locator('.widget-label').first.inner_text().strip()
    readout = slider.locator('.widget-readout').first
    v0 = readout.inner_text().strip()
    handle = slider.locator('.noUi-handle').first
    handle.focus()
    for _ in range(2): page.keyboard.press('ArrowRight')
    if readout.inner_text().strip() == v0:  # at its maximum
        for _ in range(2): page.keyboard.press('ArrowLeft')
    v1 = readout.inner_text().strip()
    check(f'{name}: slider {label!r} moved with the keyboard', v1 != v0, f'{v0} -> {v1}')
    shot(page, shots, f'{name}-2-slider-moved')
    exp.locator('button', has_text=re.compile(r'^\s*Run\s*$')).first.click()
    want = f'run {n_before + 1}:'
    try:
        page.wait_for_function("([el, want]) => el.textContent.includes(want)", arg=[status.element_handle(), want], timeout=timeout * 1000)
        ran = True
    except Exception: ran = False
    after = status.inner_text().strip()
    check(f'{name}: Run pressed, status shows the new run', ran and 'peak' in after, f'{before!r} -> {after!r}')
    exp.scroll_into_view_if_needed()
    shot(page, shots, f'{name}-3-after-run')
    tab = exp.evaluate(TABLE_JS)
    if check(f'{name}: comparison table in the widget output', bool(tab) and label in tab['head'], tab and tab['head']):
        col = tab['head'].index(label)
        row = tab['last']
        check(f'{name}: new run {n_before + 1} is the table\'s last row with {label}={v1}',
              row[0] == str(n_before + 1) and col < len(row) and same(row[col], v1), f'last row {dict(zip(tab["head"], row))}')
    errors = page.evaluate(ERRORS_JS)
    check(f'{name}: still no error after pressing Run', not errors, '\n'.join(errors)[:2000])

def test_lab(p, executable, notebooks, shots, timeout, tmp):
    proc, ctx = None, None
    try:
        t0 = time.time()
        proc, base, token = start_lab(tmp)
        check('jupyter lab started', True, f'{base} in {time.time() - t0:.0f} s')
        ctx = launch(p, tmp, executable)
        page = ctx.new_page()
        page.set_default_timeout(60_000)
        for rel in notebooks:
            try: test_lab_notebook(page, base, token, rel, shots, timeout)
            except Exception as e:
                check(f'{Path(rel).stem}: driving JupyterLab', False, f'{e.__class__.__name__}: {e}'.splitlines()[0][:500])
                traceback.print_exc(); shot(page, shots, f'{Path(rel).stem}-error')
    except Exception as e:
        check('jupyter lab test', False, f'{e.__class__.__name__}: {e}')
        lab_log = tmp/'jupyter-lab.log'
        if lab_log.exists(): print('\n'.join(lab_log.read_text().splitlines()[-30:]))
    finally:
        if ctx is not None:
            try: ctx.close()
            except Exception: pass
        stop(proc)

# ======================================================================= docs site
PAGE_JS = """() => ({
  title: document.title,
  imgs: [...document.querySelectorAll('article img')].map(i => ({src: i.getAttribute('src').slice(0, 40), w: i.naturalWidth})),
  headings: [...document.querySelectorAll('article h1, article h2, article h3')].map(h => h.textContent.replace('¶', '').trim()),
  links: [...document.querySelectorAll('a[href]')].map(a => a.href),
  article_links: [...document.querySelectorAll('article a[href]')].map(a => a.href),
  resources: [...document.querySelectorAll('img[src], script[src], link[href][rel="stylesheet"]')].map(e => e.src || e.href),
  text: document.querySelector('article') ? document.querySelector('article').innerText : '',
  outputs: [...document.querySelectorAll('article .jp-OutputArea-output')].map(o => o.innerText).join(' | '),
})"""

def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r: return r.status, r.read().decode('utf-8', 'replace')
    except urllib.error.HTTPError as e: return e.code, ''
    except Exception as e: return repr(e), ''

def test_docs(p, executable, site: Path, pages, shots, tmp):
    if not check('docs: site built', (site/'index.html').exists(), f'{site}/index.html' + ('' if (site/'index.html').exists() else
                 ' is missing: run python tools/build_docs.py first')): return
    port, server, ctx = free_port(), None, None
    try:
        server = start([sys.executable, '-m', 'http.server', str(port), '--bind', '127.0.0.1', '--directory', str(site)],
                       log_path=tmp/'http-server.log')
        base = f'http://127.0.0.1:{port}/'
        wait_http(base, server, 30, 'http.server')
        ctx = launch(p, tmp, executable)
        external = []
        def route(r):
            if urlsplit(r.request.url).hostname in ('127.0.0.1', 'localhost') or r.request.url.startswith('data:'): r.continue_()
            else: external.append(r.request.url); r.abort()
        ctx.route('**/*', route)
        page = ctx.new_page()
        page_errors = []
        page.on('pageerror', lambda e: page_errors.append(str(e)))
        cache = {}
        for rel, kind in pages:
            url = urljoin(base, rel)
            if not check(f'docs {rel}: page exists', (site/rel).exists(), str(site/rel)): continue
            resp = page.goto(url, wait_until='load', timeout=60_000)
            if check(f'docs {rel}: loads (200)', resp is not None and resp.status == 200, resp and resp.status): DROVE.append(url)
            page.wait_for_timeout(500)
            shot(page, shots, f'docs-{Path(rel).stem}')
            info = page.evaluate(PAGE_JS)
            text = info['text']
            check(f'docs {rel}: has a title and content', bool(info['headings']) and len(text) > 200, info['title'])
            outs = info['outputs']
            check(f'docs {rel}: no error output', 'Traceback' not in outs, re.findall(r'.{0,80}Traceback.{0,300}', outs, re.S)[:1])
            check(f'docs {rel}: no plain-text widget repr in outputs', not re.search(r'\b(IntSlider|FloatSlider|VBox|HBox)\(', outs),
                  re.findall(r'.{0,60}\b(?:IntSlider|FloatSlider|VBox|HBox)\(.{0,60}', outs)[:1])
            plots = [i for i in info['imgs'] if i['src'].startswith('data:image/png') or i['src'].split('?')[0].endswith('.png')]
            if kind == 'lesson':
                check(f'docs {rel}: plots shown', len(plots) > 0 and all(i['w'] > 0 for i in plots),
                      f"{len(plots)} png image(s), widths {[i['w'] for i in plots][:8]}")
                api = [h for h in info['headings'] if h in API_NAMES.get(Path(rel).stem, ())]
                want = API_NAMES.get(Path(rel).stem, ())
                check(f'docs {rel}: API section (show_doc) for {", ".join(want)}', 'API' in info['headings'] and set(want) <= set(api),
                      f"found {api}")
            elif kind == 'home':
                lessons = sorted(p.name for p in site.glob('*.html') if p.name not in ('index.html', '404.html'))
                linked = {Path(urlsplit(l).path).name for l in info['article_links'] if urlsplit(l).netloc == urlsplit(base).netloc}
                missing = [l for l in lessons if l not in linked]
                check(f'docs {rel}: the page links to lesson pages', bool(set(lessons) & linked),
                      f"{len(set(lessons) & linked)} of {len(lessons)}" + (f'; not linked from the page itself: {missing}' if missing else ''))
                if plots: check(f'docs {rel}: its plots load', all(i['w'] > 0 for i in plots), f'{len(plots)} png')
            # every internal link and resource answers 200, and every #fragment exists on its page
            internal = sorted({u for u in info['links'] + info['resources'] if urlsplit(u).netloc == urlsplit(base).netloc})
            bad = []
            for u in internal:
                target, _, frag = u.partition('#')
                if target not in cache: cache[target] = fetch(target)
                status, body = cache[target]
                if status != 200: bad.append(f'{u} -> {status}')
                elif frag and not re.search(rf'''\bid=["']{re.escape(html.escape(unquote(frag)))}["']''', body):
                    bad.append(f'{u} -> no element with id {unquote(frag)!r}')
            check(f'docs {rel}: {len(internal)} internal links and resources resolve', bool(internal) and not bad, '; '.join(bad[:10]))
        # the same for every page of the site, from its HTML (no browser needed)
        bad, n = [], 0
        for f in sorted(site.glob('*.html')):
            url = urljoin(base, f.name)
            refs = re.findall(r'''\b(?:href|src)=["']([^"'#][^"']*|#[^"']+)["']''', f.read_text(errors='replace'))
            for ref in {html.unescape(r) for r in refs}:
                u = urljoin(url, ref)
                if urlsplit(u).netloc != urlsplit(base).netloc: continue
                n += 1
                target, _, frag = u.partition('#')
                if target not in cache: cache[target] = fetch(target)
                status, body = cache[target]
                if status != 200: bad.append(f'{f.name}: {ref} -> {status}')
                elif frag and not re.search(rf'''\bid=["']{re.escape(html.escape(unquote(frag)))}["']''', body):
                    bad.append(f'{f.name}: {ref} -> no element with id {unquote(frag)!r}')
        check(f'docs: all {len(list(site.glob("*.html")))} pages, {n} internal links and resources resolve', n > 0 and not bad,
              '; '.join(bad[:10]) + (f' (and {len(bad) - 10} more)' if len(bad) > 10 else ''))
        if external: log(f'blocked {len(set(external))} request(s) to other hosts (offline), e.g. {sorted(set(external))[:3]}')
        if page_errors: log(f'JavaScript errors on the site: {page_errors[:3]}')
    except Exception as e:
        check('docs test', False, f'{e.__class__.__name__}: {e}'); traceback.print_exc()
    finally:
        if ctx is not None:
            try: ctx.close()
            except Exception: pass
        stop(server)

API_NAMES = {'core': ('track_memory', 'model_memory', 'fmt_bytes', 'parse_bytes'), 'callback': ('MemRecorder',),
             'explorer': ('MemExplorer',)}

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--only', choices=['lab', 'docs'], help='run one part (default: both)')
    ap.add_argument('--notebook', nargs='+', default=['nbs/02_explorer.ipynb'],
                    help='lesson notebooks with an explorer (default nbs/02_explorer.ipynb)')
    ap.add_argument('--site', default=str(ROOT/'_site'), help='built site (default _site/)')
    ap.add_argument('--pages', nargs='+', default=['index.html:home', 'callback.html:lesson', 'explorer.html:lesson'],
                    help='site pages to check, as page:home or page:lesson')
    ap.add_argument('--shots', default=str(ROOT/'_browser'), help='folder for screenshots (default _browser/)')
    ap.add_argument('--timeout', type=int, default=300, help='seconds to wait for Run All / a Run (default 300)')
    ap.add_argument('--chromium', default=os.environ.get('CHROMIUM', '/usr/bin/chromium'), help='Chromium executable')
    a = ap.parse_args()
    t0 = time.time()
    shots = Path(a.shots); shots.mkdir(parents=True, exist_ok=True)
    print(f'screenshots: {shots}', flush=True)
    tmp = Path(tempfile.mkdtemp(prefix='memhelp-browser-'))
    try:
        if not check('chromium found', Path(a.chromium).exists(), a.chromium + ('' if Path(a.chromium).exists() else
                     ' is missing: apt-get install -y chromium (or pass --chromium)')): return finish(t0)
        try: from playwright.sync_api import sync_playwright
        except ImportError: check('playwright importable', False, 'pip install playwright (no `playwright install` needed)'); return finish(t0)
        with sync_playwright() as p:
            if a.only in (None, 'lab'):
                nbs = [nb_rel(n) for n in a.notebook]
                for n, r in zip(a.notebook, nbs):
                    if r is None: check(f'{n}: a notebook in nbs/', False, 'not found')
                if any(nbs):
                    (tmp/'lab-run').mkdir()
                    test_lab(p, a.chromium, [r for r in nbs if r], shots, a.timeout, tmp/'lab-run')
            if a.only in (None, 'docs'):
                pages = [tuple(s.rsplit(':', 1)) if ':' in s else (s, 'lesson') for s in a.pages]
                (tmp/'docs-run').mkdir()
                test_docs(p, a.chromium, Path(a.site), pages, shots, tmp/'docs-run')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish(t0)

def nb_rel(n):
    "`n` (relative to the cwd or the repo) as a path relative to the repo, if it is a notebook in nbs/"
    for c in (Path(n), ROOT/n):
        c = c.resolve()
        if c.is_file() and c.parent == ROOT/'nbs': return c.relative_to(ROOT).as_posix()
    return None

def finish(t0):
    print(f'browser test took {time.time() - t0:.0f} s')
    print(f'{check.passed} passed, {check.failed} failed')
    if not DROVE: print('no page was driven: this is not a pass')
    return 0 if check.failed == 0 and check.passed > 0 and DROVE else 1

if __name__ == '__main__': sys.exit(main())
