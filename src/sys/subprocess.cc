#include "sys/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <mutex>

extern char** environ;

namespace kp::sys {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kFirstFreeFd = 5;  // 0-2 stdio, 3-4 the Process channel
constexpr milliseconds kDrainAfterExit{100};
constexpr int kPollSliceMs = 10;  // how often to check for exit without a pidfd
constexpr size_t kChunk = 64 * 1024;
constexpr size_t kMaxLineBytes = 64u << 20;

std::string errno_text(int err) {
  char buf[256];
  return strerror_r(err, buf, sizeof buf);  // GNU variant: returns the message
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "unknown signal";
}

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read, write;
};

Error io_error(const std::string& what, int err) {
  return make_error(ErrorCode::kIo, what + ": " + errno_text(err));
}

// Moves fd to a number >= kFirstFreeFd (close-on-exec), so that dup2 into 0..4 in the child can
// never clobber another source fd.
Result<Fd> lift(Fd fd) {
  if (fd.get() >= kFirstFreeFd) return fd;
  int moved = fcntl(fd.get(), F_DUPFD_CLOEXEC, kFirstFreeFd);
  if (moved < 0) return io_error("fcntl(F_DUPFD_CLOEXEC)", errno);
  return Fd(moved);
}

Result<Pipe> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return io_error("cannot create a pipe", errno);
  Fd read(fds[0]), write(fds[1]);
  KP_TRY(Fd r, lift(std::move(read)));
  KP_TRY(Fd w, lift(std::move(write)));
  return Pipe{std::move(r), std::move(w)};
}

Result<Fd> open_fd(const std::string& path, int flags, const char* purpose) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot open '" + path + "' " + purpose, errno);
  return lift(Fd(fd));
}

void set_nonblocking(const Fd& fd) { fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) | O_NONBLOCK); }

// The child's stdout and stderr: the named files, or else /dev/null (null_default) or none.
Status open_outputs(const Command& command, bool null_default, Fd* out, Fd* err) {
  const std::string out_path =
      command.stdout_path.empty() && null_default ? "/dev/null" : command.stdout_path;
  const std::string err_path =
      command.stderr_path.empty() && null_default ? "/dev/null" : command.stderr_path;
  constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC;
  if (!out_path.empty()) {
    KP_TRY(*out, open_fd(out_path, kFlags, "for the child's stdout"));
  }
  if (!err_path.empty() && err_path == out_path) {
    int dup = fcntl(out->get(), F_DUPFD_CLOEXEC, kFirstFreeFd);
    if (dup < 0) return io_error("fcntl(F_DUPFD_CLOEXEC)", errno);
    *err = Fd(dup);
  } else if (!err_path.empty()) {
    KP_TRY(*err, open_fd(err_path, kFlags, "for the child's stderr"));
  }
  return ok_status();
}

void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = SIG_IGN;
    sigemptyset(&action.sa_mask);
    sigaction(SIGPIPE, &action, nullptr);
  });
}

Fd open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // close-on-exec by definition
  if (fd >= 0) return Fd(fd);
#endif
  (void)pid;
  return Fd();
}

// True once the child has exited; does not reap it, so its pid (and group id) stays reserved.
bool peek_exit(pid_t pid, siginfo_t* info) {
  siginfo_t local{};
  if (!info) info = &local;
  info->si_pid = 0;
  while (true) {
    if (waitid(P_PID, pid, info, WEXITED | WNOHANG | WNOWAIT) == 0) return info->si_pid == pid;
    if (errno != EINTR) return true;  // ECHILD: reaped elsewhere; treat as gone
  }
}

// Kills what is left of the group, reaps the child and fills in how it ended.
void kill_and_reap(pid_t pid, Completed* completed) {
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return;  // ECHILD: reaped elsewhere; how it ended is unknown
  }
  if (WIFEXITED(status)) completed->exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) completed->signal = WTERMSIG(status);
}

// "exited with status 1", "was killed by signal 9 (SIGKILL)".
std::string how_it_ended(const siginfo_t& info) {
  Completed completed;
  if (info.si_code == CLD_EXITED)
    completed.exit_code = info.si_status;
  else
    completed.signal = info.si_status;
  return (completed.signal ? "was " : "") + completed.describe();
}

