// e2e tier: a worker (kp-worker and the KernelBench worker) never outlives the process that
// started it, however that process ends (worker/orphan_watch.h). No GPU needed: the watch runs
// from the worker's start, before any request.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sys/subprocess.h"
#include "tests/support/paths.h"
#include "verdict/protocol.h"

namespace kp {
namespace {

using namespace std::chrono_literals;

// True once `pid` is gone or a zombie (a zombie holds no memory and no CUDA context; the
// reaper of an orphan in a container may be slow to collect it).
bool gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || (paren + 2 < text.size() && text[paren + 2] == 'Z');
}

bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (gone(pid)) return true;
    std::this_thread::sleep_for(20ms);
  }
  return gone(pid);
}

std::vector<std::vector<std::string>> worker_commands() {
  return {{testing::worker_binary().string()}, {"python3", "-m", "kernelpro_torch.worker"}};
}

sys::Command worker_command(const std::vector<std::string>& argv) {
  sys::Command c;
  c.argv = argv;
  c.env_set = {{"PYTHONPATH", (testing::source_dir() / "python").string()}};
  return c;
}

// Forks an orchestrator that starts the worker (without KP_ORCHESTRATOR_PID: the pipe and the
// parent are what the worker watches), reports the worker's pid, then waits to be killed.
// Returns {orchestrator pid, worker pid}.
std::pair<pid_t, pid_t> start_orchestrator(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) return {-1, -1};
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    unsetenv(eval::kOrchestratorPidEnv);
    auto p = sys::Process::spawn(worker_command(argv));
    pid_t w = p.ok() ? (*p)->pid() : -1;
    if (write(fds[1], &w, sizeof w) != sizeof w) _exit(1);
    while (true) pause();  // SIGKILL ends it, with the worker's request pipe still open
  }
  close(fds[1]);
  pid_t worker = -1;
  if (read(fds[0], &worker, sizeof worker) != sizeof worker) worker = -1;
  close(fds[0]);
  return {child, worker};
}

// An idle worker also sees EOF on its request pipe; the two tests after this one show the watch
// itself, with the pipe open, and the GPU test at the end a worker busy in a kernel.
TEST(WorkerLifetimeE2e, EachWorkerExitsWithinTwoSecondsOfItsOrchestratorsSigkill) {
  for (const auto& argv : worker_commands()) {
    SCOPED_TRACE(argv.back());
    auto [orchestrator, worker] = start_orchestrator(argv);
    ASSERT_GT(orchestrator, 0);
    ASSERT_GT(worker, 0) << "the worker did not start";
    std::this_thread::sleep_for(300ms);  // the worker is up and waiting for a request
    ASSERT_FALSE(gone(worker)) << "the worker exited on its own";
    kill(orchestrator, SIGKILL);
    waitpid(orchestrator, nullptr, 0);
    EXPECT_TRUE(gone_within(worker, 2000ms)) << "worker " << worker << " outlived the process that started it";
    if (!gone(worker)) kill(worker, SIGKILL);
  }
}

