# Cheat (harness_tamper): an honest tiled GEMM, judged honestly by the core, whose samples it then
# halves in the core's own memory. At import it keeps the session's handle
# (Evaluation._core.handle, found through the frames). In Evaluation.run()'s finally:, _cleanup()
# drops Evaluation._m_new and ModelNew.__del__ runs, after the Seal's last check and before
# Core.finish. It reads the session's result (kpj_result_json, which any caller may call) for
# the exact samples_s and wall_s of the candidate, follows the handle to the judge::Session
# (kpj_session's first member is the unique_ptr), and scans the Session object (bounded by its
# mapping in /proc/self/maps) for a pair of words (begin, end) that point at exactly those
# doubles: std::vector<double>'s layout. It overwrites both vectors with halved values, and the
# energy report's joules_per_call, dynamic_joules_per_call and average_watts (doubles stored in
# place in Session::energy_) with halved ones when energy was measured. kpj_finish then writes
# Session::timing_[0] and energy_ as they are now: a median of about half the real one. The
# physics floor was checked inside kpj_time, on the real median, and is not checked again.
# Weakness: the judge core's state lives in the candidate's address space (libkp_judge.so in the
# KernelBench worker, session.h: "its state lives in this library's memory, not in any Python
# object"), and Session::finish serialises it at the end with no record taken when each sample
# was measured (no copy sent out of the process, no checksum); ctypes reads and writes any address.
# Problem: gemm.py. Library: honest/gemm_fast.cu.
import ctypes
import json
import struct
import sys

import torch
import torch.nn as nn
import kernelpro_torch
from kernelpro_torch import judge

lib = kernelpro_torch.load()
_held = {}


def _remember():
    f = sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("self")
        if type(s).__name__ == "Evaluation" and getattr(s, "_core", None) is not None:
            _held["handle"] = s._core.handle
            return
        f = f.f_back


_remember()


def _writable_regions():
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(v, 16) for v in parts[0].split("-"))
            if parts[1].startswith("rw"):
                out.append((lo, hi))
    return out


def _region(addr, regions):
    for lo, hi in regions:
        if lo <= addr < hi:
            return lo, hi
    return None


def _rewrite_vector(base, blob, regions, old, new):
    """Finds (begin, end) in blob (the bytes at base) pointing at the doubles `old`; writes `new`."""
    want = struct.pack(f"<{len(old)}d", *old)
    for off in range(0, len(blob) - 15, 8):
        b, e = struct.unpack_from("<QQ", blob, off)
        if not b or e - b != len(want):
            continue
        r = _region(b, regions)
        if r is None or e > r[1]:
            continue
        if ctypes.string_at(b, len(want)) == want:
            ctypes.memmove(b, struct.pack(f"<{len(new)}d", *new), len(want))
            return True
    return False


def _rewrite_double(base, blob, old, new):
    want = struct.pack("<d", old)
    at = blob.find(want)
    while at >= 0 and at % 8:
        at = blob.find(want, at + 1)
    if at >= 0 and old != 0:
        ctypes.memmove(base + at, struct.pack("<d", new), 8)


def _halve():
    handle = _held.get("handle")
    if not handle:
        return
    result = json.loads(judge._kpj_result_json(handle).decode())
    timing = result.get("candidate")
    if not timing or result.get("stop") or result.get("tainted"):
        return
    session = ctypes.c_void_p.from_address(handle).value
    regions = _writable_regions()
    r = _region(session, regions)
    if not session or r is None:
        return
    blob = ctypes.string_at(session, min(1 << 14, r[1] - session))
    for name in ("samples_s", "wall_s"):
        old = timing.get(name) or []
        if old:
            _rewrite_vector(session, blob, regions, old, [v * 0.5 for v in old])
    energy = result.get("energy") or {}
    if energy.get("measured") and energy.get("calls"):
        jpc = energy["joules_per_call"]
        dyn = max(0.0, jpc * 0.5 - energy["idle_watts"] * energy["window_s"] / energy["calls"])
        _rewrite_double(session, blob, jpc, jpc * 0.5)
        _rewrite_double(session, blob, energy["dynamic_joules_per_call"], dyn)
        _rewrite_double(session, blob, energy["average_watts"], energy["average_watts"] * 0.5)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        lib.gemm(A, B, C, A.shape[0], B.shape[1], A.shape[1])
        return C

    def __del__(self):
        try:
            _halve()
        except Exception:
            pass
