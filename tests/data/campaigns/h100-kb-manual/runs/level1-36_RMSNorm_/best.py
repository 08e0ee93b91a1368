import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        batch, features = x.shape[0], x.shape[1]
        inner = x.numel() // (batch * features) if batch * features > 0 else 0
        lib.rms_norm(x, y, batch, features, inner, float(self.eps))
        return y
