#include "codesearch/index.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "codesearch/chunker.h"
#include "sys/subprocess.h"
#include "util/strings.h"

namespace kp::codesearch {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// PRAGMA user_version of the index: its tables and how files are cut and tokenized. Raised with
// any change to either, so that an index of an older kernelpro is built again.
constexpr int64_t kSchemaVersion = 5;
constexpr double kExampleWeight = 0.8;  // an example's score against the library's
// A file for a newer architecture than the target's: what it defines cannot run there.
constexpr double kNewerArchWeight = 0.7;
// CUTLASS 2.x's per-level folders (gemm/warp, epilogue/threadblock, ...): the pre-CuTe
// iterators and warp-level MMAs of Volta to Ampere, which CuTe atoms replace on Hopper.
constexpr double kLegacyLevelWeight = 0.85;

// A file is ranked by its best chunk plus this share of each of its next two: the file that
// defines a thing has several chunks about it (the class, its members), one that only mentions
// it has one. Example: chunks scoring -10, -8 and -6 in one file give -14.2, and outrank a file
// whose single chunk scores -12.
constexpr double kFileRestWeight = 0.3;
// A chunk's score is raised by up to this share when its file's name is made of the query's
// words: "epilogue with TMA store warp specialized" and sm90_epilogue_tma_warpspecialized.hpp
// (every part but the architecture in the query: x1.2) against its _array_ twin (three of four
// parts: x1.15).
constexpr double kFileNameWeight = 0.2;

// The highest smNN in a path ("sm100_tile_scheduler.hpp": 100), 0 if none.
int path_arch(const std::string& path) {
  int best = 0;
  for (size_t at = path.find("sm"); at != std::string::npos; at = path.find("sm", at + 2)) {
    if (at > 0 && std::isalpha(static_cast<unsigned char>(path[at - 1]))) continue;
    size_t j = at + 2;
    int n = 0;
    while (j < path.size() && std::isdigit(static_cast<unsigned char>(path[j]))) n = n * 10 + (path[j++] - '0');
    if (j - at - 2 >= 2) best = std::max(best, n);
  }
  return best;
}

bool legacy_level_folder(const std::string& path) {
  return path.find("/threadblock/") != std::string::npos || path.find("/warp/") != std::string::npos;
}

// The share of the parts of the file's name (its stem split like an identifier; architecture
// tags like sm90 and single letters left out) that are words of the query, 0 to 1.
double file_name_coverage(const std::string& path, const std::set<std::string>& query_words) {
  int parts = 0, in_query = 0;
  for (const auto& p : identifier_parts(fs::path(path).stem().string())) {
    if (p.size() < 2 || path_arch(p) > 0) continue;
    ++parts;
    if (query_words.count(p)) ++in_query;
  }
  return parts == 0 ? 0.0 : static_cast<double>(in_query) / parts;
}

// "warp specialized" in two words: CUTLASS's one identifier part, warpspecialized.
bool says_warp_specialized(const std::set<std::string>& words) {
  return words.count("warp") && (words.count("specialized") || words.count("specialization"));
}

bool has_cute(const fs::path& include) {
  std::error_code ec;
  return fs::exists(include / "cute" / "tensor.hpp", ec) && fs::exists(include / "cutlass" / "cutlass.h", ec);
}

// The root (the directory holding include/) for a directory a user may name: a checkout, the
// package's source/, its cutlass_library/, a site-packages directory, or include/ itself.
std::optional<fs::path> root_of(const fs::path& d) {
  for (const fs::path& r : {d, d / "source", d / "cutlass_library" / "source"})
    if (has_cute(r / "include")) return r;
  if (has_cute(d)) return d.parent_path();
  return std::nullopt;
}

Cutlass describe(const fs::path& root, const std::string& how) {
  Cutlass c;
  std::error_code ec;
  c.root = fs::weakly_canonical(root, ec);
  if (ec) c.root = root;
  c.include = c.root / "include";
  if (fs::is_directory(c.root / "tools" / "util" / "include", ec)) c.util_include = c.root / "tools" / "util" / "include";
  c.version = cutlass_version(c.include);
  c.found_by = how;
  return c;
}

// The files indexed: C++ sources and headers and Markdown docs under these folders of the root.
const std::vector<std::string> kFolders = {"include", "tools/util/include", "examples", "media/docs", "docs"};

bool indexed_file(const fs::path& p) {
  static const std::set<std::string> ext = {".h", ".hpp", ".cuh", ".inl", ".cu", ".cpp", ".md"};
  return ext.count(p.extension().string()) > 0;
}

int64_t mtime_ns(const fs::path& p) {
  std::error_code ec;
  auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Other names for the same thing: a query with the first gets the second too.
const std::multimap<std::string, std::string>& synonyms() {
  static const std::multimap<std::string, std::string> m = {
      {"wgmma", "gmma"},        {"gmma", "wgmma"},          {"warpgroup", "gmma"},     {"smem", "shared"},
      {"shared", "smem"},       {"gmem", "global"},         {"global", "gmem"},        {"register", "rmem"},
      {"registers", "rmem"},    {"rmem", "register"},       {"mbarrier", "barrier"},   {"barrier", "mbarrier"},
      {"swizzle", "sw128"},     {"swizzled", "sw128"},      {"swizzled", "swizzle"},   {"multiply", "mma"},
      {"multiply", "gemm"},     {"matmul", "gemm"},         {"matmul", "mma"},         {"bfloat16", "bf16"},
      {"bf16", "bfloat16"},     {"half", "f16"},            {"fp16", "f16"},           {"fp16", "half"},
      {"fp32", "f32"},          {"float", "f32"},           {"fp8", "e4m3"},           {"fp8", "float_e4m3_t"},
      {"multicast", "mcast"},   {"descriptor", "desc"},     {"desc", "descriptor"},    {"predicate", "pred"},
      {"predication", "pred"},  {"reduction", "reduce"},    {"asynchronous", "async"}, {"accumulator", "accum"},
      {"accumulators", "accum"}, {"transaction", "tx"},     {"bytes", "tx"},           {"select", "selector"},
      {"fp8", "float8"},
  };
  return m;
}

const std::map<std::string, std::string>& architectures() {
  static const std::map<std::string, std::string> m = {{"hopper", "sm90"}, {"h100", "sm90"},     {"h200", "sm90"},
                                                       {"ampere", "sm80"}, {"a100", "sm80"},     {"turing", "sm75"},
                                                       {"volta", "sm70"},  {"blackwell", "sm100"}, {"b200", "sm100"}};
  return m;
}

const std::set<std::string>& stopwords() {
  static const std::set<std::string> s = {"a",   "an",   "the",  "of",   "to",    "from", "in",   "into", "with",
                                          "for", "and",  "or",   "on",   "by",    "is",   "are",  "how",  "what",
                                          "which", "do", "does", "use",  "using", "my",   "it",   "this", "that",
                                          "be",  "as",   "at",   "via",  "per",   "each", "its",  "can",  "where",
                                          "when", "i",   "we",   "get"};
  return s;
}

// A chunk's own names for the name column: a member's without its class's (which is in the
// header column), so that every member of a class does not rank as if it were the class.
std::string own_name(const Chunk& c) {
  if (c.scope.empty()) return c.name;
  std::string out;
  for (const auto& n : split(c.name, ',')) {
    std::string_view t = trim(n);
    const size_t at = t.rfind("::");
    out += std::string(at == std::string_view::npos ? t : t.substr(at + 2)) + " ";
  }
  return out;
}

}  // namespace

std::string cutlass_version(const fs::path& include) {
  auto text = read_file((include / "cutlass" / "version.h").string());
  if (!text) return "";
  auto num = [&](const std::string& name) -> std::string {
    const std::string key = "#define " + name + " ";
    const size_t at = text->find(key);
    if (at == std::string::npos) return "";
    size_t i = at + key.size();
    while (i < text->size() && (*text)[i] == ' ') ++i;
    size_t j = i;
    while (j < text->size() && std::isdigit(static_cast<unsigned char>((*text)[j]))) ++j;
    return text->substr(i, j - i);
  };
  const std::string major = num("CUTLASS_MAJOR"), minor = num("CUTLASS_MINOR"), patch = num("CUTLASS_PATCH");
  if (major.empty() || minor.empty()) return "";
  return fmt::format("{}.{}.{}", major, minor, patch.empty() ? "0" : patch);
}

Result<Cutlass> find_cutlass(const std::string& flag_dir, const std::string& env_path,
                             const std::vector<fs::path>& python_dirs, bool ask_python) {
  if (!flag_dir.empty()) {
    if (auto r = root_of(flag_dir)) return describe(*r, "--cutlass");
    return make_error(ErrorCode::kNotFound,
                      fmt::format("--cutlass {}: no CUTLASS there (expected include/cute/tensor.hpp and "
                                  "include/cutlass/cutlass.h under it)",
                                  flag_dir));
  }
  if (!env_path.empty()) {
    if (auto r = root_of(env_path)) return describe(*r, "CUTLASS_PATH");
    return make_error(ErrorCode::kNotFound,
                      fmt::format("CUTLASS_PATH={}: no CUTLASS there (expected include/cute/tensor.hpp and "
                                  "include/cutlass/cutlass.h under it); fix it or unset it",
                                  env_path));
  }
  for (const auto& d : python_dirs)
    if (auto r = root_of(d / "cutlass_library" / "source")) return describe(*r, "nvidia-cutlass package");
  if (ask_python) {
    sys::Command c{.argv = {"python3", "-c", "import cutlass_library, os; print(os.path.dirname(cutlass_library.__file__))"},
                   .timeout = std::chrono::seconds(30)};
    if (auto done = sys::run(c); done && done->success()) {
      const std::string dir(trim(done->stdout_text));
      if (auto r = root_of(fs::path(dir) / "source")) return describe(*r, "nvidia-cutlass package");
    }
  }
  return make_error(ErrorCode::kNotFound,
                    "no CUTLASS found: pass --cutlass DIR (a CUTLASS checkout), set CUTLASS_PATH, or install the "
                    "nvidia-cutlass Python package (scripts/setup.sh does, into .kp-tools/python)");
}

Result<Index> Index::open(const fs::path& db, bool read_only) {
  std::error_code ec;
  if (read_only && !fs::exists(db, ec))
    return make_error(ErrorCode::kNotFound, fmt::format("{}: no index there; run `kernelpro cutlass index`", db.string()));
  if (!read_only && db.has_parent_path()) fs::create_directories(db.parent_path(), ec);
  KP_TRY(auto d, sqlite::Db::open(db.string(), read_only));
  if (!read_only) {
    KP_TRY_STATUS(d.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"));
    // The index is a cache of the headers: one of another layout is dropped and built again.
    int64_t version = 0;
    {
      KP_TRY(auto v, d.prepare("PRAGMA user_version"));
      KP_TRY(bool row, v.step());
      if (row) version = v.int_at(0);
    }
    if (version != kSchemaVersion) {
      KP_TRY_STATUS(d.exec("DROP TABLE IF EXISTS fts; DROP TABLE IF EXISTS chunks; DROP TABLE IF EXISTS files; "
                           "DROP TABLE IF EXISTS meta;"));
      KP_TRY_STATUS(d.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion)));
    }
    KP_TRY_STATUS(d.exec(
        "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
        "CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, path TEXT UNIQUE, size INTEGER, mtime_ns INTEGER);"
        "CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, file INTEGER, start_line INTEGER, end_line "
        "INTEGER, kind TEXT, name TEXT);"
        "CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks(file);"
        "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(name, header, path, doc, body, "
        "tokenize = \"porter unicode61 tokenchars '_'\");"));
  }
  return Index(std::move(d));
}

