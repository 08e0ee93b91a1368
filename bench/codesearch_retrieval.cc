// Retrieval quality and speed of the CUTLASS/CuTe code index (codesearch/index.h) on the queries
// of bench/data/cutlass_queries.tsv, against a named baseline built in the same run: plain FTS5
// (SQLite's unicode61 tokenizer on the same chunks' raw text, one column, no weights, no
// synonyms), so the difference is what the code-aware tokens, the column weights and the
// synonyms give. Also: the time to index the whole tree, to update it when nothing changed and
// when one file changed, the index size, and the query latency.
//
// Usage: kp_bench_codesearch_retrieval [CUTLASS_DIR] [QUERIES.tsv]
//   (default: $CUTLASS_PATH, else the nvidia-cutlass package; the queries of bench/data: the set
//   the weights were chosen on, then the held-out set, each scored on its own)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "codesearch/chunker.h"
#include "codesearch/index.h"
#include "sqlite/db.h"
#include "sys/temp_dir.h"
#include "util/strings.h"

namespace fs = std::filesystem;
using namespace kp;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Query {
  std::string text;
  std::set<std::string> answers;
};

struct Scores {
  int hit1 = 0, hit5 = 0;
  double rr = 0;  // sum of reciprocal ranks of the first answering file (within 10)
  std::vector<double> latency_s;
  std::vector<std::string> misses;
};

void score(const Query& q, const std::vector<std::string>& files, double latency, Scores& s) {
  s.latency_s.push_back(latency);
  for (size_t i = 0; i < files.size() && i < 10; ++i)
    if (q.answers.count(files[i])) {
      if (i == 0) ++s.hit1;
      if (i < 5) ++s.hit5;
      if (i >= 5) s.misses.push_back(fmt::format("{} -> rank {}", q.text, i + 1));
      s.rr += 1.0 / static_cast<double>(i + 1);
      return;
    }
  s.misses.push_back(q.text + " -> " + (files.empty() ? "nothing" : files[0]));
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

// The baseline: every chunk's raw text in one unicode61 column, queried with the words OR'ed.
Result<sqlite::Db> plain_index(const fs::path& root, const fs::path& db_path, double* seconds) {
  const auto t0 = Clock::now();
  KP_TRY(auto db, sqlite::Db::open(db_path.string()));
  KP_TRY_STATUS(db.exec("CREATE VIRTUAL TABLE fts USING fts5(path UNINDEXED, body); BEGIN"));
  KP_TRY(auto add, db.prepare("INSERT INTO fts(path, body) VALUES (?, ?)"));
  for (const char* folder : {"include", "tools/util/include", "examples"}) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root / folder, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string ext = it->path().extension().string();
      if (!it->is_regular_file() || !(ext == ".h" || ext == ".hpp" || ext == ".cuh" || ext == ".inl" || ext == ".cu" ||
                                      ext == ".cpp" || ext == ".md"))
        continue;
      KP_TRY(std::string text, read_file(it->path().string()));
      const std::string rel = fs::relative(it->path(), root).generic_string();
      for (const auto& c : ext == ".md" ? codesearch::chunk_markdown(text) : codesearch::chunk_cpp(text)) {
        add.reset();
        KP_TRY_STATUS(add.bind(1, rel).bind(2, c.text).run());
      }
    }
  }
  KP_TRY_STATUS(db.exec("COMMIT"));
  *seconds = since(t0);
  return db;
}

Result<std::vector<std::string>> plain_search(sqlite::Db& db, const std::string& query) {
  std::vector<std::string> words;
  for (const auto& w : split(query, ' '))
    if (!w.empty()) {
      std::string clean;
      for (char c : w)
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') clean += c;
      if (!clean.empty()) words.push_back("\"" + clean + "\"");
    }
  KP_TRY(auto st, db.prepare("SELECT path FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 400"));
  st.bind(1, join(words, " OR "));
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (;;) {
    KP_TRY(bool row, st.step());
    if (!row) break;
    if (seen.insert(st.text_at(0)).second) files.push_back(st.text_at(0));
    if (files.size() >= 10) break;
  }
  return files;
}

Result<std::vector<Query>> load_queries(const fs::path& path) {
  KP_TRY(std::string text, read_file(path.string()));
  std::vector<Query> queries;
  for (const auto& line : split_lines(text)) {
    if (line.empty() || line[0] == '#') continue;
    auto cols = split(line, '\t');
    if (cols.size() != 2)
      return make_error(ErrorCode::kInvalidInput, fmt::format("{}: expected QUERY<TAB>FILES, got: {}", path.string(), line));
    Query q{cols[0], {}};
    for (const auto& f : split(cols[1], ',')) q.answers.insert(std::string(trim(f)));
    queries.push_back(std::move(q));
  }
  return queries;
}

