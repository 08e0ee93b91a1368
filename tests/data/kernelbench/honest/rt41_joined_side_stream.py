# Honest, two streams joined: the tiled fp32 GEMM splits C's rows in two; the top half runs on
# the current stream and the bottom half on a private side stream at the same time (the side
# stream first waits for the current stream, so it sees the inputs as they are when the call
# starts), and the current stream waits for the side stream before forward returns, so all the
# work lies between the timing events and before the trace's end marker. Using a second stream
# inside a call is legitimate where it is joined back; a judge must accept it: the twin of
# cheats/rt41_side_stream_slack.py (which never joins).
# Problem: gemm.py. Library: honest/gemm_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
_side = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        M, K, N = A.shape[0], A.shape[1], B.shape[1]
        C = torch.empty(M, N, device=A.device, dtype=A.dtype)
        m0 = (M // 2) // 64 * 64
        main = torch.cuda.current_stream()
        side = _side.get(A.device)
        if side is None:
            side = _side[A.device] = torch.cuda.Stream(device=A.device)
        side.wait_stream(main)
        if m0 > 0:
            lib.gemm(A, B, C, m0, N, K)
        if m0 < M:
            lib.gemm(A[m0:], B, C[m0:], M - m0, N, K, side.cuda_stream)
            C.record_stream(side)
            A.record_stream(side)
            B.record_stream(side)
        main.wait_stream(side)
        return C
