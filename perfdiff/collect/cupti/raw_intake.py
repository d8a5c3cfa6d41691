"""CUPTI activity buffers taken over raw, through CUPTI's C API, and compacted at once.

Why not ``cupti.activity_register_callbacks``: cupti-python's completed-buffer callback turns
every record into a Python object before our code sees it, on CUPTI's thread, holding the
interpreter: a full 32 MiB buffer held it for ~0.5-1 s inside a launch-bound program's step
(H100, 2026-11-24). Here the callbacks are our own ctypes functions registered with
``cuptiActivityRegisterCallbacks`` in the libcupti that cupti-python loaded: CUPTI gets
buffers we own (numpy arrays, 256 KiB), and a completed one is decoded by ``decode.py`` into
compact columns (a few numpy copies per run of same-kind records, no per-record Python), then
reused. Each hand-over is stamped (start, start + hold, records) on the trace clock, where
the hold is the CPU time CUPTI's thread spent in our callback (``time.thread_time_ns``): the
wall time would also count the waits for the interpreter lock, during which the program ran
(numpy copies release it), and overstate what the program lost. A spooled hand-over's hold
leaves out the CPU time of the write's system calls, which run with the lock released
(summed in ``spool_write_ns`` instead).

Spool (``spool.py``): with a spool file attached (``attach_spool``), a completed buffer is
only written to that file (one ``os.writev``, the interpreter lock released) and goes back to
the pool; everything is decoded when the collection stops (``columns``). Why: decoding where
CUPTI hands a buffer over, or at the next hand-over, held timm ViT-S bf16 cycles 10-44 ms
(H100, 2026-11-28). Should a write fail (disk full), the spool is given up with one error
line and buffers are decoded as they come, as without one: nothing is lost.

Kernel names: a kernel record holds the address of CUPTI's copy of the name, shared by every
record of that kernel and kept by CUPTI for the session; the distinct addresses are read
once, when the collection stops (``names``), never per record.
"""

from __future__ import annotations

import ctypes
import importlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from perfdiff.collect.columns import TraceColumns, concat
from perfdiff.collect.cupti.decode import (
    KNOWN_SIZES,
    LAYOUTS,
    RecordLayout,
    RecordLayoutError,
    decode_buffer,
)
from perfdiff.collect.cupti.spool import SpoolError, SpoolWriter, read_frames

# 256 KiB: ~1,000 kernel records. A buffer of kernels alone decodes in ~0.1 ms per 1,000
# records, but kernels interleaved with memsets/memcpys (train-step: ~1,500 memsets per
# 2 MiB) cost ~9 us per same-kind run: a 2 MiB buffer held the interpreter 14-26 ms there
# (H100, scripts/gpu/pm_probe.py); 256 KiB keeps a hand-over near 3 ms at worst.
BUFFER_BYTES = 256 * 1024
# With ``defer``: completed buffers kept undecoded until the program's cycle ends, up to this
# much (16 buffers; a GPT-2 generate step of ~9,000 launches fills ~8); past it a hand-over
# decodes everything waiting, as without ``defer``: memory and that one hold stay bounded.
MAX_PENDING_BYTES = 4 * 1024 * 1024
_REQUEST = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p),
                            ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t))
_COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                             ctypes.c_size_t, ctypes.c_size_t)


def libcupti_path(maps_text: str) -> str | None:
    """The libcupti this process has loaded, from /proc/self/maps text (None if none)."""
    for line in maps_text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and "/libcupti.so" in parts[5]:
            return parts[5].strip()
    return None


def load_libcupti(cupti: Any) -> ctypes.CDLL:
    """The libcupti that cupti-python uses (it loads it lazily: one clock read loads it).

    cupti-python finds it through ``cuda.pathfinder`` (cached per process), so asking
    pathfinder gives the very library cupti-python calls; /proc/self/maps is the fallback.
    A process can hold two (torch's own and cupti-python's), and callbacks registered with
    the other one would never see cupti-python's activity."""
    cupti.get_timestamp()
    try:
        pathfinder = importlib.import_module("cuda.pathfinder")
        return ctypes.CDLL(str(pathfinder.load_nvidia_dynamic_lib("cupti").abs_path))
    except Exception:  # no pathfinder, or another loader: the mapped library
        pass
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            path = libcupti_path(f.read())
    except OSError:
        path = None
    if path is None:
        raise RecordLayoutError("cannot find the libcupti that cupti-python loaded "
                                "(/proc/self/maps); raw activity intake unavailable")
    return ctypes.CDLL(path)


