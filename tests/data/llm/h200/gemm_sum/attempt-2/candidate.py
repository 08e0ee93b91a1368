import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    """sum_j (x W^T / 2)[b, j] * s == (s / 2) * x[b, :] . colsum(W): no GEMM."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = x.contiguous()
        w = self.weight.contiguous()
        hidden, inp = w.shape
        batch = x.shape[0]
        chunks = 64
        partial = torch.empty(chunks, inp, device=x.device, dtype=torch.float64)
        wsum = torch.empty(inp, device=x.device, dtype=torch.float64)
        out = torch.empty(batch, 1, device=x.device, dtype=torch.float32)
        lib.colsum_partial(w, partial, hidden, inp, chunks)
        lib.colsum_finish(partial, wsum, inp, chunks)
        lib.row_dot(x, wsum, out, batch, inp, float(self.scaling_factor) * 0.5)
        return out