int poll_timeout_ms(std::optional<Clock::time_point> deadline, bool have_pidfd) {
  int ms = -1;
  if (deadline) {
    auto left = std::chrono::ceil<milliseconds>(*deadline - Clock::now()).count();
    ms = static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
  }
  if (!have_pidfd) ms = ms < 0 ? kPollSliceMs : std::min(ms, kPollSliceMs);
  return ms;
}

// Waits until the child has exited (without reaping it) or the deadline passes; true if it exited.
bool wait_exit(pid_t pid, int pidfd, Clock::time_point deadline, siginfo_t* info) {
  while (!peek_exit(pid, info)) {
    if (Clock::now() >= deadline) return false;
    pollfd polled{pidfd, POLLIN, 0};
    poll(&polled, pidfd >= 0 ? 1 : 0, poll_timeout_ms(deadline, pidfd >= 0));
  }
  return true;
}

// Everything the child needs, prepared before fork: after fork only async-signal-safe calls.
struct ChildSetup {
  std::vector<std::string> programs;  // candidate paths for argv[0], tried in order
  std::string search_path;            // the PATH searched, for messages
  std::vector<std::string> env;
  std::vector<std::pair<int, rlimit>> limits;
  std::vector<char*> argv, envp;
  std::vector<const char*> program_ptrs;
  const char* cwd = nullptr;
  int fds[5] = {-1, -1, -1, -1, -1};  // source of the child's fd 0..4; -1: closed
};

enum Stage : int { kStageSetup, kStageChdir, kStageRlimit, kStageExec };
struct ChildFailure {
  int stage;
  int err;
};

Status prepare(const Command& command, ChildSetup* setup) {
  if (command.argv.empty() || command.argv[0].empty()) {
    return make_error(ErrorCode::kInvalidInput, "cannot start a child process: the command is empty");
  }
  auto valid_name = [](const std::string& name) {
    return !name.empty() && name.find('=') == std::string::npos;
  };
  for (const auto& [name, value] : command.env_set) {
    if (!valid_name(name))
      return make_error(ErrorCode::kInvalidInput, "invalid environment variable name '" + name + "'");
  }
  for (const auto& name : command.env_unset) {
    if (!valid_name(name))
      return make_error(ErrorCode::kInvalidInput, "invalid environment variable name '" + name + "'");
  }

  auto replaced = [&](std::string_view name) {
    if (!command.cwd.empty() && name == "PWD") return true;
    for (const auto& unset : command.env_unset)
      if (unset == name) return true;
    for (const auto& set : command.env_set)
      if (set.first == name) return true;
    return false;
  };
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    if (!replaced(text.substr(0, text.find('=')))) setup->env.emplace_back(text);
  }
  for (size_t i = 0; i < command.env_set.size(); ++i) {
    const auto& [name, value] = command.env_set[i];
    bool later = std::any_of(command.env_set.begin() + i + 1, command.env_set.end(),
                             [&](const auto& other) { return other.first == name; });
    if (!later) setup->env.push_back(name + "=" + value);
  }

  const std::string& program = command.argv[0];
  if (program.find('/') != std::string::npos) {
    setup->programs.push_back(program);
  } else {
    setup->search_path = "/usr/bin:/bin";
    for (const auto& entry : setup->env) {
      if (entry.rfind("PATH=", 0) == 0) setup->search_path = entry.substr(5);
    }
    size_t begin = 0;
    while (begin <= setup->search_path.size()) {
      size_t end = std::min(setup->search_path.find(':', begin), setup->search_path.size());
      std::string dir = setup->search_path.substr(begin, end - begin);
      setup->programs.push_back((dir.empty() ? "." : dir) + "/" + program);
      begin = end + 1;
    }
  }

  auto limit = [&](int resource, uint64_t value) {
    rlimit current{};
    getrlimit(resource, &current);
    rlim_t wanted = value >= RLIM_INFINITY ? RLIM_INFINITY : static_cast<rlim_t>(value);
    if (current.rlim_max != RLIM_INFINITY) wanted = std::min(wanted, current.rlim_max);
    setup->limits.push_back({resource, rlimit{wanted, wanted}});
  };
  const Rlimits& limits = command.limits;
  if (limits.cpu_seconds) limit(RLIMIT_CPU, *limits.cpu_seconds);
  if (limits.file_size_bytes) limit(RLIMIT_FSIZE, *limits.file_size_bytes);
  if (limits.open_files) limit(RLIMIT_NOFILE, *limits.open_files);
  if (limits.address_space_bytes) limit(RLIMIT_AS, *limits.address_space_bytes);
  limit(RLIMIT_CORE, limits.core_bytes);

  // Pointer arrays last: the strings above no longer move.
  for (const auto& arg : command.argv) setup->argv.push_back(const_cast<char*>(arg.c_str()));
  setup->argv.push_back(nullptr);
  for (auto& entry : setup->env) setup->envp.push_back(entry.data());
  setup->envp.push_back(nullptr);
  for (const auto& candidate : setup->programs) setup->program_ptrs.push_back(candidate.c_str());
  if (!command.cwd.empty()) setup->cwd = command.cwd.c_str();
  return ok_status();
}

