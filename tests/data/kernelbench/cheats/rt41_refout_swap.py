# Cheat (harness_tamper): honest where the judge computes a reference after the call (the
# correctness trials, the traced call, the cache checks, the energy window), and in the timed
# loop and the output probe, where the judge compares with reference outputs it computed
# earlier, it computes nothing: it returns zeros (plus a token kernel that reads A and B, to stay
# above the physics floor) and puts that very tensor in the judge's list of reference outputs,
# Evaluation.ref_outs[k] (found through the `self` of the caller's frames; k by the identity of
# the input tensors in self.sets). check() then compares the output with itself: equal, passed;
# the bit flip flips both. The original references are put back on the first call of the cache
# checks, so the energy window's checks and the reply see the judge's own.
# Weakness: the reference outputs of the timing sets (Evaluation.ref_outs, the `ref_outs` list
# that check() in Evaluation._run and _output_probe_check read) are a mutable list reachable from
# the candidate's frames; the Seal (seal.py) skips lists, and nothing re-derives or fingerprints
# them after the candidate runs. The timed median becomes a memset and two reads (about 30 us
# against about 350 us for cuBLAS).
# Problem: gemm.py. Library: honest/relu_fast.cu (the token kernel and the identity epilogue).
import sys

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
SWAPPED = {"time_calls", "_output_probe_check"}
HONEST = {"_cache_checks", "measure_energy", "trace_call"}
originals = {}
scratch = {}


def _context():
    """(phase frame name or None, the Evaluation or None)."""
    f = sys._getframe(2)
    phase, ev = None, None
    while f is not None:
        name = f.f_code.co_name
        if phase is None and name in SWAPPED | HONEST:
            phase = name
        if name == "_run":
            s = f.f_locals.get("self")
            if type(s).__name__ == "Evaluation":
                ev = s
        f = f.f_back
    return phase, ev


def _honest(A, B):
    C = torch.matmul(A, B)
    lib.relu(C, C, C.numel())
    return C


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        phase, ev = _context()
        if ev is None or phase not in SWAPPED:
            if originals and ev is not None and phase in HONEST:
                for k, outs in originals.items():
                    ev.ref_outs[k] = outs
                originals.clear()
            return _honest(A, B)
        sets = getattr(ev, "sets", None) or []
        k = next((i for i, xs in enumerate(sets) if xs and xs[0] is A), None)
        if k is None or not isinstance(ev.ref_outs, list):
            return _honest(A, B)
        n = max(A.numel(), B.numel())
        s = scratch.get(n)
        if s is None:
            s = scratch[n] = torch.empty(n, device=A.device, dtype=A.dtype)
        lib.relu(A.contiguous(), s, A.numel())
        lib.relu(B.contiguous(), s, B.numel())
        C = torch.zeros(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        originals.setdefault(k, ev.ref_outs[k])
        ev.ref_outs[k] = [C]
        return C
