"""The ``fbunload`` command line, from the Python package: the same program
as the ``fbunload`` binary (``fbunload --help``), so ``pip install`` gives
both the module and the command.

``python -m fbunload ...`` runs it too."""

import signal
import sys

from fbunload import _fbunload


def _stop(signum, frame):
    # SIGTERM stops the run as Ctrl-C does, as it does the binary's.
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    sys.exit(_fbunload.run_cli(["fbunload", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
