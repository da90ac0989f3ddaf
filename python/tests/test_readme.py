"""The README and the docs book (docs/), checked as a newcomer reads them.

Every code block marked ``<!-- tested: LABEL -->`` is extracted (so it
cannot drift from the text) and run in an empty directory, shell blocks
line by line with the installed ``fbunload`` command, Python blocks with
this interpreter; each needs only what the ``pip install`` line before it
installs. Every link between the pages resolves, in GitHub's rendering and
in MkDocs' alike, and the book builds with ``mkdocs build --strict``."""

import ast
import os
import pathlib
import re
import site
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages():
    """The README, then the book's pages."""
    return [README] + sorted(DOCS.glob("*.md"))


def marked_blocks():
    """(page, line, label, language, code) of every block marked tested."""
    found = []
    for page in pages():
        text = page.read_text()
        for m in re.finditer(r"<!-- tested: (\w+) -->\n```(\w+)\n(.*?)\n```", text, re.S):
            line = text.count("\n", 0, m.start()) + 1
            found.append((page, line, m.group(1), m.group(2), m.group(3)))
    return found


def readme_block(label):
    """The first block marked ``<!-- tested: label -->``, README first."""
    for _, _, name, _, code in marked_blocks():
        if name == label:
            return code
    raise AssertionError(f"no block marked <!-- tested: {label} --> in README.md or docs/")


def unique_blocks():
    """Each tested block once (the book's home repeats the Quick start)."""
    seen, blocks = set(), []
    for block in marked_blocks():
        if block[4] not in seen:
            seen.add(block[4])
            blocks.append(block)
    return blocks


def block_id(block):
    return f"{block[0].relative_to(ROOT)}:{block[1]}"


def newcomer_env(home):
    """The environment of a newcomer's shell: the console script beside
    this Python on PATH, no Firebird credentials, a HOME of its own (the
    install page's examples write under ~) that still sees this user's
    Python packages."""
    bin_dir = pathlib.Path(sys.executable).parent
    assert (bin_dir / "fbunload").exists(), bin_dir
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               HOME=str(home), PYTHONUSERBASE=site.getuserbase())
    env.pop("ISC_USER", None)
    env.pop("ISC_PASSWORD", None)
    return env


def test_the_readme_and_the_book_have_tested_examples():
    labels = [(page.name, label) for page, _, label, _, _ in marked_blocks()]
    for where in [("README.md", "shell"), ("README.md", "python"), ("python.md", "python"),
                  ("adbc.md", "adbc"), ("index.md", "shell"), ("install.md", "shell")]:
        assert where in labels, where


