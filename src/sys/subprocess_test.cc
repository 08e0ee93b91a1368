#include "sys/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sys/temp_dir.h"
#include "util/thread_pool.h"

namespace kp::sys {
namespace {

using namespace std::chrono_literals;

Command sh(const std::string& script) { return Command{.argv = {"sh", "-c", script}}; }

Completed run_ok(const Command& command) {
  auto result = run(command);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? std::move(result).value() : Completed{};
}

TempDir temp_dir() {
  auto dir = TempDir::create("kp-subprocess-test-");
  KP_CHECK(dir.ok());
  return std::move(dir).value();
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// True once pid is gone or a zombie (an orphan reparented to an init that may not reap promptly).
bool dead_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z') return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
}

size_t open_fd_count() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

TEST(Run, ExitCodeAndCapture) {
  Completed done = run_ok(sh("echo out; echo err >&2; exit 3"));
  EXPECT_EQ(done.exit_code, 3);
  EXPECT_EQ(done.signal, 0);
  EXPECT_FALSE(done.timed_out);
  EXPECT_FALSE(done.success());
  EXPECT_EQ(done.stdout_text, "out\n");
  EXPECT_EQ(done.stderr_text, "err\n");
  EXPECT_EQ(done.describe(), "exited with status 3");
  EXPECT_GT(done.wall_seconds, 0);

  Completed fine = run_ok(Command{.argv = {"true"}});
  EXPECT_TRUE(fine.success());
  EXPECT_EQ(fine.describe(), "exited with status 0");
}

TEST(Run, LargeOutputOnBothStreamsDoesNotDeadlock) {
  // stderr first: a parent reading stdout to EOF before stderr would deadlock.
  Command command = sh("head -c 10000000 /dev/zero >&2; head -c 10000000 /dev/zero");
  command.max_capture_bytes = 16 << 20;
  command.timeout = 10s;
  Completed done = run_ok(command);
  EXPECT_TRUE(done.success()) << done.describe();
  EXPECT_EQ(done.stdout_text.size(), 10000000u);
  EXPECT_EQ(done.stderr_text.size(), 10000000u);
  EXPECT_FALSE(done.output_truncated);
}

TEST(Run, TruncatesKeepingHeadAndTail) {
  Command command = sh("seq 1 100000");
  command.max_capture_bytes = 1000;
  Completed done = run_ok(command);
  EXPECT_TRUE(done.success());
  EXPECT_TRUE(done.output_truncated);
  EXPECT_EQ(done.stdout_text.rfind("1\n2\n3\n", 0), 0u);
  EXPECT_NE(done.stdout_text.find("bytes omitted]"), std::string::npos);
  const std::string tail = "99999\n100000\n";
  EXPECT_EQ(done.stdout_text.substr(done.stdout_text.size() - tail.size()), tail);
  EXPECT_LT(done.stdout_text.size(), 1100u);
}

TEST(Run, StdinData) {
  Command command{.argv = {"cat"}};
  command.stdin_data = std::string(5000000, 'x') + "end";
  Completed done = run_ok(command);
  EXPECT_TRUE(done.success());
  EXPECT_EQ(done.stdout_text, command.stdin_data);

  // A child that ignores its stdin must not stall the writer.
  Command ignoring = sh("exit 0");
  ignoring.stdin_data = std::string(1 << 20, 'y');
  EXPECT_TRUE(run_ok(ignoring).success());

  // Without stdin_data, stdin is /dev/null.
  EXPECT_EQ(run_ok(Command{.argv = {"wc", "-c"}}).stdout_text, "0\n");
}

TEST(Run, EnvSetAndUnset) {
  ::setenv("KP_TEST_INHERITED", "inherited", 1);
  ::setenv("KP_TEST_REMOVED", "present", 1);
  Command command = sh("echo \"$KP_TEST_INHERITED $KP_TEST_NEW ${KP_TEST_REMOVED-unset} $KP_TEST_TWICE\"");
  command.env_set = {{"KP_TEST_NEW", "new value"}, {"KP_TEST_TWICE", "first"}, {"KP_TEST_TWICE", "second"}};
  command.env_unset = {"KP_TEST_REMOVED"};
  EXPECT_EQ(run_ok(command).stdout_text, "inherited new value unset second\n");

  Command overriding = sh("echo $KP_TEST_INHERITED");
  overriding.env_set = {{"KP_TEST_INHERITED", "overridden"}};
  EXPECT_EQ(run_ok(overriding).stdout_text, "overridden\n");

  Command bad = sh("true");
  bad.env_set = {{"A=B", "c"}};
  auto result = run(bad);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  ::unsetenv("KP_TEST_INHERITED");
  ::unsetenv("KP_TEST_REMOVED");
}

TEST(Run, SearchesThePathTheChildSees) {
  TempDir dir = temp_dir();
  const auto tool = dir.path() / "kp-test-tool";
  std::ofstream(tool) << "#!/bin/sh\necho tool ran\n";
  std::filesystem::permissions(tool, std::filesystem::perms::owner_all);
  Command command{.argv = {"kp-test-tool"}};
  command.env_set = {{"PATH", dir.path().string() + ":/usr/bin:/bin"}};
  EXPECT_EQ(run_ok(command).stdout_text, "tool ran\n");
}

TEST(Run, Cwd) {
  TempDir dir = temp_dir();
  Command command{.argv = {"pwd", "-P"}, .cwd = dir.path().string()};
  EXPECT_EQ(run_ok(command).stdout_text, std::filesystem::canonical(dir.path()).string() + "\n");

  Command missing{.argv = {"pwd"}, .cwd = (dir.path() / "absent").string()};
  auto result = run(missing);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kNotFound);
  EXPECT_NE(result.error().message.find("absent"), std::string::npos) << result.error().message;
}

TEST(Run, MissingProgramIsNotFound) {
  auto result = run(Command{.argv = {"kp-no-such-program-xyz", "arg"}});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kNotFound);
  const std::string& message = result.error().message;
  EXPECT_NE(message.find("'kp-no-such-program-xyz'"), std::string::npos) << message;
  EXPECT_NE(message.find("install it or fix PATH"), std::string::npos) << message;

