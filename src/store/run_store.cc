#include "store/run_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "util/hash.h"
#include "util/strings.h"

namespace kp::store {

namespace fs = std::filesystem;
using sqlite::Db;
using sqlite::Stmt;

namespace {

// migrations[i] takes the schema from version i to i + 1.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE candidates (
  id INTEGER PRIMARY KEY, files_sha TEXT NOT NULL UNIQUE, cuda TEXT NOT NULL, python TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
CREATE TABLE nodes (
  id INTEGER PRIMARY KEY, parent INTEGER, kind TEXT NOT NULL, direction TEXT NOT NULL,
  candidate INTEGER REFERENCES candidates(id), measured INTEGER NOT NULL DEFAULT 0,
  ok INTEGER NOT NULL DEFAULT 0, seconds REAL NOT NULL DEFAULT 0, joules REAL NOT NULL DEFAULT 0,
  closed INTEGER NOT NULL DEFAULT 0, exhausted INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
CREATE TABLE evaluations (
  id INTEGER PRIMARY KEY, candidate INTEGER REFERENCES candidates(id), outcome TEXT NOT NULL,
  reason TEXT NOT NULL, seconds REAL NOT NULL, joules REAL NOT NULL, speedup REAL NOT NULL,
  report_json TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
CREATE TABLE profiles (
  id INTEGER PRIMARY KEY, candidate INTEGER REFERENCES candidates(id), page_json TEXT NOT NULL);
CREATE TABLE findings (
  id INTEGER PRIMARY KEY, profile INTEGER REFERENCES profiles(id), tool TEXT NOT NULL,
  severity TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY, role TEXT NOT NULL, provider TEXT NOT NULL, model TEXT NOT NULL,
  request_json TEXT NOT NULL, reply_json TEXT NOT NULL, error TEXT NOT NULL,
  input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL,
  latency_s REAL NOT NULL, cached INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
CREATE TABLE lessons (
  id INTEGER PRIMARY KEY, task TEXT NOT NULL, task_category TEXT NOT NULL,
  bottleneck_class TEXT NOT NULL, direction TEXT NOT NULL, actions TEXT NOT NULL,
  outcome TEXT NOT NULL, time_ratio REAL NOT NULL, energy_ratio REAL NOT NULL, evidence TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
CREATE INDEX lessons_by_class ON lessons (bottleneck_class, task_category);
)sql",
};
constexpr int kMigrationCount = static_cast<int>(sizeof(kMigrations) / sizeof(kMigrations[0]));
static_assert(kMigrationCount == kSchemaVersion, "one migration per schema version");

Result<int> user_version(Db& db) {
  KP_TRY(Stmt s, db.prepare("PRAGMA user_version"));
  KP_TRY(bool row, s.step());
  return row ? static_cast<int>(s.int_at(0)) : 0;
}

// The exclusive lock of a writer: flock on FILE.lock, released by the kernel when the process
// ends however it ends. The file holds the holder's pid, for the message a second writer gets.
Result<int> take_lock(const fs::path& file) {
  const std::string path = file.string() + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(ErrorCode::kIo, fmt::format("opening {}: {}", path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    ::close(fd);
    return make_error(
        ErrorCode::kUnavailable,
        fmt::format("the run store {} is in use by another kernelpro process{}: wait for it to finish "
                    "or stop it, then run again",
                    file.string(),
                    n > 0 ? " (pid " + std::string(trim(std::string(buf, static_cast<size_t>(n)))) + ")" : ""));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for the message; the lock holds without it.
  }
  return fd;
}

}  // namespace

Result<RunStore> RunStore::open(const fs::path& file, Access access) {
  const bool writer = access == Access::kWriter;
  if (!writer && !fs::exists(file))
    return make_error(ErrorCode::kNotFound, fmt::format("no run store at {}", file.string()));
  int lock = -1;
  if (writer) {
    std::error_code ec;
    if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
    KP_TRY(lock, take_lock(file));
  }
  auto fail = [&](Error e) {
    if (lock >= 0) ::close(lock);
    return e.wrap("run store " + file.string());
  };
  auto db = Db::open(file.string(), !writer);
  if (!db) return fail(db.error());
  auto version = user_version(*db);
  if (!version) return fail(version.error());
  if (*version > kSchemaVersion)
    return fail(make_error(ErrorCode::kInvalidInput,
                           fmt::format("schema version {} is newer than this kernelpro's {}: use a newer kernelpro",
                                       *version, kSchemaVersion)));
  if (writer) {
    // WAL: readers do not block the writer, and a commit is durable once its frames are written.
    if (Status s = db->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"); !s)
      return fail(s.error());
    for (int v = *version; v < kSchemaVersion; ++v) {
      Status s = db->exec(std::string("BEGIN IMMEDIATE;") + kMigrations[v] +
                          fmt::format("PRAGMA user_version = {}; COMMIT;", v + 1));
      if (!s) {
        (void)db->exec("ROLLBACK");
        Error e = s.error();
        return fail(e.wrap(fmt::format("migrating to schema version {}", v + 1)));
      }
    }
    version = kSchemaVersion;
  } else if (*version < kSchemaVersion) {
    return fail(make_error(ErrorCode::kInvalidInput,
                           fmt::format("schema version {} is older than {}: open it once for writing (resume the run) "
                                       "to migrate it",
                                       *version, kSchemaVersion)));
  }
  return RunStore(std::move(*db), lock, *version);
}

RunStore::RunStore(RunStore&& o) noexcept : db_(std::move(o.db_)), lock_fd_(o.lock_fd_), version_(o.version_) {
  o.lock_fd_ = -1;
}

RunStore& RunStore::operator=(RunStore&& o) noexcept {
  if (this != &o) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    db_ = std::move(o.db_);
    lock_fd_ = o.lock_fd_;
    version_ = o.version_;
    o.lock_fd_ = -1;
  }
  return *this;
}

RunStore::~RunStore() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status RunStore::check_integrity() {
  KP_TRY(Stmt s, db_.prepare("PRAGMA integrity_check"));
  std::string problems;
  for (;;) {
    KP_TRY(bool row, s.step());
    if (!row) break;
    if (s.text_at(0) != "ok") problems += s.text_at(0) + "; ";
  }
  if (!problems.empty()) return make_error(ErrorCode::kIo, "the run store is damaged: " + problems);
  return ok_status();
}

std::optional<std::string> RunStore::meta(const std::string& key) {
  auto s = db_.prepare("SELECT value FROM meta WHERE key = ?");
  if (!s) return std::nullopt;
  s->bind(1, key);
  auto row = s->step();
  if (!row || !*row) return std::nullopt;
  return s->text_at(0);
}

Status RunStore::set_meta(const std::string& key, const std::string& value) {
  KP_TRY(
      Stmt s,
      db_.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"));
  s.bind(1, key).bind(2, value);
  return s.run();
}

Result<int64_t> RunStore::add_candidate(const std::string& cuda, const std::string& python) {
  const std::string sha = sha256_hex(cuda + std::string(1, '\0') + python);
  KP_TRY(Stmt ins,
         db_.prepare(
             "INSERT INTO candidates (files_sha, cuda, python) VALUES (?, ?, ?) ON CONFLICT(files_sha) DO NOTHING"));
  ins.bind(1, sha).bind(2, cuda).bind(3, python);
  KP_TRY_STATUS(ins.run());
  KP_TRY(Stmt q, db_.prepare("SELECT id FROM candidates WHERE files_sha = ?"));
  q.bind(1, sha);
  KP_TRY(bool row, q.step());
  if (!row) return make_error(ErrorCode::kInternal, "a candidate just stored is not found");
  return q.int_at(0);
}

Result<std::pair<std::string, std::string>> RunStore::candidate(int64_t id) {
  KP_TRY(Stmt q, db_.prepare("SELECT cuda, python FROM candidates WHERE id = ?"));
  q.bind(1, id);
  KP_TRY(bool row, q.step());
  if (!row) return make_error(ErrorCode::kNotFound, fmt::format("the run store has no candidate {}", id));
  return std::make_pair(q.text_at(0), q.text_at(1));
}

Result<int64_t> RunStore::add_node(const NodeRow& n) {
  KP_TRY(Stmt s,
         db_.prepare("INSERT INTO nodes (parent, kind, direction, candidate, measured, ok, seconds, joules, closed, "
                     "exhausted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  if (n.parent < 0)
    s.bind_null(1);
  else
    s.bind(1, n.parent);
  s.bind(2, n.kind).bind(3, n.direction);
  if (n.candidate > 0)
    s.bind(4, n.candidate);
  else
    s.bind_null(4);
  s.bind(5, int64_t{n.measured}).bind(6, int64_t{n.ok}).bind(7, n.seconds).bind(8, n.joules);
  s.bind(9, int64_t{n.closed}).bind(10, int64_t{n.exhausted});
  KP_TRY_STATUS(s.run());
  return db_.last_insert_id();
}

Status RunStore::record_evaluation(int64_t node, const EvaluationRow& e, bool ok, double seconds, double joules) {
  KP_TRY_STATUS(db_.exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> Status {
    KP_TRY(Stmt ev,
           db_.prepare("INSERT INTO evaluations (candidate, outcome, reason, seconds, joules, speedup, report_json) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)"));
    if (e.candidate > 0)
      ev.bind(1, e.candidate);
    else
      ev.bind_null(1);
    ev.bind(2, e.outcome)
        .bind(3, e.reason)
        .bind(4, e.seconds)
        .bind(5, e.joules)
        .bind(6, e.speedup)
        .bind(7, e.report_json);
    KP_TRY_STATUS(ev.run());
    KP_TRY(Stmt nd, db_.prepare("UPDATE nodes SET measured = 1, ok = ?, seconds = ?, joules = ?, "
                                "candidate = COALESCE(candidate, ?) WHERE id = ?"));
    nd.bind(1, int64_t{ok}).bind(2, seconds).bind(3, joules);
    if (e.candidate > 0)
      nd.bind(4, e.candidate);
    else
      nd.bind_null(4);
    nd.bind(5, node);
    return nd.run();
  };
  if (Status s = body(); !s) {
    (void)db_.exec("ROLLBACK");
    return s;
  }
  return db_.exec("COMMIT");
}

Status RunStore::set_node_flags(int64_t node, bool closed, bool exhausted) {
  KP_TRY(Stmt s, db_.prepare("UPDATE nodes SET closed = ?, exhausted = ? WHERE id = ?"));
  s.bind(1, int64_t{closed}).bind(2, int64_t{exhausted}).bind(3, node);
  return s.run();
}

Result<std::vector<NodeRow>> RunStore::nodes() {
  KP_TRY(Stmt s,
         db_.prepare("SELECT id, parent, kind, direction, candidate, measured, ok, seconds, joules, closed, exhausted "
                     "FROM nodes ORDER BY id"));
  std::vector<NodeRow> out;
  for (;;) {
    KP_TRY(bool row, s.step());
    if (!row) break;
    NodeRow n;
    n.id = s.int_at(0);
    n.parent = s.null_at(1) ? -1 : s.int_at(1);
    n.kind = s.text_at(2);
    n.direction = s.text_at(3);
    n.candidate = s.null_at(4) ? 0 : s.int_at(4);
    n.measured = s.int_at(5) != 0;
    n.ok = s.int_at(6) != 0;
    n.seconds = s.double_at(7);
    n.joules = s.double_at(8);
    n.closed = s.int_at(9) != 0;
    n.exhausted = s.int_at(10) != 0;
    out.push_back(std::move(n));
  }
  return out;
}

Result<std::vector<EvaluationRow>> RunStore::evaluations() {
  KP_TRY(Stmt s,
         db_.prepare(
             "SELECT candidate, outcome, reason, seconds, joules, speedup, report_json FROM evaluations ORDER BY id"));
  std::vector<EvaluationRow> out;
  for (;;) {
    KP_TRY(bool row, s.step());
    if (!row) break;
    out.push_back({s.null_at(0) ? 0 : s.int_at(0), s.text_at(1), s.text_at(2), s.double_at(3), s.double_at(4),
                   s.double_at(5), s.text_at(6)});
  }
  return out;
}

Result<std::vector<RunStore::FindingRow>> RunStore::findings(int64_t candidate) {
  KP_TRY(Stmt s, db_.prepare("SELECT f.tool, f.severity, f.text FROM findings f JOIN profiles p ON f.profile = p.id "
                             "WHERE p.candidate = ? ORDER BY f.id"));
  s.bind(1, candidate);
  std::vector<FindingRow> out;
  for (;;) {
    KP_TRY(bool row, s.step());
    if (!row) break;
    out.push_back({s.text_at(0), s.text_at(1), s.text_at(2)});
  }
  return out;
}

Result<int> RunStore::measured_candidates() {
  KP_TRY(Stmt s, db_.prepare("SELECT COUNT(DISTINCT candidate) FROM evaluations"));
  KP_TRY(bool row, s.step());
  return row ? static_cast<int>(s.int_at(0)) : 0;
}

Result<LlmSpend> RunStore::llm_spend() {
  KP_TRY(Stmt s, db_.prepare("SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
                             "COALESCE(SUM(cost_usd), 0) FROM llm_calls"));
  KP_TRY(bool row, s.step());
  LlmSpend out;
  if (row) out = {s.int_at(0), s.int_at(1), s.int_at(2), s.double_at(3)};
  return out;
}

Result<int64_t> RunStore::add_profile(int64_t candidate, const std::string& page_json) {
  KP_TRY(Stmt s, db_.prepare("INSERT INTO profiles (candidate, page_json) VALUES (?, ?)"));
  s.bind(1, candidate).bind(2, page_json);
  KP_TRY_STATUS(s.run());
  return db_.last_insert_id();
}

Status RunStore::add_finding(int64_t profile, const std::string& tool, const std::string& severity,
                             const std::string& text) {
  KP_TRY(Stmt s, db_.prepare("INSERT INTO findings (profile, tool, severity, text) VALUES (?, ?, ?, ?)"));
  s.bind(1, profile).bind(2, tool).bind(3, severity).bind(4, text);
  return s.run();
}

Result<int64_t> RunStore::add_llm_call(const LlmCallRow& c) {
  KP_TRY(Stmt s,
         db_.prepare("INSERT INTO llm_calls (role, provider, model, request_json, reply_json, error, input_tokens, "
                     "output_tokens, cost_usd, latency_s, cached) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  s.bind(1, c.role).bind(2, c.provider).bind(3, c.model).bind(4, c.request_json).bind(5, c.reply_json).bind(6, c.error);
  s.bind(7, c.input_tokens)
      .bind(8, c.output_tokens)
      .bind(9, c.cost_usd)
      .bind(10, c.latency_s)
      .bind(11, int64_t{c.cached});
  KP_TRY_STATUS(s.run());
  return db_.last_insert_id();
}

Result<int64_t> RunStore::add_lesson(const Lesson& l) {
  KP_TRY(Stmt s, db_.prepare("INSERT INTO lessons (task, task_category, bottleneck_class, direction, actions, outcome, "
                             "time_ratio, energy_ratio, evidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  s.bind(1, l.task).bind(2, l.task_category).bind(3, l.bottleneck_class).bind(4, l.direction).bind(5, l.actions);
  s.bind(6, l.outcome).bind(7, l.time_ratio).bind(8, l.energy_ratio).bind(9, l.evidence);
  KP_TRY_STATUS(s.run());
  return db_.last_insert_id();
}

namespace {

Result<std::vector<Lesson>> read_lessons(Stmt& s) {
  std::vector<Lesson> out;
  for (;;) {
    KP_TRY(bool row, s.step());
    if (!row) break;
    out.push_back({s.text_at(0), s.text_at(1), s.text_at(2), s.text_at(3), s.text_at(4), s.text_at(5), s.double_at(6),
                   s.double_at(7), s.text_at(8)});
  }
  return out;
}

constexpr const char* kLessonColumns =
    "task, task_category, bottleneck_class, direction, actions, outcome, time_ratio, energy_ratio, evidence";

}  // namespace

Result<std::vector<Lesson>> RunStore::lessons_in_order() {
  KP_TRY(Stmt s, db_.prepare(fmt::format("SELECT {} FROM lessons ORDER BY id", kLessonColumns)));
  return read_lessons(s);
}

Result<std::vector<Lesson>> RunStore::lessons(const std::string& bottleneck_class, const std::string& task_category,
                                              int limit) {
  KP_TRY(Stmt s,
         db_.prepare(fmt::format(
             "SELECT {} FROM lessons WHERE (?1 != '' AND bottleneck_class = ?1) OR (?2 != '' AND task_category = ?2) "
             "ORDER BY (?2 != '' AND task_category = ?2) DESC, (?1 != '' AND bottleneck_class = ?1) DESC, "
             "CASE WHEN time_ratio >= 1 THEN time_ratio WHEN time_ratio > 0 THEN 1.0 / time_ratio ELSE 1 END DESC, "
             "id DESC LIMIT ?3",
             kLessonColumns)));
  s.bind(1, bottleneck_class).bind(2, task_category).bind(3, int64_t{limit});
  return read_lessons(s);
}

}  // namespace kp::store
