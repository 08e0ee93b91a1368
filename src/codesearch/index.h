// The CUTLASS/CuTe code index (DESIGN.md section 9): finding a CUTLASS install, cutting its
// headers, examples and docs into chunks (codesearch/chunker.h), and an SQLite FTS5 index over
// them with code-aware tokens, ranked by BM25 with the declaration's head and the file's path
// weighted above its body, and the hits ranked by file (rank_by_file). Updating rebuilds only the
// files that changed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sqlite/db.h"
#include "util/result.h"

namespace kp::codesearch {

struct Cutlass {
  std::filesystem::path root;          // holds include/cute and include/cutlass
  std::filesystem::path include;       // root/include
  std::filesystem::path util_include;  // root/tools/util/include, when it exists
  std::string version;                 // "4.2.0", from include/cutlass/version.h
  std::string found_by;                // "--cutlass", "CUTLASS_PATH", "nvidia-cutlass package"
};

// Where CUTLASS is: `flag_dir` (--cutlass), else `env_path` (CUTLASS_PATH), else the
// nvidia-cutlass Python package's copy (cutlass_library/source) under each of `python_dirs`
// (site-packages-like directories) or found by asking `python3`. A directory may be the root of
// a CUTLASS checkout, the package's source/ or its include/. kNotFound says where it looked and
// how to get one.
Result<Cutlass> find_cutlass(const std::string& flag_dir, const std::string& env_path,
                             const std::vector<std::filesystem::path>& python_dirs, bool ask_python = true);

// The version in `include`/cutlass/version.h ("4.2.0"); empty if it cannot be read.
std::string cutlass_version(const std::filesystem::path& include);

struct IndexStats {
  int files = 0;      // indexed, after the update
  int changed = 0;    // (re)indexed by this update
  int removed = 0;    // gone since the last update
  int64_t chunks = 0; // in the index
  double seconds = 0;
  int64_t db_bytes = 0;
};

struct Hit {
  std::string path;  // relative to the CUTLASS root: include/cute/atom/copy_traits_sm90_tma.hpp
  int start_line = 0, end_line = 0;
  std::string kind, name;
  double score = 0;     // BM25, lower is better (as SQLite gives it)
  std::string snippet;  // the first lines of the chunk
};

struct SearchOptions {
  int limit = 5;
  int per_file = 1;       // chunks of one file among the hits
  int snippet_lines = 8;  // of each hit's text
  // The architecture the kernels are for, as a number ("90" for Hopper's sm_90a): files for a
  // newer one (sm100, sm120: instructions this GPU does not have) rank lower unless the query
  // names that architecture. 0: no such prior.
  int arch = 90;
};

class Index {
 public:
  // Opens (creating) the index at `db`; read-only opens an existing one.
  static Result<Index> open(const std::filesystem::path& db, bool read_only = false);

  // Brings the index up to date with the files under `cutlass` (headers, tools/util, examples,
  // docs): files whose size or modification time changed are cut again, files gone are removed.
  // A different root than the last update's rebuilds everything.
  Result<IndexStats> update(const Cutlass& cutlass);

  // Ranked hits for a query in words or identifiers ("TMA load of a tile", "make_tma_copy").
  Result<std::vector<Hit>> search(const std::string& query, const SearchOptions& options = {});

  // The root the index was built from (empty before the first update).
  std::filesystem::path root();

 private:
  explicit Index(sqlite::Db db) : db_(std::move(db)) {}
  sqlite::Db db_;
};

// Orders chunk hits (BM25 scores, lower is better) by file, in place. Each chunk's score is
// first raised by up to 20% by the share of its file name's parts that are words of `query`
// (sm90_epilogue_tma_warpspecialized.hpp for "epilogue with TMA store warp specialized": all
// but the architecture, x1.2); a file's score is then its best chunk's plus 0.3 of each of its
// next two (chunks of -10, -8, -6: -14.2), since the file that defines a thing has several
// chunks about it and one that only mentions it has one. Files best first; within a file,
// chunks best first. Scores stay the chunks' own (raised by the name only).
void rank_by_file(std::vector<Hit>& hits, const std::string& query);

// Hits as text for people and models: "path:start-end  kind name" and the snippet of each.
std::string format_hits(const std::vector<Hit>& hits);

// The FTS5 query for the words of `query`: its code tokens and, for the terms engineers use
// for the same thing under another name (WGMMA and GMMA, shared memory and smem, ...), theirs,
// OR'ed so that BM25 ranks by how many and how rare. Empty when the query has no word.
std::string fts_query(const std::string& query);

// Lines `start`..`end` (1-based, inclusive) of `path` under `root`, numbered; at most
// `max_lines`. Refuses a path outside the root.
Result<std::string> show_lines(const std::filesystem::path& root, const std::string& path, int start, int end,
                               int max_lines = 400);
// "PATH:START-END" (or PATH:LINE, or PATH alone for its first lines) into its parts.
Result<std::tuple<std::string, int, int>> parse_location(const std::string& where);

// The entries of a directory under the root ("include/cute/atom"), directories first, with a
// trailing / on each directory. Refuses a path outside the root.
Result<std::vector<std::string>> list_dir(const std::filesystem::path& root, const std::string& dir);

}  // namespace kp::codesearch