def cupti_api_version(lib: ctypes.CDLL) -> int:
    version = ctypes.c_uint32(0)
    if lib.cuptiGetVersion(ctypes.byref(version)) != 0:
        raise RecordLayoutError("cuptiGetVersion failed; raw activity intake unavailable")
    return int(version.value)


class RawIntake:
    """Owns CUPTI's activity buffers: hands them out, takes completed ones in as columns."""

    def __init__(self, lib: ctypes.CDLL, layout: RecordLayout, clock_ns: Callable[[], int],
                 buffer_bytes: int = BUFFER_BYTES) -> None:
        self._lib = lib
        self.layout = layout
        self._clock_ns = clock_ns
        self._buffer_bytes = buffer_bytes
        self._lent: dict[int, np.ndarray[Any, np.dtype[np.uint8]]] = {}
        self._pool: list[np.ndarray[Any, np.dtype[np.uint8]]] = []
        self._lock = threading.Lock()
        self._decoding = threading.RLock()  # take() from CUPTI's thread or the program's
        self.chunks: list[TraceColumns] = []
        self.records = 0
        self.bytes_taken = 0
        self.handovers: list[tuple[int, int, int]] = []  # (start, end, records), trace clock
        self.errors: list[str] = []
        # decode deferred to decode_pending() (the end of a cycle): buffers waiting, their bytes
        self.defer = False
        self._pending: list[tuple[np.ndarray[Any, np.dtype[np.uint8]], int]] = []
        self._pending_bytes = 0
        self.deferred_ns = 0  # CPU time decode_pending() took, all calls
        self.spool: SpoolWriter | None = None  # attach_spool(): buffers written, decoded at stop
        self._spooled: SpoolWriter | None = None  # the spool to read back (also once given up)
        self.stop_decode_ns = 0  # CPU time the decode of the spool took at stop
        self.spool_write_ns = 0  # CPU time of the spool's writes (interpreter lock released)
        # ctypes must keep the function objects alive as long as CUPTI may call them
        self._request_cb = _REQUEST(self._on_request)
        self._complete_cb = _COMPLETE(self._on_complete)

    @classmethod
    def for_cupti(cls, cupti: Any, clock_ns: Callable[[], int]) -> RawIntake:
        """On the libcupti cupti-python loaded. A CUPTI whose record sizes are not registered
        gets them from CUPTI's own walk of its first buffer (:func:`learn_layout`)."""
        lib = load_libcupti(cupti)
        version = cupti_api_version(lib)
        layout = LAYOUTS.get(version) or RecordLayout(version, {}, "learnt from CUPTI's walk")
        return cls(lib, layout, clock_ns)

    def register(self) -> None:
        status = self._lib.cuptiActivityRegisterCallbacks(self._request_cb, self._complete_cb)
        if status != 0:
            raise RecordLayoutError(f"cuptiActivityRegisterCallbacks failed (CUPTI error "
                                    f"{status}); raw activity intake unavailable")

    def retire(self) -> tuple[Any, Any]:
        """This intake is done (its stretch's CUPTI was finalised: ``detached.py``): its pooled
        buffers go, and the two C callbacks are returned for the caller to keep alive, in
        case CUPTI still holds their addresses."""
        with self._lock:
            self._pool.clear()
        return self._request_cb, self._complete_cb

    def attach_spool(self, path: Path) -> None:
        """From now on write completed buffers to ``path`` instead of decoding them
        (module docstring); SpoolError (an OSError) if the file cannot be created."""
        self.spool = self._spooled = SpoolWriter(path)

    def _on_request(self, buffer: Any, size: Any, max_records: Any) -> None:
        """CUPTI wants an empty buffer (called from whichever thread fills one)."""
        with self._lock:
            array = self._pool.pop() if self._pool else np.empty(self._buffer_bytes, np.uint8)
            address = int(array.ctypes.data)
            self._lent[address] = array
        buffer[0] = address
        size[0] = array.size
        max_records[0] = 0

    def _on_complete(self, context: Any, stream_id: int, buffer: Any, size: int,
                     valid: int) -> None:
        """A buffer is full or flushed: decode it into columns, give it back to the pool; or,
        with ``defer``, keep it for :meth:`decode_pending` while few enough bytes wait."""
        started = self._clock_ns()
        cpu = time.thread_time_ns()
        spool = self.spool
        written = self._spool_one(spool, int(buffer or 0), int(valid)) if spool else None
        if written is not None:
            # the write's system calls run with the interpreter lock released: not a hold
            self.spool_write_ns += written
            self.handovers.append((started, started + time.thread_time_ns() - cpu - written, 0))
            return
        with self._lock:
            array = self._lent.pop(int(buffer or 0), None)
            if array is not None and self.defer and valid \
                    and self._pending_bytes + int(valid) <= MAX_PENDING_BYTES:
                self._pending.append((array, int(valid)))
                self._pending_bytes += int(valid)
                array = None
                parked = True
            else:
                parked = False
        if parked:
            self.handovers.append((started, started + time.thread_time_ns() - cpu, 0))
            return
        if array is None:
            self.errors.append("CUPTI completed a buffer perfdiff did not hand out; ignored")
            return
        with self._decoding:
            count = self._decode_waiting()
            try:
                if valid:
                    count += self.take(array, int(valid))
            except Exception as exc:  # never into CUPTI's thread: the run file says it
                self.errors.append(f"an activity buffer was not decoded ({exc})")
            finally:
                with self._lock:
                    self._pool.append(array)
        self.handovers.append((started, started + time.thread_time_ns() - cpu, count))

    def _spool_one(self, spool: SpoolWriter, address: int, valid: int) -> int | None:
        """Write the completed buffer at ``address`` to the spool and pool it; the CPU ns the
        write's system calls took (lock released), or None (buffer left lent, spool given up)
        if the write failed, so the caller decodes it instead."""
        with self._lock:
            array = self._lent.get(address)
        if array is None:
            return None  # not ours: the caller says so
        written = 0
        if valid:
            try:
                written = spool.write(array, valid)
            except SpoolError as exc:
                self.spool = None
                self.errors.append(f"{exc}; activity buffers were decoded as CUPTI handed them "
                                   "over from then on (held the interpreter inside cycles)")
                return None
        with self._lock:
            self._lent.pop(address, None)
            self._pool.append(array)
        return written

    def decode_spool(self) -> int:
        """Decode every buffer written to the spool, oldest first, then delete the file; the
        records they held. Called at stop, after the program's last cycle; the decoded chunks
        go before those decoded in memory (which came after any spool failure)."""
        writer = self._spooled
        if writer is None:
            return 0
        self.spool = self._spooled = None
        writer.close()
        cpu = time.thread_time_ns()
        kept, self.chunks = self.chunks, []
        count = 0
        try:
            for array, valid in read_frames(writer.path, limit=writer.good_bytes):
                try:
                    count += self.take(array, valid)
                except Exception as exc:
                    self.errors.append(f"an activity buffer was not decoded ({exc})")
        except SpoolError as exc:
            self.errors.append(f"{exc}; the records after it are missing")
        self.chunks.extend(kept)
        self.stop_decode_ns += time.thread_time_ns() - cpu
        try:
            writer.path.unlink()
        except OSError as exc:
            self.errors.append(f"the activity spool {writer.path} was not removed "
                               f"({exc.strerror})")
        return count

    def decode_pending(self) -> int:
        """Decode the buffers kept by ``defer``; the records they held.

        Why: called where the program's cycle has ended (``CycleLog.on_cycle_end``), on the
        program's thread, so the decode lands between cycles, not inside one: a GPT-2
        ``generate`` step of ~9,000 launches otherwise held the interpreter 8-22 ms inside its
        ~365 ms (H100, 2026-11-25). The time it takes is a hand-over too (outside every cycle
        when called between them) and is summed in ``deferred_ns``."""
        if not self._pending:
            return 0
        started = self._clock_ns()
        cpu = time.thread_time_ns()
        count = self._decode_waiting()
        taken = time.thread_time_ns() - cpu
        self.deferred_ns += taken
        self.handovers.append((started, started + taken, count))
        return count

    def _decode_waiting(self) -> int:
        """Decode every parked buffer, oldest first, and give it back to the pool."""
        count = 0
        with self._decoding:
            with self._lock:
                waiting, self._pending, self._pending_bytes = self._pending, [], 0
            for array, valid in waiting:
                try:
                    count += self.take(array, valid)
                except Exception as exc:
                    self.errors.append(f"an activity buffer was not decoded ({exc})")
                finally:
                    with self._lock:
                        self._pool.append(array)
        return count

    def take(self, array: np.ndarray[Any, np.dtype[np.uint8]], valid: int) -> int:
        """Decode ``array[:valid]`` into a chunk; the number of records it held."""
        try:
            chunk = decode_buffer(array, valid, self.layout)
        except RecordLayoutError:
            # a kind whose size is not known yet: CUPTI's own walk of this buffer says it
            learnt = learn_layout(self._walker(), array, valid)
            self.layout = RecordLayout(self.layout.cupti_api_version,
                                       {**self.layout.sizes, **learnt}, self.layout.note)
            chunk = decode_buffer(array, valid, self.layout)
        self.chunks.append(chunk)
        self.bytes_taken += valid
        count = chunk.kernels.size + chunk.memcpy.size + chunk.memset.size + chunk.api.size
        self.records += count
        return count

    def _walker(self) -> Callable[[int, int], list[int]]:
        return cupti_walker(self._lib)

    def columns(self) -> TraceColumns:
        """Everything taken in so far, names resolved (call once CUPTI is flushed)."""
        self.decode_spool()
        self._decode_waiting()
        out = concat(self.chunks) if self.chunks else TraceColumns()
        self.chunks = [out] if self.chunks else []
        out.names = resolve_names(out.kernels["name_key"], out.names)
        return out


