"""Write README.md from nbs/index.ipynb with Jupyter's nbconvert (Quarto, which nbdev_readme needs, can't be installed here).

`python tools/readme.py` rewrites README.md; `python tools/readme.py --check` exits 1 if README.md is stale."""
import re, sys
from pathlib import Path
import nbformat
from nbconvert import MarkdownExporter

root = Path(__file__).resolve().parent.parent
_directive = re.compile(r'^\s*#\|\s*(.*)$')

def _directives(cell): return [m.group(1).strip() for l in cell.source.splitlines() if (m := _directive.match(l))]

def render() -> str:
    "README text: index.ipynb's cells less the hidden ones and nbdev's `#|` directive lines"
    nb = nbformat.read(root/'nbs'/'index.ipynb', as_version=4)
    cells = []
    for c in nb.cells:
        ds = _directives(c)
        if 'hide' in ds or any(d.startswith('export') for d in ds): continue
        c.source = '\n'.join(l for l in c.source.splitlines() if not _directive.match(l)).strip()
        if c.cell_type == 'markdown': c.source = re.sub(r'^> ', '', c.source, flags=re.M)  # nbdev's summary line
        cells.append(c)
    nb.cells = cells
    body, _ = MarkdownExporter().from_notebook_node(nb)
    note = '<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->\n'
    return note + re.sub(r'\n{3,}', '\n\n', body).strip() + '\n'

if __name__ == '__main__':
    readme, text = root/'README.md', render()
    if '--check' in sys.argv:
        if not readme.exists() or readme.read_text() != text:
            sys.exit('README.md is stale: run `python tools/readme.py` and commit it')
        print('README.md is up to date')
    else: readme.write_text(text); print(f'wrote {readme}')