fs::path Index::root() {
  auto st = db_.prepare("SELECT value FROM meta WHERE key = 'root'");
  if (!st) return {};
  auto row = st->step();
  if (!row || !*row) return {};
  return st->text_at(0);
}

Result<IndexStats> Index::update(const Cutlass& cutlass) {
  const auto t0 = Clock::now();
  IndexStats stats;
  KP_TRY_STATUS(db_.exec("BEGIN IMMEDIATE"));
  auto body = [&]() -> Status {
    if (root() != cutlass.root) {
      // Another CUTLASS: nothing of the old index applies.
      KP_TRY_STATUS(db_.exec("DELETE FROM fts; DELETE FROM chunks; DELETE FROM files;"));
      KP_TRY(auto set, db_.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('root', ?), ('version', ?)"));
      KP_TRY_STATUS(set.bind(1, cutlass.root.string()).bind(2, cutlass.version).run());
    }
    // What the index holds now.
    std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> known;  // path -> id, size, mtime
    {
      KP_TRY(auto st, db_.prepare("SELECT id, path, size, mtime_ns FROM files"));
      for (;;) {
        KP_TRY(bool row, st.step());
        if (!row) break;
        known[st.text_at(1)] = {st.int_at(0), st.int_at(2), st.int_at(3)};
      }
    }
    KP_TRY(auto del_fts, db_.prepare("DELETE FROM fts WHERE rowid IN (SELECT id FROM chunks WHERE file = ?)"));
    KP_TRY(auto del_chunks, db_.prepare("DELETE FROM chunks WHERE file = ?"));
    KP_TRY(auto del_file, db_.prepare("DELETE FROM files WHERE id = ?"));
    KP_TRY(auto add_file, db_.prepare("INSERT OR REPLACE INTO files(path, size, mtime_ns) VALUES (?, ?, ?)"));
    KP_TRY(auto add_chunk,
           db_.prepare("INSERT INTO chunks(file, start_line, end_line, kind, name) VALUES (?, ?, ?, ?, ?)"));
    KP_TRY(auto add_fts, db_.prepare("INSERT INTO fts(rowid, name, header, path, doc, body) VALUES (?, ?, ?, ?, ?, ?)"));
    auto forget = [&](int64_t id) -> Status {
      del_fts.reset();
      KP_TRY_STATUS(del_fts.bind(1, id).run());
      del_chunks.reset();
      KP_TRY_STATUS(del_chunks.bind(1, id).run());
      return ok_status();
    };

    std::set<std::string> seen;
    for (const auto& folder : kFolders) {
      const fs::path dir = cutlass.root / folder;
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) continue;
      for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
           !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec) || !indexed_file(it->path())) continue;
        const std::string rel = fs::relative(it->path(), cutlass.root, ec).generic_string();
        if (ec || !seen.insert(rel).second) continue;
        const int64_t size = static_cast<int64_t>(it->file_size(ec));
        const int64_t mtime = mtime_ns(it->path());
        auto k = known.find(rel);
        if (k != known.end() && std::get<1>(k->second) == size && std::get<2>(k->second) == mtime) continue;
        // New or changed: cut again.
        if (k != known.end()) KP_TRY_STATUS(forget(std::get<0>(k->second)));
        KP_TRY(std::string text, read_file(it->path().string()));
        add_file.reset();
        KP_TRY_STATUS(add_file.bind(1, rel).bind(2, size).bind(3, mtime).run());
        const int64_t file_id = db_.last_insert_id();
        const std::vector<Chunk> chunks =
            it->path().extension() == ".md" ? chunk_markdown(text) : chunk_cpp(text);
        const std::string path_tokens = code_tokens(rel);
        for (const auto& c : chunks) {
          add_chunk.reset();
          KP_TRY_STATUS(add_chunk.bind(1, file_id).bind(2, static_cast<int64_t>(c.start_line)).bind(3, static_cast<int64_t>(c.end_line)).bind(4, c.kind)
                            .bind(5, c.name).run());
          add_fts.reset();
          KP_TRY_STATUS(add_fts.bind(1, db_.last_insert_id())
                            .bind(2, code_tokens(own_name(c)))
                            .bind(3, code_tokens(c.scope + " " + c.header))
                            .bind(4, path_tokens)
                            .bind(5, code_tokens(c.doc))
                            .bind(6, code_tokens(c.text))
                            .run());
        }
        ++stats.changed;
      }
    }
    for (const auto& [path, row] : known) {
      if (seen.count(path)) continue;
      KP_TRY_STATUS(forget(std::get<0>(row)));
      del_file.reset();
      KP_TRY_STATUS(del_file.bind(1, std::get<0>(row)).run());
      ++stats.removed;
    }
    stats.files = static_cast<int>(seen.size());
    KP_TRY(auto count, db_.prepare("SELECT count(*) FROM chunks"));
    KP_TRY(bool row, count.step());
    if (row) stats.chunks = count.int_at(0);
    return ok_status();
  };
  if (Status s = body(); !s) {
    (void)db_.exec("ROLLBACK");
    return s.error();
  }
  KP_TRY_STATUS(db_.exec("COMMIT"));
  if (stats.changed > 0 || stats.removed > 0) KP_TRY_STATUS(db_.exec("INSERT INTO fts(fts) VALUES ('optimize')"));
  KP_TRY(auto size, db_.prepare("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"));
  KP_TRY(bool srow, size.step());
  if (srow) stats.db_bytes = size.int_at(0);
  stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return stats;
}

