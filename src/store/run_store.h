// The run store (DESIGN.md section 10): one SQLite database per run directory, in WAL mode,
// holding the task, the search tree's nodes, candidates (sources and hashes), evaluations,
// profiles, findings, LLM calls and lessons. Every finished evaluation is committed with its
// node in one transaction, so a run killed at any moment (kill -9 included) resumes from what
// it holds and loses no finished evaluation. One writer at a time: opening for writing takes an
// exclusive lock beside the database, and a second writer gets a clear error instead of a share
// in the file; readers (reports) need no lock.
//
// The schema has a version (PRAGMA user_version) and a list of migrations; opening an older
// store migrates it, opening a newer one is refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sqlite/db.h"
#include "util/result.h"

namespace kp::store {

constexpr int kSchemaVersion = 1;

struct NodeRow {
  int64_t id = 0;
  int64_t parent = -1;  // -1: the root
  std::string kind;     // search::EdgeKind by name
  std::string direction;
  int64_t candidate = 0;  // 0: none (the root may be the reference)
  bool measured = false;  // false: in flight when the run stopped
  bool ok = false;
  double seconds = 0, joules = 0;
  bool closed = false, exhausted = false;
};

struct EvaluationRow {
  int64_t candidate = 0;
  std::string outcome;  // eval::Outcome by name
  std::string reason;
  double seconds = 0, joules = 0, speedup = 0;
  std::string report_json;  // the worker's report, for reports and audits
};

struct LlmCallRow {
  std::string role, provider, model;
  std::string request_json, reply_json, error;
  int64_t input_tokens = 0, output_tokens = 0;
  double cost_usd = 0, latency_s = 0;
  bool cached = false;
};

struct Lesson {
  std::string task, task_category, bottleneck_class;
  std::string direction, actions;  // actions: comma-separated tags
  std::string outcome;             // eval::Outcome by name
  double time_ratio = 0;           // parent time / child time (>1 faster); 0 when not timed
  double energy_ratio = 0;         // parent energy / child energy; 0 when not measured
  std::string evidence;            // the key numbers, one line
};

// What a run's LLM calls cost, summed.
struct LlmSpend {
  int64_t calls = 0, input_tokens = 0, output_tokens = 0;
  double cost_usd = 0;
};

class RunStore {
 public:
  enum class Access { kWriter, kReader };
  // Opens (a writer creates and migrates) the database at `file`. A writer holds `file`.lock
  // for as long as the object lives; kUnavailable when another process holds it.
  static Result<RunStore> open(const std::filesystem::path& file, Access access = Access::kWriter);
  RunStore(RunStore&&) noexcept;
  RunStore& operator=(RunStore&&) noexcept;
  ~RunStore();

  int schema_version() const { return version_; }
  Status check_integrity();  // PRAGMA integrity_check, as an error naming what is wrong

  std::optional<std::string> meta(const std::string& key);
  Status set_meta(const std::string& key, const std::string& value);

  // A candidate by the SHA-256 of its files; the same files give the same id.
  Result<int64_t> add_candidate(const std::string& cuda, const std::string& python);
  // The files of a stored candidate (cuda, python); kNotFound for an unknown id.
  Result<std::pair<std::string, std::string>> candidate(int64_t id);
  Result<int64_t> add_node(const NodeRow& node);  // node.id is assigned
  // The evaluation and the node's measurement (and its candidate, when the node had none yet),
  // committed together.
  Status record_evaluation(int64_t node, const EvaluationRow& e, bool ok, double seconds, double joules);
  Status set_node_flags(int64_t node, bool closed, bool exhausted);
  Result<std::vector<NodeRow>> nodes();
  Result<std::vector<EvaluationRow>> evaluations();
  // Distinct candidates with a verdict: a duplicate the loop measured once and recorded again
  // counts once.
  Result<int> measured_candidates();

  Result<int64_t> add_profile(int64_t candidate, const std::string& page_json);
  Status add_finding(int64_t profile, const std::string& tool, const std::string& severity, const std::string& text);
  struct FindingRow {
    std::string tool, severity, text;
  };
  // The findings of a candidate's profiles, in the order they were added.
  Result<std::vector<FindingRow>> findings(int64_t candidate);
  Result<int64_t> add_llm_call(const LlmCallRow& call);
  Result<LlmSpend> llm_spend();
  Result<int64_t> add_lesson(const Lesson& lesson);
  Result<std::vector<Lesson>> lessons_in_order();  // as they were added
  // Lessons, most relevant first: same task category (the kind of work, task/work_kind.h) and
  // bottleneck class, then the same category, then the same class; within each, the largest
  // change first. `limit` at most. An empty class or category matches nothing (a candidate
  // without a profile has no class: it gets its kind of work's lessons, not every classless one).
  Result<std::vector<Lesson>> lessons(const std::string& bottleneck_class, const std::string& task_category, int limit);

 private:
  RunStore(sqlite::Db db, int lock_fd, int version) : db_(std::move(db)), lock_fd_(lock_fd), version_(version) {}
  sqlite::Db db_;
  int lock_fd_ = -1;
  int version_ = 0;
};

}  // namespace kp::store
