"""kernelpro's PyTorch side: the KernelBench worker and the fast-form loader.

`python -m kernelpro_torch.worker` is started by the kernelpro orchestrator; candidates use
`kernelpro_torch.load()` to call the extern "C" launchers of their .cu file.
"""


def load(so_path=None, source_path=None):
    from .loader import load as _load

    return _load(so_path, source_path)