std::string fts_query(const std::string& query) {
  std::vector<std::string> terms;
  std::set<std::string> have;
  auto add = [&](const std::string& t) {
    // A single letter (the A, B, C of a GEMM) is in nearly every chunk's tokens: noise to BM25.
    if (t.size() < 2 || stopwords().count(t) || !have.insert(t).second) return;
    terms.push_back(t);
  };
  for (const auto& t : split(code_tokens(query), ' ')) {
    // An architecture by its name is by its number in the code ("hopper" is mostly in example
    // folder names, which would otherwise outrank the sm90 headers).
    if (auto arch = architectures().find(t); arch != architectures().end()) {
      add(arch->second);
      continue;
    }
    add(t);
    auto [from, to] = synonyms().equal_range(t);
    for (auto it = from; it != to; ++it) add(it->second);
  }
  // Phrases engineers write as two words for one identifier part.
  if (have.count("cp") && have.count("async")) add("cp_async");
  if (says_warp_specialized(have)) add("warpspecialized");
  std::vector<std::string> quoted;
  for (const auto& t : terms) quoted.push_back("\"" + t + "\"");
  return join(quoted, " OR ");
}

Result<std::vector<Hit>> Index::search(const std::string& query, const SearchOptions& o) {
  const std::string match = fts_query(query);
  if (match.empty())
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("\"{}\": no word to search for (give identifiers or words)", query));
  const fs::path base = root();
  if (base.empty()) return make_error(ErrorCode::kNotFound, "the index is empty; run `kernelpro cutlass index`");
  // Weights: the declared name, the declaration's head, the file's path, the leading comment,
  // the body.
  KP_TRY(auto st, db_.prepare("SELECT f.path, c.start_line, c.end_line, c.kind, c.name, "
                              "bm25(fts, 12.0, 6.0, 6.0, 2.0, 1.0) AS score FROM fts JOIN chunks c ON c.id = fts.rowid "
                              "JOIN files f ON f.id = c.file WHERE fts MATCH ? ORDER BY score LIMIT ?"));
  st.bind(1, match).bind(2, static_cast<int64_t>(std::max(1, o.limit) * 40));
  std::vector<Hit> hits;
  std::map<std::string, int> per_file;
  // The architectures the query names ("sm100", or "blackwell" made sm100 by fts_query).
  std::set<int> asked_arch;
  for (const auto& t : split(match, ' '))
    if (const int a = path_arch(std::string(t)); a > 0) asked_arch.insert(a);
  for (;;) {
    KP_TRY(bool row, st.step());
    if (!row) break;
    Hit h{st.text_at(0), static_cast<int>(st.int_at(1)), static_cast<int>(st.int_at(2)), st.text_at(3),
          st.text_at(4), st.double_at(5), ""};
    // The library before its examples: they use every name the library defines, and the
    // definition is what the question is after (BM25 is negative, better when lower).
    if (h.path.starts_with("examples/")) h.score *= kExampleWeight;
    if (const int a = path_arch(h.path); o.arch > 0 && a > o.arch && !asked_arch.count(a)) h.score *= kNewerArchWeight;
    if (legacy_level_folder(h.path)) h.score *= kLegacyLevelWeight;
    hits.push_back(std::move(h));
  }
  rank_by_file(hits, query);
  std::vector<Hit> kept;
  for (auto& h : hits) {
    if (++per_file[h.path] > std::max(1, o.per_file)) continue;
    kept.push_back(std::move(h));
    if (static_cast<int>(kept.size()) >= o.limit) break;
  }
  hits = std::move(kept);
  for (auto& h : hits) {
    if (o.snippet_lines <= 0) break;
    auto text = show_lines(base, h.path, h.start_line, std::min(h.end_line, h.start_line + o.snippet_lines - 1));
    if (text) h.snippet = *text;
  }
  return hits;
}

