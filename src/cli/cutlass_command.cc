// `kernelpro cutlass`: the CUTLASS/CuTe code index (codesearch/index.h) from the command line.
//
//   kernelpro cutlass index                    build or update the index (only changed files)
//   kernelpro cutlass search TMA load a tile   ranked chunks with path:lines and their first lines
//   kernelpro cutlass show include/cute/tensor.hpp:10-40
//   kernelpro cutlass ls include/cute/atom
#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "codesearch/index.h"
#include "util/strings.h"

namespace kp::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void print_stats(const codesearch::IndexStats& s, const codesearch::Cutlass& c, const fs::path& db, bool as_json) {
  if (as_json) {
    std::cout << json{{"root", c.root.string()},          {"version", c.version}, {"found_by", c.found_by},
                      {"db", db.string()},                {"files", s.files},     {"changed", s.changed},
                      {"removed", s.removed},             {"chunks", s.chunks},   {"seconds", s.seconds},
                      {"db_bytes", s.db_bytes}}
                     .dump(2)
              << "\n";
    return;
  }
  std::cout << fmt::format("CUTLASS {} at {} ({})\n", c.version.empty() ? "(version unknown)" : c.version,
                           c.root.string(), c.found_by);
  std::cout << fmt::format("index {}: {} files, {} chunks, {:.1f} MiB; {} file(s) indexed again, {} removed, in {:.2f} s\n",
                           db.string(), s.files, s.chunks, static_cast<double>(s.db_bytes) / (1 << 20), s.changed,
                           s.removed, s.seconds);
}

}  // namespace

int run_cutlass(const CutlassFlags& flags, const CommonFlags& common) {
  auto cutlass = locate_cutlass(common);
  if (!cutlass.ok()) return exit_for(cutlass.error());
  const fs::path db = cutlass_index_path(*cutlass, flags.db);
  const std::string words = join(flags.words, " ");

  if (flags.action == "show") {
    auto where = codesearch::parse_location(words);
    if (!where.ok()) return exit_for(where.error());
    auto [path, start, end] = *where;
    auto text = codesearch::show_lines(cutlass->root, path, start, end);
    if (!text.ok()) return exit_for(text.error());
    std::cout << path << "\n" << *text;
    return 0;
  }
  if (flags.action == "ls") {
    auto entries = codesearch::list_dir(cutlass->root, words);
    if (!entries.ok()) return exit_for(entries.error());
    for (const auto& e : *entries) std::cout << e << "\n";
    return 0;
  }

  auto index = codesearch::Index::open(db);
  if (!index.ok()) return exit_for(index.error());
  // Searching brings the index up to date first: a look at each file's size and time when
  // nothing changed, so that no search reads an index older than the headers.
  auto stats = index->update(*cutlass);
  if (!stats.ok()) return exit_for(stats.error());
  if (flags.action == "index") {
    print_stats(*stats, *cutlass, db, common.json);
    return 0;
  }
  if (stats->changed > 0 && !common.json)
    std::fprintf(stderr, "kernelpro: indexed %d file(s) of CUTLASS %s in %.1f s (%s)\n", stats->changed,
                 cutlass->version.c_str(), stats->seconds, db.string().c_str());

  codesearch::SearchOptions so;
  so.limit = flags.limit;
  so.per_file = flags.per_file;
  auto hits = index->search(words, so);
  if (!hits.ok()) return exit_for(hits.error());
  if (common.json) {
    json j = json::array();
    for (const auto& h : *hits)
      j.push_back({{"path", h.path},
                   {"start_line", h.start_line},
                   {"end_line", h.end_line},
                   {"kind", h.kind},
                   {"name", h.name},
                   {"score", h.score},
                   {"snippet", h.snippet}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (hits->empty()) {
    std::cout << fmt::format("nothing in CUTLASS {} matches \"{}\"\n", cutlass->version, words);
    return 0;
  }
  std::cout << codesearch::format_hits(*hits);
  return 0;
}

}  // namespace kp::cli
