"""The fast candidate form: `extern "C"` launchers in a .cu file, called from Python.

kernelpro builds the .cu with its own nvcc pipeline and cache (about a second, against about a
minute for `load_inline`, which compiles the torch headers). The candidate's Python side calls

    lib = kernelpro_torch.load()          # the library built from the candidate's .cu
    lib.gelu(x, y, x.numel())             # stream filled in when the launcher takes one

The launchers' C signatures are read from the source, so each argument is checked before the
call: a tensor must be on the current CUDA device, contiguous, and of the element type the
pointer names; a scalar must fit its C type. A trailing `cudaStream_t` parameter that the
caller leaves out gets PyTorch's current stream, so the launch is ordered with everything else
and timed by events on that stream. A launcher returning int (or cudaError_t) that returns
non-zero raises RuntimeError.
"""

import ctypes
import os
import re

_library_path = None     # set by the worker before the candidate is loaded
_library_source = None

# Pointer element types and the torch dtypes they accept.
_POINTEE = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "__half": "float16",
    "__nv_bfloat16": "bfloat16",
    "nv_bfloat16": "bfloat16",
    "int8_t": "int8",
    "signed char": "int8",
    "uint8_t": "uint8",
    "unsigned char": "uint8",
    "int16_t": "int16",
    "short": "int16",
    "int": "int32",
    "int32_t": "int32",
    "int64_t": "int64",
    "long long": "int64",
    "long": "int64",
    "bool": "bool",
}
# void* accepts any tensor.

_SCALAR = {
    "int": ctypes.c_int32,
    "int32_t": ctypes.c_int32,
    "unsigned": ctypes.c_uint32,
    "unsigned int": ctypes.c_uint32,
    "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64,
    "long long": ctypes.c_int64,
    "long": ctypes.c_int64,
    "size_t": ctypes.c_size_t,
    "uint64_t": ctypes.c_uint64,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "bool": ctypes.c_bool,
}

_STREAM_TYPES = {"cudaStream_t", "CUstream"}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")


class Param:
    def __init__(self, ctype, name, pointer):
        self.ctype = ctype      # base type, qualifiers removed ("float", "cudaStream_t")
        self.name = name
        self.pointer = pointer

    def describe(self):
        return f"{self.ctype}{'*' if self.pointer else ''} {self.name}".strip()


class Signature:
    def __init__(self, name, returns, params):
        self.name = name
        self.returns = returns
        self.params = params

    def describe(self):
        return f"{self.returns} {self.name}({', '.join(p.describe() for p in self.params)})"


def _strip_comments(src):
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", " ", src)


_DECL = re.compile(
    r'extern\s+"C"\s+((?:(?:__host__|KP_EXPORT|static|inline|__attribute__\s*\(\(.*?\)\))\s+)*)'
    r"([A-Za-z_][\w\s]*?\**)\s*\b([A-Za-z_]\w*)\s*\(([^)]*)\)\s*\{",
    re.S,
)


def _parse_param(text, index, fn):
    text = " ".join(text.split())
    if not text or text == "void":
        return None
    pointer = text.count("*")
    if pointer > 1:
        raise ValueError(f"{fn}: parameter {index + 1} '{text}' is a pointer to pointer; pass flat buffers")
    m = re.match(r"^(.*?)[\s\*]*\b([A-Za-z_]\w*)$", text.replace("*", " * "))
    if not m or not m.group(1).strip():
        base, name = text.replace("*", " ").strip(), f"arg{index}"
    else:
        base, name = m.group(1), m.group(2)
    base = " ".join(_QUALIFIERS.sub(" ", base.replace("*", " ")).split())
    return Param(base, name, pointer == 1)


def parse_launchers(source):
    """The `extern "C"` host functions of a .cu source, by name. __global__ kernels are skipped."""
    out = {}
    for m in _DECL.finditer(_strip_comments(source)):
        attrs, returns, name, params = m.group(1), " ".join(m.group(2).split()), m.group(3), m.group(4)
        if "__global__" in returns or "__global__" in attrs or "__device__" in returns:
            continue
        returns = _QUALIFIERS.sub(" ", returns).strip()
        parsed = []
        for i, p in enumerate(params.split(",")):
            q = _parse_param(p, i, name)
            if q is not None:
                parsed.append(q)
        out[name] = Signature(name, " ".join(returns.split()), parsed)
    return out


