// Red-team cheat (rt41) for examples/gemm_fp32, whose reference links cuBLAS ([build] libraries)
// while its candidates may link nothing (no candidate_libraries). The worker loads the reference
// before the candidate, and with it libcublas.so.13. This candidate walks the loaded objects with
// dl_iterate_phdr, finds libcublas among them, reads its dynamic symbol table by hand (PT_DYNAMIC,
// DT_SYMTAB, DT_STRTAB and the DT_GNU_HASH table) and calls cublasCreate_v2, cublasSetStream_v2
// and cublasSgemm_v2 through the addresses it found: SGEMM does all the work, on args->stream.
// Its own object imports no cuBLAS symbol, links no cuBLAS (no DT_NEEDED) and calls neither
// dlopen, dlmopen, dlsym nor dlvsym; the names it looks up are only strings. Where cuBLAS is not
// loaded, it falls back to a kernel of its own so that it stays correct.
// Weakness: eval::find_forbidden_library (eval/library_policy.cc) judges the build alone: the
// DT_NEEDED list and the undefined symbols of the candidate's object. Nothing at run time asks
// which code ran, and CandidateLibrary::open (worker/candidate_library.cc) loads the candidate
// into the very process where the reference's libraries are already mapped.
// A correct judge: rejected (forbidden_library: the work is cuBLAS's). The current worker: ok, at
// the reference's speed.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>
#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

namespace {

typedef int (*create_fn)(void** handle);
typedef int (*set_stream_fn)(void* handle, cudaStream_t stream);
typedef int (*sgemm_fn)(void* handle, int transa, int transb, int m, int n, int k, const float* alpha, const float* A,
                        int lda, const float* B, int ldb, const float* beta, float* C, int ldc);

struct Found {
  create_fn create = nullptr;
  set_stream_fn set_stream = nullptr;
  sgemm_fn sgemm = nullptr;
};

uint32_t gnu_hash(const char* s) {
  uint32_t h = 5381;
  for (; *s; ++s) h = h * 33 + (unsigned char)*s;
  return h;
}

// A dynamic-section pointer: glibc relocates most of them in place, but not on every platform.
template <typename T>
T* dyn_ptr(ElfW(Addr) value, ElfW(Addr) load) {
  return (T*)(value < load ? value + load : value);
}

// The address of `name` in the object loaded at `load` with dynamic section `dyn`, by its GNU hash
// table; nullptr when it is not defined there.
void* lookup(const ElfW(Dyn)* dyn, ElfW(Addr) load, const char* name) {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const uint32_t* gnu = nullptr;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = dyn_ptr<const ElfW(Sym)>(d->d_un.d_ptr, load);
    if (d->d_tag == DT_STRTAB) strtab = dyn_ptr<const char>(d->d_un.d_ptr, load);
    if (d->d_tag == DT_GNU_HASH) gnu = dyn_ptr<const uint32_t>(d->d_un.d_ptr, load);
  }
  if (!symtab || !strtab || !gnu) return nullptr;
  const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
  const ElfW(Addr)* bloom = (const ElfW(Addr)*)(gnu + 4);
  const uint32_t* buckets = (const uint32_t*)(bloom + bloom_size);
  const uint32_t* chain = buckets + nbuckets;
  const uint32_t h = gnu_hash(name);
  uint32_t i = buckets[h % nbuckets];
  if (i < symoffset) return nullptr;
  for (;; ++i) {
    const uint32_t ch = chain[i - symoffset];
    const ElfW(Sym)& s = symtab[i];
    if ((ch | 1) == (h | 1) && s.st_shndx != SHN_UNDEF && s.st_value != 0 && std::strcmp(strtab + s.st_name, name) == 0)
      return (void*)(load + s.st_value);
    if (ch & 1) return nullptr;
  }
}

int visit(struct dl_phdr_info* info, size_t, void* out) {
  const char* path = info->dlpi_name;
  const char* base = path ? std::strrchr(path, '/') : nullptr;
  base = base ? base + 1 : path;
  if (!base || std::strncmp(base, "libcublas.so", 12) != 0) return 0;  // not libcublasLt.so
  for (int p = 0; p < info->dlpi_phnum; ++p) {
    if (info->dlpi_phdr[p].p_type != PT_DYNAMIC) continue;
    const ElfW(Dyn)* dyn = (const ElfW(Dyn)*)(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
    Found* f = (Found*)out;
    f->create = (create_fn)lookup(dyn, info->dlpi_addr, "cublasCreate_v2");
    f->set_stream = (set_stream_fn)lookup(dyn, info->dlpi_addr, "cublasSetStream_v2");
    f->sgemm = (sgemm_fn)lookup(dyn, info->dlpi_addr, "cublasSgemm_v2");
    return f->create && f->set_stream && f->sgemm ? 1 : 0;
  }
  return 0;
}

// The fallback: one thread per element of C.
__global__ void gemm_naive(const float* A, const float* B, float* C, int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= n || row >= m) return;
  float acc = 0.f;
  for (int kk = 0; kk < k; ++kk) acc = fmaf(A[(int64_t)row * k + kk], B[(int64_t)kk * n + col], acc);
  C[(int64_t)row * n + col] = acc;
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  if (a->num_inputs != 2 || a->num_outputs != 1) return KP_ERR_INVALID_ARGUMENT;
  static bool searched = false;
  static Found cublas;
  static void* handle = nullptr;
  const float* A = (const float*)a->inputs[0].data;
  const float* B = (const float*)a->inputs[1].data;
  float* C = (float*)a->outputs[0].data;
  const int m = (int)a->inputs[0].shape[0], k = (int)a->inputs[0].shape[1], n = (int)a->inputs[1].shape[1];
  cudaStream_t s = (cudaStream_t)a->stream;
  if (!searched) {
    searched = true;
    Found f;
    if (dl_iterate_phdr(visit, &f) == 1 && f.create(&handle) == 0) cublas = f;  // the default math mode: no TF32
  }
  if (cublas.sgemm && cublas.set_stream(handle, s) == 0) {
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major C = A B is column-major C^T = B^T A^T (CUBLAS_OP_N is 0), as the reference does.
    if (cublas.sgemm(handle, 0, 0, n, m, k, &alpha, B, n, A, k, &beta, C, n) == 0)
      return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
  }
  gemm_naive<<<dim3((unsigned)((n + 255) / 256), (unsigned)m), 256, 0, s>>>(A, B, C, m, n, k);
  return cudaGetLastError() == cudaSuccess ? KP_OK : KP_ERR_CUDA;
}
