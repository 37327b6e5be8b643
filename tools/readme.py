"""Write README.md from nbs/index.ipynb with Jupyter's nbconvert (Quarto, which nbdev_readme needs, can't be installed here).

The notebook is executed first, so every figure in the README is computed, never typed.
`python tools/readme.py` rewrites README.md; `python tools/readme.py --check` exits 1 if README.md is stale."""
import re, sys
from pathlib import Path
import nbformat
from nbclient import NotebookClient
from nbconvert import MarkdownExporter

root = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root/'tools'))
from build_docs import directives  # one reader of nbdev's `#|` lines for both tools

# memhelp's own progress lines: `predict_memory: ... is still running (N operators, 12 s)`, `... still running (12 s)`
PROGRESS = re.compile(r'^[^\n]* is still running \([^\n]*\d s\)\n?', re.M)

def render() -> str:
    "README text: index.ipynb executed, less its hidden cells, the inputs of `hide_input` cells and nbdev's `#|` lines"
    nb = nbformat.read(root/'nbs'/'index.ipynb', as_version=4)
    NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': str(root/'nbs')}}).execute()
    cells = []
    for c in nb.cells:
        ds, body = directives(c.source) if c.cell_type == 'code' else ({}, c.source)
        if 'hide' in ds or any(d.startswith('export') for d in ds): continue
        c.source = '' if 'hide_input' in ds else body.strip()
        if c.cell_type == 'markdown': c.source = re.sub(r'^> ', '', c.source, flags=re.M)  # nbdev's summary line
        if c.cell_type == 'code':  # keep what a reader needs: text and markdown, not images or widget state
            c.outputs = [o for o in c.outputs if (o.get('output_type') == 'stream' and o.get('name') == 'stdout')
                         or 'text/markdown' in o.get('data', {}) or 'text/plain' in o.get('data', {})]
            for o in c.outputs:  # progress lines (a step past 10 s says so) come with the machine's speed: not content
                if o.get('output_type') == 'stream': o.text = PROGRESS.sub('', o.text)
            c.outputs = [o for o in c.outputs if o.get('output_type') != 'stream' or o.text.strip()]
            for o in c.outputs:
                if 'text/markdown' in o.get('data', {}):  # rendered as markdown (the exporter's template does so for display_data)
                    o.update(output_type='display_data', data={'text/markdown': o['data']['text/markdown']}); o.pop('execution_count', None)
        cells.append(c)
    nb.cells = cells
    body, _ = MarkdownExporter(exclude_input_prompt=True, exclude_output_prompt=True).from_notebook_node(nb)
    body = re.sub(r'```python\s*```\n?', '', body)  # the empty input block of a hide_input cell
    note = '<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->\n'
    return note + re.sub(r'\n{3,}', '\n\n', body).strip() + '\n'

if __name__ == '__main__':
    readme, text = root/'README.md', render()
    if '--check' in sys.argv:
        if not readme.exists() or readme.read_text() != text:
            sys.exit('README.md is stale: run `python tools/readme.py` and commit it')
        print('README.md is up to date')
    else: readme.write_text(text); print(f'wrote {readme}')