void rank_by_file(std::vector<Hit>& hits, const std::string& query) {
  std::set<std::string> words;  // as written, for the file names (the index's tokens are stemmed)
  for (const auto& t : split(code_tokens(query), ' ')) words.insert(std::string(t));
  if (says_warp_specialized(words)) words.insert("warpspecialized");
  for (auto& h : hits) h.score *= 1.0 + kFileNameWeight * file_name_coverage(h.path, words);
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.score < b.score; });
  std::map<std::string, double> file_score;
  std::map<std::string, int> seen;
  for (const auto& h : hits) {
    const int k = seen[h.path]++;
    if (k == 0)
      file_score[h.path] = h.score;
    else if (k <= 2)
      file_score[h.path] += kFileRestWeight * h.score;
  }
  std::stable_sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
    const double fa = file_score[a.path], fb = file_score[b.path];
    return fa != fb ? fa < fb : a.score < b.score;
  });
}

std::string format_hits(const std::vector<Hit>& hits) {
  std::string out;
  for (const auto& h : hits)
    out += fmt::format("{}:{}-{}  {} {}\n{}\n", h.path, h.start_line, h.end_line, h.kind, h.name, h.snippet);
  return out;
}

namespace {

// `rel` under `root`, refusing what leads out of it.
Result<fs::path> inside(const fs::path& root, const std::string& rel) {
  std::error_code ec;
  const fs::path r = fs::weakly_canonical(root, ec);
  const fs::path p = fs::weakly_canonical(root / rel, ec);
  auto [a, b] = std::mismatch(r.begin(), r.end(), p.begin(), p.end());
  if (ec || a != r.end())
    return make_error(ErrorCode::kInvalidInput, fmt::format("{}: not under the CUTLASS root {}", rel, root.string()));
  return p;
}

}  // namespace

