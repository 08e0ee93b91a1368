#include "worker/orphan_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "sys/subprocess.h"
#include "verdict/protocol.h"

namespace kp::worker {

namespace {

[[noreturn]] void end_group(const char* why) {
  std::fprintf(stderr, "kp-worker: %s; exiting with everything it started\n", why);
  std::fflush(stderr);
  // First what left the group (setsid, a double fork), found by the token they inherited.
  if (const char* token = std::getenv(eval::kWorkerTokenEnv); token && *token)
    sys::kill_tagged(eval::kWorkerTokenEnv, token);
  sys::kill_descendants();  // and what also cleared its environment: below this subreaper still
  if (getpgrp() == getpid()) kill(0, SIGKILL);  // the group is ours alone (sys::Process::spawn)
  _exit(3);
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

void watch_orchestrator(int request_fd) {
  const pid_t parent = getppid();
  pid_t orchestrator = 0;
  int pidfd = -1;
  if (const char* v = std::getenv(eval::kOrchestratorPidEnv)) {
    orchestrator = static_cast<pid_t>(std::atol(v));
    if (orchestrator > 1) {
      pidfd = open_pidfd(orchestrator);
      if (pidfd < 0 && errno == ESRCH) end_group("kernelpro exited before this worker started");
    }
  }
  std::thread([request_fd, parent, orchestrator, pidfd] {
    while (true) {
      pollfd fds[2];
      nfds_t n = 0;
      if (request_fd >= 0) fds[n++] = {request_fd, 0, 0};  // no events asked: POLLHUP/POLLERR come anyway
      if (pidfd >= 0) fds[n++] = {pidfd, POLLIN, 0};        // readable once the process has exited
      if (poll(fds, n, 250) > 0) {
        if (request_fd >= 0 && fds[0].revents != 0) end_group("kernelpro closed the request pipe");
        if (pidfd >= 0 && fds[n - 1].revents != 0) end_group("kernelpro exited");
      }
      // Without a pidfd (an old kernel, or no variable): a pid that no longer exists, or a new parent.
      if (pidfd < 0 && orchestrator > 1 && kill(orchestrator, 0) != 0 && errno == ESRCH) end_group("kernelpro exited");
      if (pidfd < 0 && orchestrator <= 1 && getppid() != parent) end_group("the process that started this worker exited");
    }
  }).detach();
}

}  // namespace kp::worker