// Runs in the forked child: async-signal-safe calls only, no allocation.
[[noreturn]] void child_main(const ChildSetup& setup, int report_fd) {
  auto fail = [report_fd](int stage, int err) {
    ChildFailure failure{stage, err};
    ssize_t ignored = write(report_fd, &failure, sizeof failure);
    (void)ignored;
    _exit(127);
  };
  if (setpgid(0, 0) != 0) fail(kStageSetup, errno);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &default_action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  for (int target = 0; target < kFirstFreeFd; ++target) {
    if (setup.fds[target] < 0) {
      close(target);
    } else if (dup2(setup.fds[target], target) < 0) {
      fail(kStageSetup, errno);
    }
  }
  // Close everything else but the report pipe (close-on-exec; closed by exec itself).
  bool closed = (report_fd == kFirstFreeFd || close_range(kFirstFreeFd, report_fd - 1, 0) == 0) &&
                close_range(report_fd + 1, ~0u, 0) == 0;
  if (!closed) {
    rlimit files{};
    getrlimit(RLIMIT_NOFILE, &files);
    int top = files.rlim_cur == RLIM_INFINITY || files.rlim_cur > (1 << 20)
                  ? (1 << 20)
                  : static_cast<int>(files.rlim_cur);
    for (int fd = kFirstFreeFd; fd < top; ++fd) {
      if (fd != report_fd) close(fd);
    }
  }

  if (setup.cwd && chdir(setup.cwd) != 0) fail(kStageChdir, errno);
  for (const auto& [resource, value] : setup.limits) {
    if (setrlimit(resource, &value) != 0) fail(kStageRlimit, errno);
  }
  bool denied = false;
  for (const char* program : setup.program_ptrs) {
    execve(program, setup.argv.data(), setup.envp.data());
    if (errno == EACCES)
      denied = true;
    else if (errno != ENOENT && errno != ENOTDIR)
      fail(kStageExec, errno);
  }
  fail(kStageExec, denied ? EACCES : ENOENT);
  _exit(127);  // not reached
}

Error start_error(const Command& command, const ChildSetup& setup, const ChildFailure& failure) {
  const std::string what = "cannot run '" + command.argv[0] + "'";
  const bool missing = failure.err == ENOENT || failure.err == ENOTDIR;
  switch (failure.stage) {
    case kStageExec:
      if (missing && setup.search_path.empty()) {
        return make_error(ErrorCode::kNotFound,
                          what + ": no such file (check the path, and the interpreter named on its #! line)");
      }
      if (missing) {
        return make_error(ErrorCode::kNotFound, what + ": program not found in PATH (" + setup.search_path +
                                                    "); install it or fix PATH");
      }
      if (failure.err == EACCES)
        return make_error(ErrorCode::kIo, what + ": permission denied (is it executable?)");
      return io_error(what, failure.err);
    case kStageChdir:
      return make_error(
          missing ? ErrorCode::kNotFound : ErrorCode::kIo,
          what + ": cannot change to working directory '" + command.cwd + "': " + errno_text(failure.err));
    case kStageRlimit:
      return io_error(what + ": cannot apply resource limits", failure.err);
    default:
      return io_error(what + ": setting up the child failed", failure.err);
  }
}

