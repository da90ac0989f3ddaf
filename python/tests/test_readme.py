"""The README's Quick start and Python examples, run as a newcomer would:
extracted from the README (so they cannot drift from it) and run in an
empty directory, the shell lines with the installed ``fbunload`` command,
then the Python block."""

import os
import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def readme_block(kind):
    """The code block after the README's ``<!-- tested: kind -->`` marker."""
    text = README.read_text()
    match = re.search(r"<!-- tested: %s -->\n```\w+\n(.*?)\n```" % kind, text, re.S)
    assert match, f"README.md has no block marked <!-- tested: {kind} -->"
    return match.group(1)


def test_the_quick_start_and_python_examples_run_as_written(tmp_path):
    # The console script beside this Python: what `pip install` put on PATH.
    bin_dir = pathlib.Path(sys.executable).parent
    assert (bin_dir / "fbunload").exists(), bin_dir
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env.pop("ISC_USER", None)
    env.pop("ISC_PASSWORD", None)
    lines = [l for l in readme_block("shell").splitlines() if l.strip()]
    assert lines[0].startswith("fbunload sample"), lines[0]
    for line in lines:
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        if "-o -" in line:
            assert len(done.stdout.splitlines()) == 3, done.stdout
    for made in ["out/STOCK.csv", "orders/ORDERS.csv", "lake/ALL_TYPES.parquet",
                 "stock/STOCK.jsonl.zst", "lake/manifest.json"]:
        assert (tmp_path / made).exists(), made

    python = readme_block("python")
    done = subprocess.run([sys.executable, "-c", python], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "py-lake" / "manifest.json").exists()
    assert (tmp_path / "py-parts" / "Q.000003.csv").exists()