  auto absolute = run(Command{.argv = {"/nonexistent/kp-tool"}});
  ASSERT_FALSE(absolute.ok());
  EXPECT_EQ(absolute.error().code, ErrorCode::kNotFound);
  EXPECT_NE(absolute.error().message.find("/nonexistent/kp-tool"), std::string::npos);

  auto empty = run(Command{});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, ErrorCode::kInvalidInput);
}

TEST(Run, TimeoutKillsGrandchildren) {
  TempDir dir = temp_dir();
  const auto pid_file = dir.path() / "pid";
  Command command = sh("sleep 100 & echo $! > '" + pid_file.string() + "'; sleep 100");
  command.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  Completed done = run_ok(command);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_TRUE(done.timed_out);
  EXPECT_FALSE(done.success());
  EXPECT_EQ(done.signal, SIGKILL);
  EXPECT_EQ(done.describe().rfind("timed out after 0.", 0), 0u) << done.describe();
  pid_t grandchild = std::atoi(read_file(pid_file).c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dead_within(grandchild, 1s));
}

TEST(Run, GrandchildHoldingStdoutDoesNotStall) {
  TempDir dir = temp_dir();
  const auto pid_file = dir.path() / "pid";
  const auto start = std::chrono::steady_clock::now();
  Completed done = run_ok(sh("(sleep 5) & echo $! > '" + pid_file.string() + "'; echo hi"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_TRUE(done.success()) << done.describe();
  EXPECT_FALSE(done.timed_out);
  EXPECT_EQ(done.stdout_text, "hi\n");
  pid_t grandchild = std::atoi(read_file(pid_file).c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dead_within(grandchild, 1s));
}

TEST(Run, FileSizeLimit) {
  TempDir dir = temp_dir();
  Command command = sh("head -c 1000000 /dev/zero > f");
  command.cwd = dir.path().string();
  command.limits.file_size_bytes = 1000;
  Completed done = run_ok(command);
  EXPECT_FALSE(done.success());
  EXPECT_TRUE(done.signal == SIGXFSZ || done.exit_code != 0) << done.describe();
  EXPECT_LE(std::filesystem::file_size(dir.path() / "f"), 1000u);
}

TEST(Run, OpenFilesLimit) {
  Command command = sh("ulimit -n");
  command.limits.open_files = 64;
  EXPECT_EQ(run_ok(command).stdout_text, "64\n");
}

TEST(Run, SignalReported) {
  Completed done = run_ok(sh("kill -SEGV $$"));
  EXPECT_EQ(done.signal, SIGSEGV);
  EXPECT_FALSE(done.timed_out);
  EXPECT_FALSE(done.success());
  EXPECT_EQ(done.describe(), "killed by signal 11 (SIGSEGV)");
}

TEST(Run, OutputToFiles) {
  TempDir dir = temp_dir();
  Command command = sh("echo to-out; echo to-err >&2");
  command.stdout_path = (dir.path() / "out.txt").string();
  command.stderr_path = (dir.path() / "err.txt").string();
  Completed done = run_ok(command);
  EXPECT_TRUE(done.success());
  EXPECT_EQ(done.stdout_text, "");
  EXPECT_EQ(read_file(dir.path() / "out.txt"), "to-out\n");
  EXPECT_EQ(read_file(dir.path() / "err.txt"), "to-err\n");

  command.stderr_path = command.stdout_path;  // both streams into one file
  EXPECT_TRUE(run_ok(command).success());
  EXPECT_EQ(read_file(dir.path() / "out.txt"), "to-out\nto-err\n");

  command.stdout_path = (dir.path() / "no-dir" / "out.txt").string();
  auto result = run(command);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kIo);
}

TEST(Run, ChildGetsOnlyStdioFdsAndNoFdsLeak) {
  int stray = ::open("/dev/null", O_RDONLY);  // deliberately not close-on-exec
  ASSERT_GE(stray, 0);
  EXPECT_EQ(run_ok(sh("ls /proc/$$/fd")).stdout_text, "0\n1\n2\n");
  ::close(stray);

  const size_t before = open_fd_count();
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(run_ok(sh("echo x")).success());
  (void)run(Command{.argv = {"kp-no-such-program-xyz"}});
  EXPECT_EQ(open_fd_count(), before);
}

TEST(Run, ConcurrentRunsFromAThreadPool) {
  ThreadPool pool(8);
  std::vector<std::future<Completed>> results;
  for (int i = 0; i < 32; ++i) {
    results.push_back(pool.submit([i] { return run_ok(sh("sleep 0.02; echo " + std::to_string(i))); }));
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(results[i].get().stdout_text, std::to_string(i) + "\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

constexpr const char* kEchoServer = "echo started; while read l <&3; do echo \"got $l\" >&4; done";

std::unique_ptr<Process> spawn_ok(const Command& command) {
  auto process = Process::spawn(command);
  KP_CHECK(process.ok());
  return std::move(process).value();
}

TEST(Process, RoundTripAndStdoutToFile) {
  TempDir dir = temp_dir();
  Command command = sh(kEchoServer);
  command.stdout_path = (dir.path() / "worker.log").string();
  auto process = spawn_ok(command);
  EXPECT_TRUE(process->running());
  ASSERT_TRUE(process->send_line("{\"op\":\"ping\"}").ok());
  auto reply = process->read_line(2s);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(*reply, "got {\"op\":\"ping\"}");
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(process->send_line("n" + std::to_string(i)).ok());
  for (int i = 0; i < 50; ++i) {
    auto line = process->read_line(2s);
    ASSERT_TRUE(line.ok()) << line.error().message;
    EXPECT_EQ(*line, "got n" + std::to_string(i));
  }
  EXPECT_EQ(process->send_line("a\nb").error().code, ErrorCode::kInvalidInput);

  Completed done = process->wait(2s);  // closing fd 3 ends the loop
  EXPECT_TRUE(done.success()) << done.describe();
  EXPECT_FALSE(process->running());
  EXPECT_EQ(read_file(dir.path() / "worker.log"), "started\n");
}

TEST(Process, ChildSeesChannelFds) {
  TempDir dir = temp_dir();
  Command command = sh("ls /proc/$$/fd; read l <&3; exit 0");
  command.stdout_path = (dir.path() / "out").string();
  auto process = spawn_ok(command);
  EXPECT_TRUE(process->wait(2s).success());
  EXPECT_EQ(read_file(dir.path() / "out"), "0\n1\n2\n3\n4\n");
}

TEST(Process, ReadLineTimeout) {
  auto process = spawn_ok(sh(kEchoServer));
  const auto start = std::chrono::steady_clock::now();
  auto reply = process->read_line(100ms);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code, ErrorCode::kTimeout);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_TRUE(process->running());
  // Still usable afterwards.
  ASSERT_TRUE(process->send_line("again").ok());
  auto later = process->read_line(2s);
  ASSERT_TRUE(later.ok()) << later.error().message;
  EXPECT_EQ(*later, "got again");
}

TEST(Process, KillReportsSignalAndEndsTheChannel) {
  auto process = spawn_ok(sh(kEchoServer));
  Completed done = process->kill();
  EXPECT_EQ(done.signal, SIGKILL);
  EXPECT_FALSE(done.timed_out);
  EXPECT_FALSE(process->running());
  EXPECT_EQ(process->kill().signal, SIGKILL);  // idempotent
  auto reply = process->read_line(1s);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code, ErrorCode::kProtocol);
  EXPECT_EQ(process->send_line("x").error().code, ErrorCode::kProtocol);
}

TEST(Process, ReadLineAfterExternalDeathIsProtocol) {
  auto process = spawn_ok(sh(kEchoServer));
  ASSERT_EQ(::kill(process->pid(), SIGKILL), 0);
  const auto start = std::chrono::steady_clock::now();
  auto reply = process->read_line(5s);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().code, ErrorCode::kProtocol);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_NE(reply.error().message.find("SIGKILL"), std::string::npos) << reply.error().message;
  EXPECT_FALSE(process->running());
  EXPECT_EQ(process->send_line("x").error().code, ErrorCode::kProtocol);
  EXPECT_EQ(process->wait(1s).signal, SIGKILL);
}

TEST(Process, ReplyWrittenJustBeforeExitIsDelivered) {
  auto process = spawn_ok(sh("echo last >&4; exit 2"));
  auto reply = process->read_line(2s);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(*reply, "last");
  auto next = process->read_line(2s);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().code, ErrorCode::kProtocol);
  EXPECT_EQ(process->wait(1s).exit_code, 2);
}