// Forks and execs the command with the given fds as the child's 0..4. Returns the pid once exec
// succeeded; on failure the child has been reaped.
Result<pid_t> start_child(const Command& command, const int (&fds)[5]) {
  ChildSetup setup;
  KP_TRY_STATUS(prepare(command, &setup));
  std::copy(std::begin(fds), std::end(fds), setup.fds);
  KP_TRY(Pipe report, make_pipe());

  pid_t pid = fork();
  if (pid < 0) return io_error("cannot run '" + command.argv[0] + "': fork failed", errno);
  if (pid == 0) child_main(setup, report.write.get());
  report.write.reset();

  ChildFailure failure{};
  size_t got = 0;
  while (got < sizeof failure) {
    ssize_t n = read(report.read.get(), reinterpret_cast<char*>(&failure) + got, sizeof failure - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == 0) return pid;  // EOF: exec closed the report pipe
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (got < sizeof failure) failure = {kStageSetup, EIO};
  return start_error(command, setup, failure);
}

// Keeps the first half and the last half of a stream beyond its limit.
class Capture {
 public:
  explicit Capture(size_t limit) : head_limit_(limit / 2), tail_limit_(limit - limit / 2) {}

  void append(const char* data, size_t size) {
    size_t to_head = std::min(size, head_limit_ - head_.size());
    head_.append(data, to_head);
    tail_.append(data + to_head, size - to_head);
    if (tail_.size() > 2 * tail_limit_ + kChunk) trim();
  }

  std::string take(bool* truncated) {
    trim();
    if (omitted_ == 0) return head_ + tail_;
    *truncated = true;
    return head_ + "\n[kernelpro: " + std::to_string(omitted_) + " bytes omitted]\n" + tail_;
  }

 private:
  void trim() {
    if (tail_.size() <= tail_limit_) return;
    omitted_ += tail_.size() - tail_limit_;
    tail_.erase(0, tail_.size() - tail_limit_);
  }

  size_t head_limit_, tail_limit_;
  std::string head_, tail_;
  uint64_t omitted_ = 0;
};

struct OutputPipe {
  Fd fd;  // our read end; closed at EOF
  Capture capture;

  // Reads what is available; closes fd at EOF or on error. Returns false when nothing more is
  // readable right now.
  bool read_some() {
    char buf[kChunk];
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      capture.append(buf, static_cast<size_t>(n));
      return true;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) fd.reset();
    return n < 0 && errno == EINTR;
  }
};

}  // namespace

bool Completed::success() const { return exit_code == 0 && signal == 0 && !timed_out; }

std::string Completed::describe() const {
  char buf[64];
  if (timed_out) {
    std::snprintf(buf, sizeof buf, "timed out after %.1f s", wall_seconds);
    return buf;
  }
  if (signal != 0) return "killed by signal " + std::to_string(signal) + " (" + signal_name(signal) + ")";
  return "exited with status " + std::to_string(exit_code);
}

