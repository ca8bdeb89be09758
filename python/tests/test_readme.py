"""The README's Python block runs as printed, on the corpus: its last line
named a folder, `traces/`, that a new reader does not have."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

import lumos

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_python_block_runs(corpus: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 1, blocks
    # The README's paths are relative to the repository, as the tests'
    # corpus is by default; the fixture may name another place.
    code = blocks[0].replace("../shared/traces", str(corpus))
    # Each line's value is what the reader sees in a notebook.
    seen = []
    namespace: dict = {"lumos": lumos}
    for line in code.splitlines():
        statement = line.split("  #")[0].rstrip()
        if not statement or statement.startswith("import "):
            continue
        if "=" in statement.split("(")[0]:
            exec(statement, namespace)  # noqa: S102 - the README's own code
        else:
            seen.append(eval(statement, namespace))  # noqa: S307
    frames, job_steps = seen
    assert all(isinstance(f, pd.DataFrame) and len(f) for f in frames)
    assert isinstance(job_steps, pd.DataFrame) and len(job_steps) == 1
