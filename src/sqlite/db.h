// A thin RAII layer over the SQLite C API: a connection, prepared statements with typed binds,
// and errors as Result with SQLite's message. Nothing else: the schemas live with their users
// (store/run_store.cc, codesearch/index.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kp::sqlite {

class Stmt {
 public:
  Stmt() = default;
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  ~Stmt();

  // Binds by 1-based position; returns *this for chaining.
  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind_null(int i);
  // One step: true while a row is available, false when done. Errors carry SQLite's message.
  Result<bool> step();
  Status run();  // steps to the end, for statements without rows
  void reset();  // for running the statement again with new binds

  int64_t int_at(int col) const;
  double double_at(int col) const;
  std::string text_at(int col) const;
  bool null_at(int col) const;

 private:
  friend class Db;
  explicit Stmt(sqlite3_stmt* s, sqlite3* db) : s_(s), db_(db) {}
  sqlite3_stmt* s_ = nullptr;
  sqlite3* db_ = nullptr;
};

class Db {
 public:
  // Opens (creating it unless read_only) with a busy timeout, so that a second connection
  // waits for a writer instead of failing at once.
  static Result<Db> open(const std::string& path, bool read_only = false, int busy_timeout_ms = 5000);
  Db(Db&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  ~Db();

  Status exec(const std::string& sql);  // one or more statements, no rows
  Result<Stmt> prepare(const std::string& sql);
  int64_t last_insert_id() const;
  std::string error() const;

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_ = nullptr;
};

}  // namespace kp::sqlite
