"""Running the collector inside a user's own Python program (``perfdiff collect -- CMD``).

Why a package of its own: the code here runs in *another* process, the user's, started by
``perfdiff.collect.user_program``. ``boot/`` holds only a ``sitecustomize.py`` (its folder is
put first on the child's ``PYTHONPATH``, so no other module name leaks into the program);
``child`` is the in-process collector it starts; ``config`` is the contract between parent and
child (one JSON environment variable), which names the trace backend the child opens (CUPTI's;
CPU tests name a stand-in of their own, tests/support/fake_cupti.py).
"""

from __future__ import annotations
