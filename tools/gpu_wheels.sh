#!/usr/bin/env bash
# Download into .whl/ (git-ignored) the wheels tools/gpu_check.py needs on the lent GPU machine, whose image has torch,
# torchvision, pandas, matplotlib, transformers and timm but not these (Python 3.12 there; all of these are pure Python).
# Then, in the device run: carry .whl, and start the command with
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
pkgs=(fastai==2.8.7 fastcore==1.14.5 fasttransform==0.0.2 fastprogress==1.1.6 fastdownload==0.0.8 plum-dispatch==2.10.1
      beartype==0.23.1 python-fasthtml==0.14.5 starlette==1.10.0 itsdangerous==2.2.0 python-multipart==0.0.34
      defusedxml==0.7.1 ipython==9.18.1 ipython-pygments-lexers traitlets==5.16.1 matplotlib-inline==0.2.2 decorator
      jedi parso pexpect ptyprocess prompt-toolkit wcwidth stack-data executing asttokens pure-eval comm==0.2.3
      ipywidgets==8.1.9 widgetsnbextension jupyterlab-widgets nbdev==2.4.14 execnb==0.1.18 astunparse==1.6.3 ghapi
      watchdog)
# spaCy (fastai's word tokenizer, which 12_batching and 14_lstm_chunking use) is not carried: with its compiled
# dependencies it is about 57 MB, over what one device call takes with the rest (64 MiB); tools/gpu_check.py reports
# those notebooks as not run, naming the missing package
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "${pkgs[@]}"
du -sh .whl
