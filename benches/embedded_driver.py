"""firebird-driver for the benches' helper scripts, set up as the test suite
does: the client library of $FIREBIRD, or else the firebird-embedded
package's engine (its libtommath and libtomcrypt loaded first, since the
engine does not find them on its own). Imported with benches/ on
PYTHONPATH; call setup() before importing firebird.driver's functions."""

import ctypes
import os


def setup():
    root = os.environ.get("FIREBIRD")
    if not root:
        import firebird.embedded

        root = os.path.join(os.path.dirname(firebird.embedded.__file__), "runtime")
        os.environ["FIREBIRD"] = root
        for lib in ["libtommath.so.1", os.path.join(root, "libtomcrypt.so.1")]:
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    from firebird.driver import driver_config

    driver_config.fb_client_library.value = os.path.join(root, "libfbclient.so.2")