int run(int argc, char** argv) {
  const char* env = std::getenv("CUTLASS_PATH");
  auto cutlass = codesearch::find_cutlass(argc > 1 ? argv[1] : "", env ? env : "",
                                          {fs::path(KP_SOURCE_DIR) / ".kp-tools" / "python"});
  if (!cutlass) {
    std::fprintf(stderr, "kp_bench_codesearch_retrieval: %s\n", cutlass.error().message.c_str());
    return 2;
  }
  // The tuned set, then the held-out one (or the one file named).
  std::vector<std::pair<std::string, fs::path>> sets;
  if (argc > 2) {
    sets.push_back({"queries", argv[2]});
  } else {
    sets.push_back({"tuned on", fs::path(KP_SOURCE_DIR) / "bench/data/cutlass_queries.tsv"});
    sets.push_back({"held out", fs::path(KP_SOURCE_DIR) / "bench/data/cutlass_queries_heldout.tsv"});
  }
  std::vector<std::vector<Query>> query_sets;
  for (const auto& [label, path] : sets) {
    auto q = load_queries(path);
    if (!q) {
      std::fprintf(stderr, "kp_bench_codesearch_retrieval: %s\n", q.error().message.c_str());
      return 2;
    }
    query_sets.push_back(std::move(*q));
  }
  auto scratch = sys::TempDir::create("kp-bench-codesearch-");
  if (!scratch) return 4;
  const fs::path db = scratch->path() / "index.db";

  fmt::print("CUTLASS {} at {} ({})\n", cutlass->version, cutlass->root.string(), cutlass->found_by);
  auto index = codesearch::Index::open(db);
  if (!index) return 4;
  auto full = index->update(*cutlass);
  if (!full) {
    std::fprintf(stderr, "indexing: %s\n", full.error().message.c_str());
    return 4;
  }
  auto again = index->update(*cutlass);
  // One file touched: only it is cut again.
  const fs::path touched = cutlass->include / "cute" / "tensor.hpp";
  std::error_code ec;
  const auto mtime = fs::last_write_time(touched, ec);
  double one_s = -1;
  int one_changed = -1;
  if (!ec) {
    fs::last_write_time(touched, mtime + std::chrono::seconds(1), ec);
    if (!ec) {
      if (auto one = index->update(*cutlass)) {
        one_s = one->seconds;
        one_changed = one->changed;
      }
      fs::last_write_time(touched, mtime, ec);
      (void)index->update(*cutlass);
    }
  }
  fmt::print("index: {} files, {} chunks, {:.1f} MiB, built in {:.2f} s; update with nothing changed {:.3f} s; "
             "with one file changed {:.3f} s ({} file cut again)\n",
             full->files, full->chunks, static_cast<double>(full->db_bytes) / (1 << 20), full->seconds,
             again ? again->seconds : -1.0, one_s, one_changed);

  double plain_s = 0;
  auto plain = plain_index(cutlass->root, scratch->path() / "plain.db", &plain_s);
  if (!plain) {
    std::fprintf(stderr, "baseline index: %s\n", plain.error().message.c_str());
    return 4;
  }
  for (size_t set = 0; set < sets.size(); ++set) {
  const std::vector<Query>& queries = query_sets[set];
  Scores ours, base;
  codesearch::SearchOptions so;
  so.limit = 10;
  so.snippet_lines = 8;
  fmt::print("\n{} ({}, {} queries)\n{:<70} {:>6} {:>6}\n", sets[set].second.filename().string(), sets[set].first,
             queries.size(), "query", "ours", "plain");
  for (const auto& q : queries) {
    auto t = Clock::now();
    auto hits = index->search(q.text, so);
    const double lat = since(t);
    std::vector<std::string> files;
    if (hits)
      for (const auto& h : *hits) files.push_back(h.path);
    score(q, files, lat, ours);
    t = Clock::now();
    auto pfiles = plain_search(*plain, q.text);
    score(q, pfiles ? *pfiles : std::vector<std::string>{}, since(t), base);
    auto rank = [&](const std::vector<std::string>& f) {
      for (size_t i = 0; i < f.size(); ++i)
        if (q.answers.count(f[i])) return fmt::format("{}", i + 1);
      return std::string("-");
    };
    fmt::print("{:<70} {:>6} {:>6}\n", q.text.substr(0, 70), rank(files), pfiles ? rank(*pfiles) : "err");
  }
  const double n = static_cast<double>(queries.size());
  fmt::print("\n{:<28} {:>10} {:>10}\n", "", "ours", "plain FTS5");
  fmt::print("{:<28} {:>9.1f}% {:>9.1f}%\n", "recall@1", 100 * ours.hit1 / n, 100 * base.hit1 / n);
  fmt::print("{:<28} {:>9.1f}% {:>9.1f}%\n", "recall@5", 100 * ours.hit5 / n, 100 * base.hit5 / n);
  fmt::print("{:<28} {:>10.3f} {:>10.3f}\n", "MRR@10", ours.rr / n, base.rr / n);
  fmt::print("{:<28} {:>8.2f}ms {:>8.2f}ms\n", "query latency median", 1e3 * percentile(ours.latency_s, 0.5),
             1e3 * percentile(base.latency_s, 0.5));
  fmt::print("{:<28} {:>8.2f}ms {:>8.2f}ms\n", "query latency p95", 1e3 * percentile(ours.latency_s, 0.95),
             1e3 * percentile(base.latency_s, 0.95));
  fmt::print("{:<28} {:>9.2f}s {:>9.2f}s\n", "index build", full->seconds, plain_s);
  fmt::print("recall@5 ratio against plain FTS5: {:.2f}x\n", base.hit5 > 0 ? static_cast<double>(ours.hit5) / base.hit5 : 0.0);
  if (!ours.misses.empty()) {
    fmt::print("\nmissed (not in the first five files):\n");
    for (const auto& m : ours.misses) fmt::print("  {}\n", m);
  }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