TEST(Process, WaitTimeoutKillsGroup) {
  TempDir dir = temp_dir();
  const auto pid_file = dir.path() / "pid";
  auto process = spawn_ok(sh("sleep 100 & echo $! > '" + pid_file.string() + "'; sleep 100"));
  // Let the script write the pid file.
  for (int i = 0; i < 200 && read_file(pid_file).empty(); ++i) std::this_thread::sleep_for(5ms);
  Completed done = process->wait(200ms);
  EXPECT_TRUE(done.timed_out);
  EXPECT_EQ(done.signal, SIGKILL);
  pid_t grandchild = std::atoi(read_file(pid_file).c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dead_within(grandchild, 1s));
}

TEST(Process, DestructorKillsChild) {
  pid_t pid = 0;
  {
    auto process = spawn_ok(sh("sleep 100"));
    pid = process->pid();
  }
  EXPECT_TRUE(dead_within(pid, 1s));
}

TEST(Process, SpawnErrors) {
  auto missing = Process::spawn(Command{.argv = {"kp-no-such-program-xyz"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);

  Command with_stdin = sh("true");
  with_stdin.stdin_data = "x";
  auto rejected = Process::spawn(with_stdin);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().code, ErrorCode::kInvalidInput);
}

// A daemon that left its group and session (setsid, then a fork whose parent exits) survives the
// group kill; the tag it inherited still finds it. One started with another token is spared.
TEST(KillTagged, EndsEscapedDescendantsAndOnlyThose) {
  TempDir dir = temp_dir();
  const std::string token = random_token(), other = random_token();
  ASSERT_EQ(token.size(), 32u);
  ASSERT_NE(token, other);
  auto escape = [&](const std::string& tag, const std::string& pidfile) {
    Command c = sh("setsid sh -c 'sleep 300 & echo $! > " + pidfile + "' < /dev/null > /dev/null 2>&1");
    c.env_set = {{"KP_TEST_TOKEN", tag}};
    auto done = run_ok(c);
    EXPECT_EQ(done.exit_code, 0);
  };
  const std::string mine = (dir.path() / "mine.pid").string(), theirs = (dir.path() / "theirs.pid").string();
  escape(token, mine);
  escape(other, theirs);
  auto read_pid = [](const std::string& path) {
    for (int i = 0; i < 100; ++i) {
      std::ifstream in(path);
      int pid = 0;
      if (in >> pid && pid > 0) return pid;
      std::this_thread::sleep_for(20ms);
    }
    return 0;
  };
  const int mine_pid = read_pid(mine), theirs_pid = read_pid(theirs);
  ASSERT_GT(mine_pid, 0);
  ASSERT_GT(theirs_pid, 0);
  ASSERT_EQ(::kill(mine_pid, 0), 0) << "the escaped daemon should outlive its group";

  EXPECT_EQ(kill_tagged("KP_TEST_TOKEN", token), 1);
  EXPECT_TRUE(dead_within(mine_pid, 2s));
  EXPECT_EQ(::kill(theirs_pid, 0), 0) << "a process with another token was killed";
  EXPECT_EQ(kill_tagged("KP_TEST_TOKEN", other), 1);
  EXPECT_TRUE(dead_within(theirs_pid, 2s));
  EXPECT_EQ(kill_tagged("KP_TEST_TOKEN", token), 0);
}

// In a child process of its own: a subreaper changes who reaps every orphan of the test binary.
TEST(LiveDescendants, AnOrphanThatLeftByDoubleForkSetsidAndAClearedEnvironmentIsFoundAndKilled) {
  TempDir dir = temp_dir();
  const std::string pidfile = (dir.path() / "escaped.pid").string();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit codes name the step that failed.
    if (!become_subreaper()) _exit(10);
    const std::set<int> before = [] {
      std::set<int> s;
      for (const auto& [pid, name] : live_descendants()) s.insert(pid);
      return s;
    }();
    const std::string escape = "env -i setsid sh -c 'sleep 300 & echo $! > " + pidfile + "' < /dev/null > /dev/null 2>&1";
    if (std::system(escape.c_str()) != 0) _exit(11);
    int escaped = 0;
    for (int i = 0; i < 100 && escaped == 0; ++i) {
      std::ifstream in(pidfile);
      if (!(in >> escaped)) escaped = 0;
      if (escaped == 0) std::this_thread::sleep_for(20ms);
    }
    if (escaped <= 0) _exit(12);
    std::this_thread::sleep_for(50ms);  // its parent shell exits; it is re-parented here
    const auto found = live_descendants();
    auto it = found.find(escaped);
    if (it == found.end() || before.count(escaped)) _exit(13);
    if (it->second != "sleep") _exit(14);
    if (describe_processes(found).find("pid " + std::to_string(escaped) + " (sleep)") == std::string::npos) _exit(15);
    if (kill_descendants(0, before) < 1) _exit(16);
    int status = 0;
    if (waitpid(escaped, &status, 0) != escaped || !WIFSIGNALED(status)) _exit(17);  // ours to reap
    if (live_descendants().count(escaped)) _exit(18);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 prctl, 11 the escape, 12 no pid, 13 not found below the subreaper, 14 its "
                                       "name, 15 the description, 16 not signalled, 17 not killed, 18 still listed";
}

TEST(LiveDescendants, ADescriptionNamesSixAndCountsTheRest) {
  std::map<int, std::string> many;
  for (int pid = 1; pid <= 8; ++pid) many[pid] = "p" + std::to_string(pid);
  EXPECT_EQ(describe_processes(many),
            "pid 1 (p1), pid 2 (p2), pid 3 (p3), pid 4 (p4), pid 5 (p5), pid 6 (p6) and 2 more");
  EXPECT_EQ(describe_processes({{7, "a (b) c"}}), "pid 7 (a (b) c)");
}

}  // namespace
}  // namespace kp::sys
