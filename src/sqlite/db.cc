#include "sqlite/db.h"

#include <sqlite3.h>

#include <fmt/format.h>

namespace kp::sqlite {

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (s_) sqlite3_finalize(s_);
    s_ = o.s_;
    db_ = o.db_;
    o.s_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() {
  if (s_) sqlite3_finalize(s_);
}

Stmt& Stmt::bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  sqlite3_bind_double(s_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}

Result<bool> Stmt::step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return make_error(rc == SQLITE_BUSY ? ErrorCode::kUnavailable : ErrorCode::kIo,
                    fmt::format("sqlite: {} (in: {})", sqlite3_errmsg(db_), sqlite3_sql(s_)));
}

Status Stmt::run() {
  for (;;) {
    auto r = step();
    if (!r) return r.error();
    if (!*r) break;
  }
  reset();
  return ok_status();
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

int64_t Stmt::int_at(int col) const { return sqlite3_column_int64(s_, col); }
double Stmt::double_at(int col) const { return sqlite3_column_double(s_, col); }
std::string Stmt::text_at(int col) const {
  const auto* t = sqlite3_column_text(s_, col);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s_, col))) : "";
}
bool Stmt::null_at(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

Result<Db> Db::open(const std::string& path, bool read_only, int busy_timeout_ms) {
  sqlite3* db = nullptr;
  const int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    if (db) sqlite3_close(db);
    return make_error(ErrorCode::kIo, fmt::format("opening the database {}: {}", path, msg));
  }
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return Db(db);
}

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    if (db_) sqlite3_close(db_);
    db_ = o.db_;
    o.db_ = nullptr;
  }
  return *this;
}

Db::~Db() {
  if (db_) sqlite3_close(db_);
}

Status Db::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return make_error(ErrorCode::kIo, "sqlite: " + msg);
  }
  return ok_status();
}

Result<Stmt> Db::prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
    return make_error(ErrorCode::kInternal, fmt::format("sqlite: {} (preparing: {})", sqlite3_errmsg(db_), sql));
  return Stmt(s, db_);
}

int64_t Db::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
std::string Db::error() const { return sqlite3_errmsg(db_); }

}  // namespace kp::sqlite