Result<Completed> run(const Command& command) {
  ignore_sigpipe();
  const auto start = Clock::now();

  Fd stdin_child, stdin_parent;
  if (command.stdin_data.empty()) {
    KP_TRY(stdin_child, open_fd("/dev/null", O_RDONLY, "for the child's stdin"));
  } else {
    KP_TRY(Pipe pipe, make_pipe());
    stdin_child = std::move(pipe.read);
    stdin_parent = std::move(pipe.write);
    set_nonblocking(stdin_parent);
  }
  Fd out_child, err_child;
  KP_TRY_STATUS(open_outputs(command, false, &out_child, &err_child));
  OutputPipe out{Fd(), Capture(command.max_capture_bytes)};
  OutputPipe err{Fd(), Capture(command.max_capture_bytes)};
  for (auto [child, pipe] : {std::pair{&out_child, &out}, std::pair{&err_child, &err}}) {
    if (*child) continue;
    KP_TRY(Pipe p, make_pipe());
    *child = std::move(p.write);
    pipe->fd = std::move(p.read);
    set_nonblocking(pipe->fd);
  }

  const int fds[5] = {stdin_child.get(), out_child.get(), err_child.get(), -1, -1};
  KP_TRY(pid_t pid, start_child(command, fds));
  stdin_child.reset();
  out_child.reset();
  err_child.reset();
  Fd pidfd = open_pidfd(pid);

  std::optional<Clock::time_point> deadline;
  if (command.timeout) deadline = start + *command.timeout;
  std::optional<Clock::time_point> drain_deadline;  // set once the child has exited
  size_t stdin_written = 0;
  bool timed_out = false;
  int poll_errno = 0;
  while (true) {
    if (!drain_deadline && peek_exit(pid, nullptr)) {
      drain_deadline = Clock::now() + kDrainAfterExit;
      stdin_parent.reset();
      pidfd.reset();
    }
    if (drain_deadline && !out.fd && !err.fd) break;
    const auto now = Clock::now();
    if (drain_deadline && now >= *drain_deadline) break;
    if (!drain_deadline && deadline && now >= *deadline) {
      timed_out = true;
      break;
    }

    pollfd polled[4];
    int count = 0;
    auto add = [&](const Fd& fd, short events) {
      if (fd) polled[count++] = pollfd{fd.get(), events, 0};
    };
    add(stdin_parent, POLLOUT);
    add(out.fd, POLLIN);
    add(err.fd, POLLIN);
    add(pidfd, POLLIN);
    int wait_ms = poll_timeout_ms(drain_deadline ? drain_deadline : deadline, drain_deadline || pidfd);
    if (poll(polled, static_cast<nfds_t>(count), wait_ms) < 0) {
      if (errno == EINTR) continue;
      poll_errno = errno;
      break;
    }
    for (int i = 0; i < count; ++i) {
      if (polled[i].revents == 0) continue;
      if (stdin_parent && polled[i].fd == stdin_parent.get()) {
        size_t size = std::min(kChunk, command.stdin_data.size() - stdin_written);
        ssize_t n = write(stdin_parent.get(), command.stdin_data.data() + stdin_written, size);
        if (n > 0) stdin_written += static_cast<size_t>(n);
        if (stdin_written == command.stdin_data.size() || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          stdin_parent.reset();  // done, or the child closed its stdin (EPIPE)
        }
      } else if (out.fd && polled[i].fd == out.fd.get()) {
        out.read_some();
      } else if (err.fd && polled[i].fd == err.fd.get()) {
        err.read_some();
      }
    }
  }

  Completed completed;
  kill_and_reap(pid, &completed);
  // What the killed processes left in the pipes; bounded, since a writer outside the group could
  // keep them busy.
  for (OutputPipe* pipe : {&out, &err}) {
    for (int reads = 0; pipe->fd && reads < 256 && pipe->read_some(); ++reads) {
    }
  }
  completed.timed_out = timed_out;
  completed.stdout_text = out.capture.take(&completed.output_truncated);
  completed.stderr_text = err.capture.take(&completed.output_truncated);
  completed.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (poll_errno != 0) return io_error("supervising '" + command.argv[0] + "': poll failed", poll_errno);
  return completed;
}

Result<std::unique_ptr<Process>> Process::spawn(const Command& command) {
  ignore_sigpipe();
  if (!command.stdin_data.empty()) {
    return make_error(ErrorCode::kInvalidInput,
                      "cannot start '" + (command.argv.empty() ? std::string() : command.argv[0]) +
                          "' as a Process: stdin_data is not supported (send requests with send_line)");
  }
  const auto start = Clock::now();
  KP_TRY(Fd stdin_child, open_fd("/dev/null", O_RDONLY, "for the child's stdin"));
  Fd out_child, err_child;
  KP_TRY_STATUS(open_outputs(command, true, &out_child, &err_child));
  KP_TRY(Pipe requests, make_pipe());
  KP_TRY(Pipe replies, make_pipe());

  const int fds[5] = {stdin_child.get(), out_child.get(), err_child.get(), requests.read.get(),
                      replies.write.get()};
  KP_TRY(pid_t pid, start_child(command, fds));
  set_nonblocking(requests.write);
  set_nonblocking(replies.read);

  std::unique_ptr<Process> process(new Process());
  process->pid_ = pid;
  process->start_ = start;
  process->request_fd_ = requests.write.release();
  process->reply_fd_ = replies.read.release();
  process->pidfd_ = open_pidfd(pid).release();
  return process;
}

Process::~Process() {
  if (!completed_) kill();
}

