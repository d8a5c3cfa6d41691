"""Started by Python in every process of a program run under ``perfdiff collect -- CMD``.

Why sitecustomize: it runs before the program's first line, so the collector is active before
the first CUDA call without the program changing. It does nothing unless perfdiff's config
variable is set, never lets an error stop the program, and then runs the sitecustomize that
this one shadows (if the environment had one), so the program's own setup still happens.
"""

import os
import sys


def _start_perfdiff() -> None:
    if not os.environ.get("PERFDIFF_INJECT_CONFIG"):
        return
    try:
        from perfdiff.collect.inject.child import activate

        activate()
    except Exception as exc:  # the program must run even if the collector cannot
        print(f"perfdiff: warning: collector not started in pid {os.getpid()} "
              f"({type(exc).__name__}: {exc})", file=sys.stderr)


def _chain_shadowed_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_start_perfdiff()
_chain_shadowed_sitecustomize()