@pytest.mark.parametrize("block", unique_blocks(), ids=block_id)
def test_every_tested_example_runs_as_written(block, tmp_path):
    page, line, _, language, code = block
    env = newcomer_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    if language == "python":
        done = subprocess.run([sys.executable, "-c", code], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{page.name}:{line}\n{done.stderr}"
        made = re.findall(r"\bunload\(\w+, \"([^\"]+)\"", code)
    else:
        assert language == "sh", f"{page.name}:{line}: a tested block is sh or python"
        for command in [l for l in code.splitlines() if l.strip()]:
            done = subprocess.run(["bash", "-c", command], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{page.name}:{line}: {command}\n{done.stderr}"
            if "-o -" in command and "| head -3" in command:
                assert len(done.stdout.splitlines()) == 3, done.stdout
        made = [d for d in re.findall(r"(?:^|\s)-o (\S+)", code) if d != "-"]
    # Every output directory an example names holds a complete run.
    for directory in made:
        assert (work / directory / "manifest.json").exists(), f"{page.name}:{line}: {directory}"


def run_block(page, line, language, code, work, env):
    """Runs one tested block in ``work`` as a reader would."""
    if language == "python":
        done = subprocess.run([sys.executable, "-c", code], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{page.name}:{line}\n{done.stderr}"
        return
    for command in [l for l in code.splitlines() if l.strip()]:
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{page.name}:{line}: {command}\n{done.stderr}"


def test_the_examples_run_in_sequence_in_one_directory_and_again(tmp_path):
    """As a reader goes: the Quick start, then every Python example (README,
    then the book: Python, ADBC, Dask) in the same directory, right after
    it, then every Python example again: the database the Quick start made
    is the one they use, and what they write they may write twice."""
    env = newcomer_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    blocks = unique_blocks()
    quick = [b for b in blocks if b[0] == README and b[3] == "sh"]
    assert len(quick) == 1
    run_block(quick[0][0], quick[0][1], quick[0][3], quick[0][4], work, env)
    python = [b for b in blocks if b[3] == "python"]
    order = ["README.md", "python.md", "adbc.md", "dask.md"]
    python.sort(key=lambda b: (order.index(b[0].name) if b[0].name in order else len(order), b[1]))
    assert {b[0].name for b in python} >= set(order), [b[0].name for b in python]
    for _ in range(2):
        for page, line, _, language, code in python:
            run_block(page, line, language, code, work, env)


def test_the_readme_quick_start_writes_each_format():
    code = readme_block("shell")
    assert code.splitlines()[0].startswith("fbunload sample"), code
    for flag in ["--no-header", "-f parquet", "--compress zstd", "-o -", "--plan", "fbunload check",
                 "--overwrite"]:
        assert flag in code, flag


def modules_of(requirements):
    """Import names of pip requirements: 'dask[dataframe]' -> dask."""
    names = set()
    for req in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower().replace("-", "_")
        names.add({"firebird_embedded": "firebird", "adbc_driver_manager": "adbc_driver_manager"}
                  .get(name, name))
    return names


def test_every_python_example_needs_only_what_its_install_line_installs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for page, line, _, language, code in marked_blocks():
        if language != "python":
            continue
        before = page.read_text().split("\n")[:line]
        installs = [l for l in before if re.search(r"pip install (-v )?'?\.", l)]
        assert installs, f"{page.name}:{line}: no pip install line before the example"
        chosen = re.search(r"'\.\[([\w,]+)\]'", installs[-1])
        installed = modules_of(project["dependencies"]) | {"fbunload"}
        for extra in (chosen.group(1).split(",") if chosen else []):
            installed |= modules_of(extras[extra])
        imported = set()
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module.split(".")[0])
        missing = {m for m in imported - installed if m not in sys.stdlib_module_names}
        assert not missing, f"{page.name}:{line}: {installs[-1].strip()} does not install {missing}"


def github_slug(heading):
    text = heading.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def mkdocs_slug(heading):
    """What MkDocs' toc extension makes of a heading (markdown's slugify)."""
    import unicodedata

    text = unicodedata.normalize("NFKD", heading.replace("`", "")).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def headings(page):
    fence, found = False, []
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#+ ", line):
            found.append(line.lstrip("#").strip())
    return found


def test_every_link_between_the_pages_resolves():
    anchors = {}
    for page in pages():
        slugs = [github_slug(h) for h in headings(page)]
        for heading in headings(page):
            # One anchor for GitHub and for MkDocs: no runs of '-' or spaces.
            assert github_slug(heading) == mkdocs_slug(heading), f"{page.name}: {heading}"
        assert len(slugs) == len(set(slugs)), f"{page.name}: a heading twice"
        anchors[page.resolve()] = set(slugs)
    for page in pages():
        fence, text = False, []
        for line in page.read_text().splitlines():
            if line.startswith("```"):
                fence = not fence
            elif not fence:
                text.append(line)
        for target in re.findall(r"\]\(([^)\s]+)\)", "\n".join(text)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page.resolve()
            assert file.exists(), f"{page.name}: {target}"
            if page.parent == DOCS:
                # MkDocs sees only docs/.
                assert file.is_relative_to(DOCS), f"{page.name}: {target} leaves docs/"
            if anchor:
                assert anchor in anchors.get(file, ()), f"{page.name}: {target}"
    # Every page is in the book's navigation.
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.glob("*.md"):
        assert f": {page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"


def test_the_book_builds(tmp_path):
    pytest.importorskip("mkdocs")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-d", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "index.html").exists()
