# Cheat (side_stream): the last third of C's rows goes to a private side stream that starts when
# the current stream's two thirds are done (an event) and is never joined back, so the timing
# events on the current stream see two thirds of the GEMM. The share is sized for the wall
# check: with the kernel's time T and the host's launch gap g (in both measurements),
# the event sample is about g + 2T/3 and the wall time about g + T + the sync, and
# wall_ratio 1.5 x (g + 2T/3) >= g + T for any T, so the check (wall > 1.5 median + 100 us +
# 50 us) never fires, at any problem size: a 1.5x speedup for free. The traced call is the one
# place where unjoined work is looked at (a kernel on another stream still running when the end
# marker starts), so while the PyTorch profiler is on the side stream is joined back before
# returning. The harness's device-wide syncs make every checked output whole.
# Weakness: Evaluation._run's wall test (wall_ratio, wall_slack_us in eval_defaults.json) lets
# event time be 2/3 of the wall time, and trace_call's escaped-work test looks at one call
# (whose profiler the candidate can see: torch.autograd._profiler_enabled()).
# Problem: gemm.py. Library: honest/gemm_fast.cu.
import sys

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
SHARE = 1.0 / 3.0
side = {}


def _profiled():
    try:
        if torch.autograd._profiler_enabled() or torch.autograd.profiler._is_profiler_enabled:
            return True
    except Exception:
        pass
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "trace_call":
            return True
        f = f.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        M, K, N = A.shape[0], A.shape[1], B.shape[1]
        C = torch.empty(M, N, device=A.device, dtype=A.dtype)
        m0 = M - int(M * SHARE) // 64 * 64  # whole 64-row tiles on the side
        main = torch.cuda.current_stream()
        lib.gemm(A, B, C, m0, N, K)  # rows [0, m0) on the current stream
        if m0 == M:
            return C
        s = side.get(A.device)
        if s is None:
            s = side[A.device] = torch.cuda.Stream(device=A.device)
        done = torch.cuda.Event()
        done.record(main)
        s.wait_event(done)
        Cs, As = C[m0:], A[m0:]
        lib.gemm(As, B, Cs, M - m0, N, K, s.cuda_stream)
        C.record_stream(s)
        A.record_stream(s)
        B.record_stream(s)
        if _profiled():
            main.wait_stream(s)
        return C