def cupti_walker(lib: ctypes.CDLL) -> Callable[[int, int], list[int]]:
    """``walk(address, valid)``: the record addresses CUPTI's ``cuptiActivityGetNextRecord``
    finds in a buffer (CUPTI's own parser, independent of perfdiff's size table)."""
    fn = lib.cuptiActivityGetNextRecord
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]

    def walk(address: int, valid: int) -> list[int]:
        record = ctypes.c_void_p(None)
        found = []
        while fn(ctypes.c_void_p(address), ctypes.c_size_t(valid), ctypes.byref(record)) == 0:
            found.append(int(record.value or 0) - address)
        return found
    return walk


def learn_layout(walk: Callable[[int, int], list[int]],
                 array: np.ndarray[Any, np.dtype[np.uint8]], valid: int) -> dict[int, int]:
    """Record size of each kind in ``array[:valid]``, from CUPTI's walk (byte offsets), each
    checked against the struct versions perfdiff knows (``decode.KNOWN_SIZES``); anything
    else is one RecordLayoutError line."""
    offsets = walk(int(array.ctypes.data), valid)
    if not offsets:
        raise RecordLayoutError("CUPTI found no records in a non-empty activity buffer; "
                                "not decoded")
    ends = [*offsets[1:], valid]
    sizes: dict[int, set[int]] = {}
    for start, end in zip(offsets, ends, strict=True):
        kind = int(array[start:start + 4].view("<i4")[0])
        sizes.setdefault(kind, set()).add(end - start)
    learnt = {}
    for kind, seen in sorted(sizes.items()):
        known = KNOWN_SIZES.get(kind)
        size = next(iter(seen))
        if len(seen) != 1 or (known is not None and size not in known):
            raise RecordLayoutError(
                f"this CUPTI writes records of kind {kind} of {sorted(seen)} bytes, which is "
                f"no record version perfdiff knows ({list(known or ())}); not decoded")
        learnt[kind] = size  # a kind perfdiff does not read is skipped by its size
    return learnt


def resolve_names(keys: np.ndarray[Any, np.dtype[Any]], known: dict[int, str]) -> dict[int, str]:
    """Name key -> name for every distinct key: CUPTI's name string at that address."""
    names = dict(known)
    for key in np.unique(keys).tolist():
        if key in names:
            continue
        names[key] = "" if key <= 0 else ctypes.string_at(key).decode("utf-8", "replace")
    return names


__all__ = ["BUFFER_BYTES", "RawIntake", "cupti_api_version", "libcupti_path", "load_libcupti",
           "resolve_names"]
