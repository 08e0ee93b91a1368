import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32 or not x.is_cuda:
            rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
            return x / rms
        x = x.contiguous()
        y = torch.empty_like(x)
        if x.numel() == 0:
            return y
        B = x.shape[0]
        C = x.shape[1]
        S = x.numel() // (B * C)
        lib.rms_norm(x, y, B, C, S, float(self.eps))
        return y