class Launcher:
    def __init__(self, fn, sig):
        self._fn = fn
        self.signature = sig
        self._takes_stream = bool(sig.params) and sig.params[-1].ctype in _STREAM_TYPES and not sig.params[-1].pointer
        fn.restype = ctypes.c_int if sig.returns in ("int", "cudaError_t", "int32_t") else None
        argtypes = []
        for p in sig.params:
            if p.pointer or p.ctype in _STREAM_TYPES:
                argtypes.append(ctypes.c_void_p)
            elif p.ctype in _SCALAR:
                argtypes.append(_SCALAR[p.ctype])
            else:
                raise TypeError(
                    f"{sig.name}: parameter '{p.describe()}' has a type the loader cannot pass; use pointers "
                    f"to {', '.join(sorted(set(_POINTEE)))}, void*, scalars ({', '.join(sorted(_SCALAR))}) "
                    "or a trailing cudaStream_t"
                )
        fn.argtypes = argtypes

    def __call__(self, *args):
        import torch

        sig = self.signature
        params = sig.params
        if self._takes_stream and len(args) == len(params) - 1:
            args = args + (torch.cuda.current_stream().cuda_stream,)
        if len(args) != len(params):
            raise TypeError(f"{sig.name} takes {len(params)} arguments ({sig.describe()}), got {len(args)}")
        device = torch.cuda.current_device()
        converted = []
        for i, (p, a) in enumerate(zip(params, args)):
            where = f"{sig.name} argument {i + 1} ('{p.describe()}')"
            if p.pointer:
                if not isinstance(a, torch.Tensor):
                    raise TypeError(f"{where}: expected a CUDA tensor, got {type(a).__name__}")
                if not a.is_cuda or a.device.index != device:
                    raise ValueError(f"{where}: the tensor is on {a.device}, not cuda:{device}; move it with .cuda()")
                want = getattr(torch, _POINTEE[p.ctype]) if p.ctype in _POINTEE else None
                if p.ctype != "void" and want is None:
                    raise TypeError(f"{where}: the loader does not know the element type '{p.ctype}'")
                if want is not None and a.dtype != want:
                    raise TypeError(f"{where}: the tensor is {a.dtype}, the pointer wants {want}; convert it or fix the signature")
                if not a.is_contiguous():
                    raise ValueError(f"{where}: the tensor is not contiguous; call .contiguous() first")
                converted.append(a.data_ptr())
            elif p.ctype in _STREAM_TYPES:
                converted.append(int(a) if not isinstance(a, torch.cuda.Stream) else a.cuda_stream)
            else:
                if isinstance(a, torch.Tensor):
                    if a.numel() != 1:
                        raise TypeError(f"{where}: expected a scalar, got a tensor of shape {tuple(a.shape)}")
                    a = a.item()
                if p.ctype in ("float", "double"):
                    converted.append(float(a))
                elif p.ctype == "bool":
                    converted.append(bool(a))
                else:
                    converted.append(int(a))
        rc = self._fn(*converted)
        if self._fn.restype is not None and rc != 0:
            raise RuntimeError(f"{sig.name} returned {rc}")
        return None


class Library:
    """A candidate's built .cu: one attribute per `extern "C"` launcher."""

    def __init__(self, so_path, source_path):
        with open(source_path, encoding="utf-8", errors="replace") as f:
            self._signatures = parse_launchers(f.read())
        if not self._signatures:
            raise ImportError(
                f"{source_path} declares no extern \"C\" host function; write launchers like "
                'extern "C" void gelu(const float* x, float* y, int64_t n, cudaStream_t stream) { ... }'
            )
        self._lib = ctypes.CDLL(os.path.abspath(so_path), mode=ctypes.RTLD_LOCAL)
        self.path = so_path
        self._launchers = {}
        for name, sig in self._signatures.items():
            try:
                fn = getattr(self._lib, name)
            except AttributeError:
                raise ImportError(f"{name} is declared extern \"C\" in {source_path} but {so_path} does not export it")
            self._launchers[name] = Launcher(fn, sig)

    def __getattr__(self, name):
        launchers = self.__dict__.get("_launchers", {})
        if name in launchers:
            return launchers[name]
        raise AttributeError(f"no launcher '{name}'; the library has {', '.join(sorted(launchers))}")

    def __dir__(self):
        return sorted(self._launchers)


def load(so_path=None, source_path=None):
    """The candidate's library. Without arguments: the one kernelpro built for this evaluation."""
    so_path = so_path or _library_path
    source_path = source_path or _library_source
    if not so_path or not source_path:
        raise ImportError(
            "kernelpro_torch.load(): no library for this candidate; pass the .cu with --cu (or put NAME.cu beside "
            "NAME.py) so kernelpro builds it, or call load(so_path, source_path)"
        )
    return Library(so_path, source_path)