Status Process::send_line(std::string_view line, std::optional<milliseconds> timeout) {
  const std::string who = "worker (pid " + std::to_string(pid_) + ")";
  if (line.find('\n') != std::string_view::npos) {
    return make_error(ErrorCode::kInvalidInput, "a line sent to " + who + " contains a newline");
  }
  if (completed_ || request_fd_ < 0) return make_error(ErrorCode::kProtocol, who + " is no longer running");
  std::string data(line);
  data += '\n';
  std::optional<Clock::time_point> deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  size_t written = 0;
  while (true) {
    siginfo_t info{};
    if (peek_exit(pid_, &info)) return make_error(ErrorCode::kProtocol, who + " " + how_it_ended(info));
    ssize_t n = write(request_fd_, data.data() + written, data.size() - written);
    if (n > 0) written += static_cast<size_t>(n);
    if (written == data.size()) return ok_status();
    if (n < 0 && errno == EPIPE)
      return make_error(ErrorCode::kProtocol, who + " closed its request channel (fd 3)");
    if (n < 0 && errno != EAGAIN && errno != EINTR) return io_error("writing to " + who, errno);
    if (deadline && Clock::now() >= *deadline) {
      return make_error(ErrorCode::kTimeout,
                        who + " did not read its request within " + std::to_string(timeout->count()) + " ms");
    }
    pollfd polled[2] = {{request_fd_, POLLOUT, 0}, {pidfd_, POLLIN, 0}};
    poll(polled, pidfd_ >= 0 ? 2 : 1, poll_timeout_ms(deadline, pidfd_ >= 0));
  }
}

Result<std::string> Process::read_line(milliseconds timeout) {
  const std::string who = "worker (pid " + std::to_string(pid_) + ")";
  const auto deadline = Clock::now() + timeout;
  auto take_line = [this]() -> std::optional<std::string> {
    size_t end = reply_buffer_.find('\n');
    if (end == std::string::npos) return std::nullopt;
    std::string line = reply_buffer_.substr(0, end);
    reply_buffer_.erase(0, end + 1);
    return line;
  };
  // Reads what is available now; returns false at EOF.
  auto read_available = [this]() {
    char buf[kChunk];
    while (true) {
      ssize_t n = read(reply_fd_, buf, sizeof buf);
      if (n > 0)
        reply_buffer_.append(buf, static_cast<size_t>(n));
      else if (n == 0)
        return false;
      else if (errno != EINTR)
        return true;  // EAGAIN: nothing more for now
      if (reply_buffer_.size() > kMaxLineBytes) return true;
    }
  };

  while (true) {
    if (auto line = take_line()) return *std::move(line);
    if (completed_ || reply_fd_ < 0) return make_error(ErrorCode::kProtocol, who + " is no longer running");
    if (reply_buffer_.size() > kMaxLineBytes) {
      return make_error(ErrorCode::kProtocol, who + " sent a reply line longer than 64 MiB");
    }
    bool open = read_available();
    if (auto line = take_line()) return *std::move(line);
    siginfo_t info{};
    if (!open) {  // usually the child died: give it a moment to become a zombie and say how
      bool exited = wait_exit(pid_, pidfd_, Clock::now() + kDrainAfterExit, &info);
      return make_error(ErrorCode::kProtocol, who + " closed its reply channel (fd 4)" +
                                                  (exited ? "; it " + how_it_ended(info) : ""));
    }
    if (peek_exit(pid_, &info)) {
      read_available();  // a reply written just before exiting
      if (auto line = take_line()) return *std::move(line);
      return make_error(ErrorCode::kProtocol, who + " " + how_it_ended(info) + " without replying");
    }
    if (Clock::now() >= deadline) {
      return make_error(ErrorCode::kTimeout,
                        "no reply from " + who + " within " + std::to_string(timeout.count()) + " ms");
    }
    pollfd polled[2] = {{reply_fd_, POLLIN, 0}, {pidfd_, POLLIN, 0}};
    poll(polled, pidfd_ >= 0 ? 2 : 1, poll_timeout_ms(deadline, pidfd_ >= 0));
  }
}

bool Process::running() { return !completed_ && !peek_exit(pid_, nullptr); }

Completed Process::kill() {
  if (completed_) return *completed_;
  return finish(false);
}

Completed Process::wait(milliseconds timeout) {
  if (completed_) return *completed_;
  if (request_fd_ >= 0) ::close(request_fd_);
  request_fd_ = -1;
  return finish(!wait_exit(pid_, pidfd_, Clock::now() + timeout, nullptr));
}

