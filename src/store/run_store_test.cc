// The run store against a real SQLite file: schema and migrations, round trips, one writer at a
// time, and a writer killed with SIGKILL in the middle of its transactions.
#include "store/run_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "sys/temp_dir.h"

namespace kp::store {
namespace {

namespace fs = std::filesystem;

fs::path db_in(const sys::TempDir& d) { return d.path() / "run" / "store.db"; }

TEST(RunStore, CreatesTheSchemaAndKeepsWhatIsWritten) {
  auto d = sys::TempDir::create("kp-store-").value();
  {
    auto s = RunStore::open(db_in(d));
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->schema_version(), kSchemaVersion);
    ASSERT_TRUE(s->set_meta("task", "examples/gelu").ok());
    const int64_t c = s->add_candidate("__global__ void k() {}", "").value();
    EXPECT_EQ(s->add_candidate("__global__ void k() {}", "").value(), c) << "the same files, the same candidate";
    EXPECT_NE(s->add_candidate("__global__ void k2() {}", "").value(), c);
    EXPECT_EQ(s->candidate(c).value(), std::make_pair(std::string("__global__ void k() {}"), std::string()));
    EXPECT_EQ(s->candidate(c + 100).error().code, ErrorCode::kNotFound);
    const int64_t root = s->add_node({0, -1, "root", "seed", c, true, true, 1.0, 0, false, false}).value();
    const int64_t child = s->add_node({0, root, "idea", "float4 loads", c, false}).value();
    ASSERT_TRUE(s->record_evaluation(child, {c, "ok", "", 0.5, 2.0, 2.0, "{}"}, true, 0.5, 2.0).ok());
    ASSERT_TRUE(s->set_node_flags(child, true, false).ok());
    ASSERT_TRUE(s->add_lesson({"gelu", "elementwise", "memory-bound", "float4 loads", "vectorize_loads", "ok", 2.0, 1.5,
                               "DRAM 50% -> 90%"})
                    .ok());
    ASSERT_TRUE(s->add_llm_call({"coder", "openai", "m", "{}", "{}", "", 10, 20, 0.01, 1.5, false}).ok());
  }
  auto s = RunStore::open(db_in(d), RunStore::Access::kReader);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->meta("task").value_or(""), "examples/gelu");
  auto nodes = s->nodes().value();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].parent, -1);
  EXPECT_EQ(nodes[1].parent, nodes[0].id);
  EXPECT_TRUE(nodes[1].measured);
  EXPECT_DOUBLE_EQ(nodes[1].seconds, 0.5);
  EXPECT_TRUE(nodes[1].closed);
  ASSERT_EQ(s->evaluations().value().size(), 1u);
  EXPECT_TRUE(s->check_integrity().ok());
}

TEST(RunStore, LessonsComeMostRelevantFirst) {
  auto d = sys::TempDir::create("kp-store-").value();
  auto s = RunStore::open(db_in(d)).value();
  ASSERT_TRUE(s.add_lesson({"a", "reduction", "latency-bound", "warp shuffles", "", "ok", 1.1, 0, ""}).ok());
  ASSERT_TRUE(s.add_lesson({"b", "elementwise", "memory-bound", "float4", "", "ok", 1.3, 0, ""}).ok());
  ASSERT_TRUE(s.add_lesson({"c", "reduction", "memory-bound", "one pass", "", "ok", 1.2, 0, ""}).ok());
  ASSERT_TRUE(s.add_lesson({"d", "reduction", "memory-bound", "smem tiles", "", "incorrect", 0, 0, ""}).ok());
  ASSERT_TRUE(s.add_lesson({"e", "reduction", "memory-bound", "slower", "", "ok", 0.25, 0, ""}).ok());
  ASSERT_TRUE(s.add_lesson({"f", "gemm", "compute-bound", "wgmma", "", "ok", 3.0, 0, ""}).ok());
  auto l = s.lessons("memory-bound", "reduction", 4).value();
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].task, "e") << "same class and category, the largest change (4x slower)";
  EXPECT_EQ(l[1].task, "c");
  EXPECT_EQ(l[2].task, "d");
  EXPECT_EQ(l[3].task, "a") << "then the same kind of work";
  for (const auto& x : l) EXPECT_NE(x.task, "f");
  EXPECT_EQ(s.lessons("memory-bound", "reduction", 6).value()[4].task, "b") << "then the same class";
  // A GEMM without a profile (no class) gets GEMM lessons, never the classless tuner moves of others.
  ASSERT_TRUE(s.add_lesson({"g", "data-movement", "", "TILE 32 -> 64", "tune", "ok", 1.5, 0, ""}).ok());
  auto gemm = s.lessons("", "gemm", 8).value();
  ASSERT_EQ(gemm.size(), 1u);
  EXPECT_EQ(gemm[0].task, "f");
}

TEST(RunStore, OneWriterAtATime) {
  auto d = sys::TempDir::create("kp-store-").value();
  auto first = RunStore::open(db_in(d));
  ASSERT_TRUE(first.ok());
  const pid_t pid = fork();
  if (pid == 0) {  // another process: a second writer is refused, a reader is not
    auto second = RunStore::open(db_in(d));
    const bool refused = !second.ok() && second.error().code == ErrorCode::kUnavailable &&
                         second.error().message.find("in use by another kernelpro process (pid ") != std::string::npos;
    const bool reads = RunStore::open(db_in(d), RunStore::Access::kReader).ok();
    _exit(refused && reads ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  first = Error{};  // closes it: the lock goes with it
  EXPECT_TRUE(RunStore::open(db_in(d)).ok());
}

TEST(RunStore, AWriterKilledMidRunLosesNoFinishedEvaluation) {
  auto d = sys::TempDir::create("kp-store-").value();
  { ASSERT_TRUE(RunStore::open(db_in(d)).ok()); }
  const pid_t pid = fork();
  if (pid == 0) {  // writes node after node, each with its evaluation, until killed
    auto s = RunStore::open(db_in(d));
    if (!s.ok()) _exit(2);
    const int64_t root = s->add_node({0, -1, "root", "seed", 0, true, true, 1.0}).value();
    for (int i = 0;; ++i) {
      const int64_t c = s->add_candidate("// candidate " + std::to_string(i), "").value();
      const int64_t n = s->add_node({0, root, "tune", "BLOCK=" + std::to_string(i), c}).value();
      if (!s->record_evaluation(n, {c, "ok", "", 1.0 / (i + 2), 0, 0, std::string(4096, 'r')}, true, 1.0 / (i + 2), 0)
               .ok())
        _exit(3);
    }
  }
  // Kill it once it has committed a few hundred evaluations, in the middle of whatever it does.
  for (int tries = 0; tries < 2000; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto r = RunStore::open(db_in(d), RunStore::Access::kReader);
    if (!r.ok()) continue;
    auto evals = r->evaluations();
    if (evals.ok() && evals->size() >= 300) break;
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: status " << status;

  auto s = RunStore::open(db_in(d));  // the lock died with the writer
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->check_integrity().ok());
  auto evals = s->evaluations().value();
  auto nodes = s->nodes().value();
  EXPECT_GE(evals.size(), 300u);
  size_t measured = 0;
  for (const auto& n : nodes) measured += n.parent >= 0 && n.measured;
  EXPECT_EQ(measured, evals.size()) << "every finished evaluation has its node, and no node claims one it lacks";
  EXPECT_LE(nodes.size(), evals.size() + 2) << "at most one node in flight (and the root)";
}

}  // namespace
}  // namespace kp::store
