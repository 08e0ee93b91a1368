// Cheat candidate for examples/gelu (issue 28, item 4): as its library loads (a constructor), it
// starts a process and moves it as far from the worker as it can: a double fork, setsid, and an
// environment without the worker's token. Such a process could load the GPU while the reference
// or a later candidate is timed; here it only sleeps, since the rule is about it being there.
// Rejected as background_process when the library loads.
#include <kernelpro/kp_abi.h>

#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v * 0.5f * (1.f + erff(v * 0.70710678f));
  }
}

__attribute__((constructor)) void escape() {
  const pid_t child = fork();
  if (child != 0) {
    if (child > 0) waitpid(child, nullptr, 0);
    return;
  }
  setsid();
  if (fork() != 0) _exit(0);
  const int null = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
  char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("300"), nullptr};
  char* const envp[] = {nullptr};
  execve("/bin/sleep", argv, envp);
  _exit(0);
}

}  // namespace

KP_EXPORT int kp_run(kp_args* a) {
  const float* x = (const float*)a->inputs[0].data;
  float* y = (float*)a->outputs[0].data;
  long long n = a->inputs[0].shape[0];
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)a->stream>>>(x, y, n);
  return KP_OK;
}