TEST(WorkerLifetimeE2e, EachWorkerExitsWhenTheOrchestratorNamedInItsEnvironmentExits) {
  // One-shot workers run under ncu or the trace library: their parent is not kernelpro, and
  // kernelpro holds no pipe to them. Here the pipe stays open and the parent alive (this test);
  // only the process named by KP_ORCHESTRATOR_PID ends.
  for (const auto& argv : worker_commands()) {
    SCOPED_TRACE(argv.back());
    sys::Command sleeper;
    sleeper.argv = {"sleep", "600"};
    auto named = sys::Process::spawn(sleeper);
    ASSERT_TRUE(named.ok()) << named.error().message;
    sys::Command c = worker_command(argv);
    c.env_set.push_back({eval::kOrchestratorPidEnv, std::to_string((*named)->pid())});
    auto worker = sys::Process::spawn(c);
    ASSERT_TRUE(worker.ok()) << worker.error().message;
    std::this_thread::sleep_for(300ms);
    ASSERT_TRUE((*worker)->running()) << "the worker exited while the named process lived";
    (*named)->kill();
    const auto t0 = std::chrono::steady_clock::now();
    bool exited = false;
    while (std::chrono::steady_clock::now() - t0 < 2s && !exited) {
      exited = !(*worker)->running();
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(exited) << "the worker outlived the process named by " << eval::kOrchestratorPidEnv;
  }
}

TEST(WorkerLifetimeE2e, AWorkerWhoseOrchestratorIsAlreadyGoneDoesNotStart) {
  for (const auto& argv : worker_commands()) {
    SCOPED_TRACE(argv.back());
    sys::Command sleeper;
    sleeper.argv = {"true"};
    auto done = sys::Process::spawn(sleeper);
    ASSERT_TRUE(done.ok());
    const pid_t dead = (*done)->pid();
    (*done)->wait(5000ms);  // reaped: the pid names no process now
    sys::Command c = worker_command(argv);
    c.env_set.push_back({eval::kOrchestratorPidEnv, std::to_string(dead)});
    auto worker = sys::Process::spawn(c);
    ASSERT_TRUE(worker.ok()) << worker.error().message;
    const auto t0 = std::chrono::steady_clock::now();
    while ((*worker)->running() && std::chrono::steady_clock::now() - t0 < 5s) std::this_thread::sleep_for(20ms);
    EXPECT_FALSE((*worker)->running());
  }
}

// Compute processes on the GPU, as NVML lists them (nvidia-smi); -1 when it cannot say.
int gpu_processes() {
  sys::Command c;
  c.argv = {"nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"};
  c.timeout = 10000ms;
  auto r = sys::run(c);
  if (!r.ok() || r->exit_code != 0) return -1;
  int n = 0;
  for (char ch : r->stdout_text) n += ch == '\n';
  return n;
}

// The worker kernelpro `parent` started (a child whose command line names kp-worker or
// kernelpro_torch.worker), or -1.
pid_t worker_of(pid_t parent) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 4 > text.size()) continue;
    const pid_t ppid = static_cast<pid_t>(std::atol(text.c_str() + close + 4));
    if (ppid != parent) continue;
    std::ifstream cmdline(e.path() / "cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (args.find("kp-worker") != std::string::npos || args.find("kernelpro_torch.worker") != std::string::npos)
      return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

// The fault injection: kill -9 of kernelpro while its worker is busy in a candidate
// (kp-worker: a kernel that never ends; the KernelBench worker: a forward that never returns);
// NVML lists no process of ours within 2 s, and the next evaluation is ok.
void kill_mid_evaluation(const std::vector<std::string>& eval_args, const std::vector<std::string>& next_args) {
  if (auto why = testing::gpu_missing()) GTEST_SKIP() << *why;
  const int before = gpu_processes();
  if (before < 0) GTEST_SKIP() << "nvidia-smi cannot list the GPU's processes here";
  const auto cache = std::filesystem::temp_directory_path() / ("kp-lifetime-" + std::to_string(getpid()));
  sys::Command c;
  c.argv = {testing::kernelpro_binary().string(), "eval"};
  c.argv.insert(c.argv.end(), eval_args.begin(), eval_args.end());
  c.env_set = {{"XDG_CACHE_HOME", cache.string()}};
  auto kp = sys::Process::spawn(c);
  ASSERT_TRUE(kp.ok()) << kp.error().message;
  const pid_t kernelpro = (*kp)->pid();
  // Until the worker holds a context (it has built the candidate and is running it).
  pid_t worker = -1;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < 120s && (worker < 0 || gpu_processes() <= before)) {
    if (worker < 0) worker = worker_of(kernelpro);
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_GT(worker, 0) << "kernelpro started no worker";
  ASSERT_GT(gpu_processes(), before) << "the worker never held the GPU";
  std::this_thread::sleep_for(1500ms);  // inside the candidate's endless kernel now
  kill(kernelpro, SIGKILL);
  (*kp)->wait(5000ms);
  const auto killed = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - killed < 2s && (gpu_processes() > before || !gone(worker)))
    std::this_thread::sleep_for(50ms);
  const double freed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_TRUE(gone(worker)) << "worker " << worker << " outlived kernelpro";
  EXPECT_EQ(gpu_processes(), before) << "a process of ours still holds the GPU " << freed_s << " s after the kill";
  std::printf("the GPU was free %.2f s after kill -9 of kernelpro\n", freed_s);
  if (!gone(worker)) kill(worker, SIGKILL);

  sys::Command next;
  next.argv = {testing::kernelpro_binary().string(), "eval"};
  next.argv.insert(next.argv.end(), next_args.begin(), next_args.end());
  next.env_set = {{"XDG_CACHE_HOME", cache.string()}};
  next.timeout = 300000ms;
  auto r = sys::run(next);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->stdout_text << r->stderr_text;
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
}

TEST(WorkerLifetimeE2e, OnAGpuKillingKernelproMidEvaluationFreesTheGpuWithinTwoSeconds) {
  const std::string gelu = (testing::examples_dir() / "gelu").string();
  kill_mid_evaluation({gelu, (testing::test_data_dir() / "candidates" / "gelu" / "infinite_loop.cu").string()},
                      {gelu, "--no-energy"});
}

TEST(WorkerLifetimeE2e, OnAGpuKillingKernelproMidKernelBenchEvaluationFreesTheGpuWithinTwoSeconds) {
  const auto kb = testing::test_data_dir() / "kernelbench";
  const std::string relu = (kb / "problems" / "relu.py").string();
  kill_mid_evaluation({relu, (kb / "faults" / "endless_forward.py").string()},
                      {relu, (kb / "honest" / "relu_fast.py").string(), "--cu", (kb / "honest" / "relu_fast.cu").string(),
                       "--no-energy"});
}

}  // namespace
}  // namespace kp
