#!/usr/bin/env bash
# The whole test suite: the Rust tests, then the Python package's
# (python/tests). What the README's test command runs, and what .ci/run
# runs after its format, lint and doc checks.
#
# The Python side gets a virtual environment of its own under the cargo
# target dir ($LUMOS_VENV to choose another), with what it needs from the
# package index: maturin builds the extension into the same target dir,
# reusing what `cargo test` just compiled; pytest, pandas, pyarrow, Ray
# (the distributed tests start a local cluster), tqdm and matplotlib (the
# example's plot). LUMOS_SKIP_PYTHON=1 runs the Rust tests alone.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"

cargo test --workspace --release

if [ "${LUMOS_SKIP_PYTHON:-0}" = 1 ]; then
  echo "LUMOS_SKIP_PYTHON=1: Python tests not run"
  exit 0
fi
# The parity tests compare the API with the binary `cargo test` just built
# for the CLI's tests. (`cargo build -p lumos` would build it again: without
# the dev-dependencies its dependencies' features differ, and every lumos
# crate is compiled anew.)
[ -x "$target/release/lumos" ] || cargo build --release -p lumos
venv="${LUMOS_VENV:-$target/py-venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  'maturin>=1.5,<2' 'pytest>=7,<9' 'pandas>=2,<3' 'pyarrow>=14,<30' \
  'ray>=2.9,<3' 'tqdm>=4.60,<5' 'matplotlib>=3.5,<4'
wheels="$target/wheels"
rm -rf "$wheels"
CARGO_TARGET_DIR="$target" "$venv/bin/maturin" build --release --quiet --out "$wheels"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheels"/lumos-*.whl
# `import lumos` is the wheel just installed: python/ is not on the path.
CARGO_TARGET_DIR="$target" "$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests
