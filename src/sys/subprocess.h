// kp::sys: starting and supervising child processes. Every child process of kernelpro goes
// through this module, so timeouts, resource limits, output capture and cleanup are uniform.
//
// Process groups: each child starts in a new process group whose id is the child's pid. Timeouts
// and kill() send SIGKILL to the whole group, so grandchildren die with the child (unless they
// moved themselves to another group or session). Whenever this module reaps a child it first
// sends SIGKILL to what is left of its group: nothing started here outlives the call that reaped
// it (run(), Process::kill(), Process::wait() or ~Process()).
//
// Signals: the first call to run() or Process::spawn() sets SIGPIPE to SIG_IGN process-wide, so
// a write to a dead child fails with EPIPE instead of killing kernelpro. Children start with
// default signal dispositions and an empty signal mask.
//
// File descriptors: a child gets exactly fds 0, 1, 2 (and 3, 4 for Process); every other fd of
// kernelpro is closed in the child.
//
// Thread safety: run() and Process::spawn() may be called concurrently from any threads. A
// Process object is not thread-safe: use it from one thread at a time. Do not reap children of
// this module elsewhere (waitpid(-1, ...) or SIGCHLD set to SIG_IGN).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace kp::sys {

// Resource limits applied in the child (setrlimit, soft and hard limit alike) before exec. A limit
// above kernelpro's own hard limit is lowered to it. Unset fields leave the limit inherited.
struct Rlimits {
  std::optional<uint64_t> cpu_seconds{};          // RLIMIT_CPU: CPU seconds (SIGKILL past it)
  std::optional<uint64_t> file_size_bytes{};      // RLIMIT_FSIZE: largest file written (SIGXFSZ)
  std::optional<uint64_t> open_files{};           // RLIMIT_NOFILE: fds per process
  std::optional<uint64_t> address_space_bytes{};  // RLIMIT_AS: virtual memory
  uint64_t core_bytes = 0;                        // RLIMIT_CORE: 0 means no core dumps
};

// What to run and how. Every field has a default, so designated initializers may name any subset:
// Command{.argv = {"nvcc", "--version"}, .timeout = std::chrono::seconds(10)}.
struct Command {
  // argv[0] is the program. Without a '/', it is searched in the PATH the child will see (after
  // env_set / env_unset; /usr/bin:/bin when unset); with a '/', it is used as given (relative to
  // cwd when relative). Must be non-empty.
  std::vector<std::string> argv{};
  std::string cwd{};  // the child's working directory; empty: inherit kernelpro's
  // The child's environment is kernelpro's, minus env_unset, plus env_set (a later pair for the
  // same name wins). Names must be non-empty and contain no '='. When cwd is set, an inherited
  // PWD is dropped (it would name the wrong directory).
  std::vector<std::pair<std::string, std::string>> env_set{};
  std::vector<std::string> env_unset{};
  // run() only: after this much wall time, SIGKILL the whole group. Unset: no limit.
  std::optional<std::chrono::milliseconds> timeout{};
  Rlimits limits{};
  // run() only: written to the child's stdin, which is then closed. Empty: stdin is /dev/null.
  // Process::spawn() rejects a non-empty stdin_data (its stdin is always /dev/null).
  std::string stdin_data{};
  // Non-empty: the stream is written to this file (created or truncated, mode 0644; a relative
  // path is relative to kernelpro's working directory, not cwd) instead of being captured. Both
  // may name the same file. For Process, empty means /dev/null.
  std::string stdout_path{};
  std::string stderr_path{};
  // run() only: the most bytes kept per captured stream. Beyond it the first half and the last
  // half are kept, joined by a line "[kernelpro: N bytes omitted]", and output_truncated is set.
  size_t max_capture_bytes = 8 << 20;
};

// How a child ended.
struct Completed {
  int exit_code = -1;         // the exit status; valid when signal == 0 and !timed_out
  int signal = 0;             // the signal that ended the child (SIGKILL after a timeout), or 0
  bool timed_out = false;     // kernelpro killed the child because it ran past its limit
  std::string stdout_text{};  // run() only: captured output (empty when sent to a file)
  std::string stderr_text{};
  bool output_truncated = false;  // a captured stream exceeded max_capture_bytes
  double wall_seconds = 0;        // steady-clock time from start to reaping

  // True when the child exited with status 0, no signal and no timeout.
  bool success() const;
  // One phrase for messages: "exited with status 1", "killed by signal 11 (SIGSEGV)",
  // "timed out after 2.0 s".
  std::string describe() const;
};

// Runs a command to completion, capturing stdout and stderr (read concurrently: no deadlock on
// large outputs) and feeding stdin_data. Once the child has exited, output still held open by a
// grandchild is drained for at most ~100 ms, then the group is killed. On timeout the group is
// killed at once, without waiting for EOF on the pipes.
// Returns Completed whenever the child started, whatever its outcome. Returns an error only when
// it could not be started: kInvalidInput (empty argv, bad variable name), kNotFound (program not
// found — the message names it and says to install it or fix PATH — or cwd missing), kIo
// (an output file could not be opened, fork or exec failed otherwise).
Result<Completed> run(const Command& command);

// A long-lived child (the GPU worker) that speaks lines on two dedicated pipes: in the child, fd 3
// is readable (requests) and fd 4 writable (replies). Its stdin is /dev/null and its stdout and
// stderr go to the files named in the Command (or /dev/null), since it runs untrusted code that
// may print. Command::timeout and max_capture_bytes are not used.
// Not thread-safe; the destructor kills the group if the child was not reaped yet.
class Process {
 public:
  // Starts the child. Errors as for run(), plus kInvalidInput for a non-empty stdin_data.
  static Result<std::unique_ptr<Process>> spawn(const Command& command);

  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  // Writes line + '\n' to the child's fd 3. The line must not contain '\n' (kInvalidInput).
  // Blocks while the pipe is full and the child alive, up to timeout when one is given.
  // Errors: kProtocol when the child has exited, was reaped, or closed fd 3; kTimeout (part of
  // the line may have been written: the channel is then unusable, kill the process).
  Status send_line(std::string_view line, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Returns the next line from the child's fd 4, without its '\n'. Replies are buffered, so
  // lines written just before the child exited are still returned.
  // Errors: kTimeout when no complete line arrived within timeout (a partial line stays buffered
  // for the next call); kProtocol on EOF, when the child has exited (the message says how; on EOF
  // it waits up to ~100 ms to learn that), was reaped, or a line exceeds 64 MiB.
  Result<std::string> read_line(std::chrono::milliseconds timeout);

  // True while the child has not exited. Non-blocking; does not reap.
  bool running();

  // Sends SIGKILL to the whole group, reaps the child, closes the pipes and returns how it ended
  // (timed_out = false; the signal is SIGKILL unless it had exited already). Once the child is
  // reaped, kill() and wait() return the same Completed again.
  Completed kill();

  // Closes fd 3 (the child sees EOF on requests) and waits up to timeout for the child to exit;
  // then kills the group (setting timed_out when the child was still running), reaps and returns
  // how it ended.
  Completed wait(std::chrono::milliseconds timeout);

  // The child's pid, which is also its process group id. Stays the same after reaping.
  int pid() const { return pid_; }

 private:
  Process() = default;
  Completed finish(bool timed_out);

  pid_t pid_ = -1;
  int request_fd_ = -1;  // our end of the child's fd 3
  int reply_fd_ = -1;    // our end of the child's fd 4
  int pidfd_ = -1;       // readable once the child exits; -1 where the kernel lacks pidfd_open
  std::string reply_buffer_;
  std::chrono::steady_clock::time_point start_;
  std::optional<Completed> completed_;
};

// Processes that escaped a child's group (setsid, a double fork) still carry the environment the
// child was started with. A child started with a variable `name` set to a value no one else uses
// (a random token) can thus be ended with everything it spawned, wherever they moved.
//
// Sends SIGKILL to every process of this user whose initial environment (/proc/PID/environ) has
// name=value, except this process; returns how many were signalled. A process that replaced its
// environment when it exec'd is not found.
int kill_tagged(std::string_view name, std::string_view value);

// A fresh random token for kill_tagged (32 hex digits).
std::string random_token();

// What kill_tagged misses (a process that also cleared its environment) is still a descendant
// once the worker is a child subreaper: an orphan below it is re-parented to it, not to init, so
// the parent links of /proc reach every process it started however far that one moved.
//
// prctl(PR_SET_CHILD_SUBREAPER); false where it fails.
bool become_subreaper();
// The live (not zombie) processes below `root` (this process when 0): pid -> command name.
std::map<int, std::string> live_descendants(int root = 0);
// SIGKILL to every live descendant of `root` not in `keep`, scanning again while new ones
// appear (one may fork between the scan and the signal); how many were signalled.
int kill_descendants(int root = 0, const std::set<int>& keep = {});
// "pid 12 (sleep), pid 40 (python3)" (six at most, then how many more), for a reason.
std::string describe_processes(const std::map<int, std::string>& processes);

}  // namespace kp::sys
