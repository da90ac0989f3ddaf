"""A reader process of an fbunload run started from Python (see
``processes=`` and ``--processes``): the run starts this interpreter as
``python -I .../fbunload/_reader.py PATHS`` and it reads units for the run
over its standard input and output. Not for running by hand.

It gets the database's password, so it imports nothing from where the run
happened to start: ``-I`` leaves the working directory, the script's
directory, ``PYTHON*`` variables and the user's site out of ``sys.path``;
the run starts it in ``/``; the package is loaded from this file's own
directory, the run's; and the run's ``sys.path`` (``PATHS``: its absolute
entries but its working directory and script directory) finds the rest
(pyarrow) where the run found it."""

import sys


def command():
    """The arguments after the interpreter that start a reader process of
    this package, as the run is set up now."""
    import json
    import os

    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    # Where the run's own script or -c/-m put its first entry (its
    # directory, or the working directory); -P (3.11+) puts none.
    skip_first = not getattr(sys.flags, "safe_path", False)
    paths = []
    for i, path in enumerate(sys.path):
        if (i == 0 and skip_first) or not path or not os.path.isabs(path):
            continue
        if cwd is not None and os.path.realpath(path) == cwd:
            continue
        if path not in paths:
            paths.append(path)
    return ["-I", os.path.abspath(__file__), json.dumps(paths)]


def _serve():
    import importlib.util
    import json
    import os

    paths = json.loads(sys.argv[1]) if len(sys.argv) > 1 else []
    sys.path[:] = paths + [p for p in sys.path if p not in paths]
    package = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "fbunload",
        os.path.join(package, "__init__.py"),
        submodule_search_locations=[package],
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["fbunload"] = module
    spec.loader.exec_module(module)
    from fbunload._fbunload import serve_reader

    return serve_reader()


if __name__ == "__main__":
    sys.exit(_serve())