Completed Process::finish(bool timed_out) {
  Completed completed;
  kill_and_reap(pid_, &completed);
  completed.timed_out = timed_out;
  completed.wall_seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  for (int* fd : {&request_fd_, &reply_fd_, &pidfd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  completed_ = completed;
  return completed;
}

int kill_tagged(std::string_view name, std::string_view value) {
  if (name.empty() || value.empty()) return 0;
  std::string needle(name);
  needle += '=';
  needle += value;
  const uid_t uid = getuid();
  const pid_t self = getpid();
  std::set<long> signalled;
  // A tagged process may fork between the scan and the signal: scan again until a pass finds
  // none (a bounded number of passes; each child of a killed process carries the tag too).
  for (int pass = 0; pass < 8; ++pass) {
    DIR* proc = opendir("/proc");
    if (!proc) break;
    int found = 0;
    while (dirent* e = readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0' || pid == self) continue;
      const std::string dir = std::string("/proc/") + e->d_name;
      struct stat st {};
      if (stat(dir.c_str(), &st) != 0 || st.st_uid != uid) continue;
      std::ifstream in(dir + "/environ", std::ios::binary);
      if (!in) continue;
      const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      // Entries are NUL-separated: the tag must be a whole entry.
      for (size_t at = 0; at < env.size();) {
        const size_t stop = env.find('\0', at);
        const size_t len = (stop == std::string::npos ? env.size() : stop) - at;
        if (std::string_view(env).substr(at, len) == needle) {
          if (::kill(static_cast<pid_t>(pid), SIGKILL) == 0 && signalled.insert(pid).second) ++found;
          break;
        }
        if (stop == std::string::npos) break;
        at = stop + 1;
      }
    }
    closedir(proc);
    if (found == 0) break;
  }
  return static_cast<int>(signalled.size());
}

bool become_subreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

namespace {

struct ProcStat {
  int ppid = 0;
  char state = '?';
  std::string name;
};

// "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so it ends at the last ')'.
std::optional<ProcStat> read_proc_stat(const char* pid) {
  std::ifstream in(std::string("/proc/") + pid + "/stat");
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 4 > text.size()) return std::nullopt;
  ProcStat st;
  st.name = text.substr(open + 1, close - open - 1);
  st.state = text[close + 2];
  st.ppid = std::atoi(text.c_str() + close + 4);
  return st;
}

}  // namespace

std::map<int, std::string> live_descendants(int root) {
  if (root == 0) root = getpid();
  std::map<int, std::vector<int>> children;
  std::map<int, ProcStat> all;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* e = readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0') continue;
      auto st = read_proc_stat(e->d_name);
      if (!st) continue;
      children[st->ppid].push_back(static_cast<int>(pid));
      all[static_cast<int>(pid)] = std::move(*st);
    }
    closedir(proc);
  }
  std::map<int, std::string> found;
  std::set<int> seen{root};
  std::vector<int> todo = children[root];
  while (!todo.empty()) {
    const int pid = todo.back();
    todo.pop_back();
    if (!seen.insert(pid).second) continue;
    // A zombie runs nothing and holds no GPU, but it still parents what it left.
    if (all[pid].state != 'Z') found[pid] = all[pid].name;
    for (int c : children[pid]) todo.push_back(c);
  }
  return found;
}

int kill_descendants(int root, const std::set<int>& keep) {
  std::set<int> signalled;
  for (int pass = 0; pass < 8; ++pass) {
    int fresh = 0;
    for (const auto& [pid, name] : live_descendants(root)) {
      if (keep.count(pid) || signalled.count(pid)) continue;
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      signalled.insert(pid);
      ++fresh;
    }
    if (fresh == 0) break;
  }
  return static_cast<int>(signalled.size());
}

std::string describe_processes(const std::map<int, std::string>& processes) {
  std::string out;
  size_t shown = 0;
  for (const auto& [pid, name] : processes) {
    if (shown == 6) break;
    out += (shown++ ? ", " : "") + std::string("pid ") + std::to_string(pid) + " (" + name + ")";
  }
  if (processes.size() > shown) out += " and " + std::to_string(processes.size() - shown) + " more";
  return out;
}

std::string random_token() {
  std::random_device rd;
  std::string token;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    uint32_t v = rd();
    for (int k = 0; k < 8; ++k, v >>= 4) token += kHex[v & 15];
  }
  return token;
}

}  // namespace kp::sys
