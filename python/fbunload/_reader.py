"""A reader process of an fbunload run started from Python: the run starts
``python -m fbunload._reader`` and it reads units for the run over its
standard input and output (see ``processes=`` and ``--processes``). Not for
running by hand."""

import sys

from fbunload._fbunload import serve_reader

if __name__ == "__main__":
    sys.exit(serve_reader())