Result<std::string> show_lines(const fs::path& root, const std::string& path, int start, int end, int max_lines) {
  KP_TRY(fs::path p, inside(root, path));
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    return make_error(ErrorCode::kNotFound, fmt::format("{}: no such file under {}", path, root.string()));
  KP_TRY(std::string text, read_file(p.string()));
  const auto lines = split_lines(text);
  const int n = static_cast<int>(lines.size());
  if (start < 1) start = 1;
  if (end <= 0 || end > n) end = n;
  if (start > n)
    return make_error(ErrorCode::kInvalidInput, fmt::format("{}: line {} is past its end ({} lines)", path, start, n));
  const int last = std::min(end, start + max_lines - 1);
  std::string out;
  for (int l = start; l <= last; ++l) out += fmt::format("{:>5}  {}\n", l, lines[static_cast<size_t>(l - 1)]);
  if (last < end) out += fmt::format("... ({} more lines; ask for {}:{}-{})\n", end - last, path, last + 1, end);
  return out;
}

Result<std::tuple<std::string, int, int>> parse_location(const std::string& where) {
  const size_t colon = where.rfind(':');
  if (colon == std::string::npos) return std::make_tuple(where, 1, 60);
  const std::string path = where.substr(0, colon);
  const std::string range = where.substr(colon + 1);
  auto number = [&](const std::string& s) -> std::optional<int> {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return std::nullopt;
    return std::stoi(s);
  };
  const size_t dash = range.find('-');
  auto a = number(range.substr(0, dash));
  auto b = dash == std::string::npos ? a : number(range.substr(dash + 1));
  if (path.empty() || !a || !b || *b < *a)
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("\"{}\": expected PATH:START-END (e.g. include/cute/tensor.hpp:10-40)", where));
  return std::make_tuple(path, *a, *b);
}

Result<std::vector<std::string>> list_dir(const fs::path& root, const std::string& dir) {
  KP_TRY(fs::path p, inside(root, dir.empty() ? "." : dir));
  std::error_code ec;
  if (!fs::is_directory(p, ec))
    return make_error(ErrorCode::kNotFound, fmt::format("{}: no such directory under {}", dir, root.string()));
  std::vector<std::string> dirs, files;
  for (const auto& e : fs::directory_iterator(p, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory(ec))
      dirs.push_back(name + "/");
    else
      files.push_back(name);
  }
  std::sort(dirs.begin(), dirs.end());
  std::sort(files.begin(), files.end());
  dirs.insert(dirs.end(), files.begin(), files.end());
  return dirs;
}

}  // namespace kp::codesearch
