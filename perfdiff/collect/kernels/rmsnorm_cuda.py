"""The ``cuda`` implementation: a C++/CUDA extension built with torch.utils.cpp_extension.

Why built on first use and cached: the sources (``csrc/``) ship with perfdiff and must match
the torch and CUDA of the machine that runs them, so they are compiled there, once. The build
directory is keyed by a hash of the sources, the torch version and the target GPU
architecture, so an edited source or a new torch rebuilds instead of loading a stale module.
``compile_commands.json`` (for clangd and other C++ tools) is written into the build
directory by ``ninja -t compdb``, and copied wherever ``python -m
perfdiff.collect.kernels.rmsnorm_cuda --compile-commands DIR`` says.

Cache root: ``$PERFDIFF_EXT_CACHE`` or ``~/.cache/perfdiff/extensions``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

torch: Any = importlib.import_module("torch")

CSRC = Path(__file__).with_name("csrc")
SOURCES = ("rmsnorm_bindings.cpp", "rmsnorm_kernels.cu")
EXTENSION_PREFIX = "perfdiff_rmsnorm"

_loaded: Any = None


def cache_root() -> Path:
    """Where builds are cached (override with ``$PERFDIFF_EXT_CACHE``)."""
    env = os.environ.get("PERFDIFF_EXT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "perfdiff" / "extensions"


def _arch() -> str:
    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


def build_key(arch: str) -> str:
    """Hash of what the binary depends on: sources, torch version, CUDA version, GPU arch."""
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode())
        digest.update((CSRC / name).read_bytes())
    digest.update(f"{torch.__version__}|{torch.version.cuda}|{arch}".encode())
    return digest.hexdigest()[:12]


def load_extension(verbose: bool = False) -> Any:
    """Build (first time) or load (cached) the extension module; ``forward``/``backward``."""
    global _loaded
    if _loaded is not None:
        return _loaded
    from torch.utils import cpp_extension

    arch = _arch()
    key = build_key(arch)
    name = f"{EXTENSION_PREFIX}_{key}"
    build_dir = cache_root() / name
    build_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", arch)
    os.environ.setdefault("MAX_JOBS", str(max(2, os.cpu_count() or 2)))
    _loaded = cpp_extension.load(
        name=name,
        sources=[str(CSRC / s) for s in SOURCES],
        extra_cflags=["-O3"],
        extra_cuda_cflags=["-O3"],
        build_directory=str(build_dir),
        verbose=verbose,
    )
    write_compile_commands(build_dir)
    return _loaded


def write_compile_commands(build_dir: Path, dest: Path | None = None) -> Path | None:
    """``compile_commands.json`` of the build (ninja's compdb), in ``build_dir`` and ``dest``."""
    ninja = shutil.which("ninja")
    if ninja is None or not (build_dir / "build.ninja").exists():
        return None
    proc = subprocess.run(
        [ninja, "-C", str(build_dir), "-t", "compdb", "compile", "cuda_compile"],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    target = build_dir / "compile_commands.json"
    target.write_text(proc.stdout, encoding="utf-8")
    if dest is not None:
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, dest / "compile_commands.json")
        return dest / "compile_commands.json"
    return target


def forward(x2d: Any, w: Any, eps: float) -> tuple[Any, Any]:
    y, rstd = load_extension().forward(x2d, w, float(eps))
    return y, rstd


def backward(dy2d: Any, x2d: Any, w: Any, rstd: Any) -> tuple[Any, Any]:
    dx, dw = load_extension().backward(dy2d, x2d, w, rstd)
    return dx, dw


def main(argv: list[str] | None = None) -> int:
    """Build the extension now; print where it lives and write compile_commands.json."""
    parser = argparse.ArgumentParser(prog="python -m perfdiff.collect.kernels.rmsnorm_cuda")
    parser.add_argument("--compile-commands", type=Path, default=None,
                        help="also copy compile_commands.json into this directory")
    parser.add_argument("--verbose", action="store_true", help="show the compiler commands")
    args = parser.parse_args(argv)
    module = load_extension(verbose=args.verbose)
    build_dir = Path(module.__file__).parent
    db = write_compile_commands(build_dir, args.compile_commands)
    print(f"extension: {module.__file__}")
    print(f"compile_commands.json: {db if db is not None else 'not written (no ninja?)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["backward", "build_key", "cache_root", "forward", "load_extension",
           "write_compile_commands"]
