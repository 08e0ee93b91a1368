#include "codesearch/index.h"

#include <gtest/gtest.h>

#include <thread>

#include "sys/temp_dir.h"
#include "util/strings.h"

namespace kp::codesearch {
namespace {

namespace fs = std::filesystem;

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  ASSERT_TRUE(write_file(p.string(), text).ok()) << p;
}

// A small CUTLASS tree: what find_cutlass looks for, two library headers, an example that uses
// them and a doc page.
struct Tree {
  sys::TempDir dir = sys::TempDir::create("kp-codesearch-").value();
  fs::path root = dir.path() / "cutlass";
  Tree() {
    put(root / "include/cute/tensor.hpp", "#pragma once\n// The tensor.\nstruct Tensor {};\n");
    put(root / "include/cutlass/cutlass.h", "#pragma once\n");
    put(root / "include/cutlass/version.h",
        "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n");
    put(root / "include/cute/atom/copy_traits_sm90_tma.hpp",
        "#pragma once\nnamespace cute {\n\n"
        "// Builds the TMA copy of a tile from global to shared memory: the tensor map and the\n"
        "// box each load brings in.\n"
        "template <class CopyOp, class GTensor, class SLayout>\n"
        "auto make_tma_copy(CopyOp const& op, GTensor const& gtensor, SLayout const& slayout) {\n"
        "  return detail::make_tma_copy_tiled(op, gtensor, slayout);\n"
        "}\n\n"
        "}  // namespace cute\n");
    put(root / "include/cutlass/pipeline/sm90_pipeline.hpp",
        "#pragma once\nnamespace cutlass {\n\n"
        "// A producer/consumer pipeline whose stages are guarded by mbarriers the TMA signals.\n"
        "class PipelineTmaAsync {\n public:\n  void producer_acquire(int stage);\n"
        "  void consumer_wait(int stage);\n};\n\n}  // namespace cutlass\n");
    put(root / "examples/48_hopper_warp_specialized_gemm/gemm.cu",
        "// A Hopper GEMM: loads its tiles with TMA.\n"
        "int main() {\n  auto tma = make_tma_copy(SM90_TMA_LOAD{}, g, s);\n"
        "  return 0;\n}\n");
    put(root / "media/docs/cute/0z_tma_tensors.md",
        "# TMA tensors\nHow CuTe describes a TMA load.\n\n## Multicast\nOne load, several CTAs.\n");
  }
  Cutlass cutlass() const { return find_cutlass(root.string(), "", {}, false).value(); }
};

std::vector<std::string> paths(const std::vector<Hit>& hits) {
  std::vector<std::string> out;
  for (const auto& h : hits) out.push_back(h.path);
  return out;
}

TEST(FindCutlass, TheFlagThenTheEnvironmentThenThePythonPackage) {
  Tree t;
  auto by_flag = find_cutlass((t.root / "include").string(), "/nowhere", {}, false);
  ASSERT_TRUE(by_flag.ok()) << by_flag.error().message;
  EXPECT_EQ(by_flag->found_by, "--cutlass");
  EXPECT_EQ(by_flag->version, "4.2.0");
  EXPECT_EQ(by_flag->root, fs::weakly_canonical(t.root)) << "include/ names the root above it";
  EXPECT_EQ(by_flag->include, by_flag->root / "include");

  auto by_env = find_cutlass("", t.root.string(), {}, false);
  ASSERT_TRUE(by_env.ok());
  EXPECT_EQ(by_env->found_by, "CUTLASS_PATH");

  // The nvidia-cutlass wheel: site-packages/cutlass_library/source/{include,tools/util/include}.
  sys::TempDir site = sys::TempDir::create("kp-site-").value();
  const fs::path source = site.path() / "cutlass_library" / "source";
  fs::create_directories(source);
  fs::copy(t.root, source, fs::copy_options::recursive);
  fs::create_directories(source / "tools/util/include/cutlass/util");
  auto by_package = find_cutlass("", "", {site.path() / "missing", site.path()}, false);
  ASSERT_TRUE(by_package.ok()) << by_package.error().message;
  EXPECT_EQ(by_package->found_by, "nvidia-cutlass package");
  EXPECT_EQ(by_package->util_include, by_package->root / "tools/util/include");

  auto wrong_flag = find_cutlass(site.path().string() + "/missing", t.root.string(), {}, false);
  ASSERT_FALSE(wrong_flag.ok()) << "a wrong --cutlass is an error, not a fall-back to CUTLASS_PATH";
  EXPECT_NE(wrong_flag.error().message.find("include/cute/tensor.hpp"), std::string::npos);
  auto wrong_env = find_cutlass("", "/nowhere", {site.path()}, false);
  ASSERT_FALSE(wrong_env.ok());
  EXPECT_NE(wrong_env.error().message.find("CUTLASS_PATH=/nowhere"), std::string::npos);
  auto none = find_cutlass("", "", {}, false);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  EXPECT_NE(none.error().message.find("nvidia-cutlass"), std::string::npos);
  EXPECT_NE(none.error().message.find("--cutlass DIR"), std::string::npos);
}

TEST(CodeIndex, RanksTheDefinitionFirstAndTheLibraryBeforeItsExamples) {
  Tree t;
  auto index = Index::open(t.dir.path() / "index.db");
  ASSERT_TRUE(index.ok()) << index.error().message;
  auto stats = index->update(t.cutlass());
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->files, 7);
  EXPECT_EQ(stats->changed, 7);
  EXPECT_GE(stats->chunks, 7);
  EXPECT_GT(stats->db_bytes, 0);

  auto hits = index->search("TMA load of a tile from global to shared memory");
  ASSERT_TRUE(hits.ok()) << hits.error().message;
  ASSERT_GE(hits->size(), 2u);
  EXPECT_EQ((*hits)[0].path, "include/cute/atom/copy_traits_sm90_tma.hpp");
  EXPECT_EQ((*hits)[0].name, "make_tma_copy");
  EXPECT_EQ((*hits)[0].start_line, 4) << "the chunk starts at its leading comment";
  EXPECT_EQ((*hits)[0].end_line, 9);
  EXPECT_NE((*hits)[0].snippet.find("    6  template <class CopyOp"), std::string::npos) << (*hits)[0].snippet;
  auto by_name = index->search("make_tma_copy");
  ASSERT_TRUE(by_name.ok());
  const auto p = paths(*by_name);
  EXPECT_EQ(p[0], "include/cute/atom/copy_traits_sm90_tma.hpp");
  const auto example = std::find(p.begin(), p.end(), "examples/48_hopper_warp_specialized_gemm/gemm.cu");
  ASSERT_NE(example, p.end());
  EXPECT_GT(example - p.begin(), 0) << "the example that uses it comes after the definition";

  // Other names for the same thing, and an architecture by its name.
  auto barrier = index->search("pipeline with mbarrier on hopper");
  ASSERT_TRUE(barrier.ok());
  ASSERT_FALSE(barrier->empty());
  EXPECT_EQ((*barrier)[0].path, "include/cutlass/pipeline/sm90_pipeline.hpp");
  EXPECT_EQ((*barrier)[0].name, "PipelineTmaAsync");
  auto doc = index->search("multicast");
  ASSERT_TRUE(doc.ok());
  ASSERT_FALSE(doc->empty());
  EXPECT_EQ((*doc)[0].path, "media/docs/cute/0z_tma_tensors.md");
  EXPECT_EQ((*doc)[0].kind, "section");

  auto nothing = index->search("the of a");
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.error().code, ErrorCode::kInvalidInput);
}

TEST(CodeIndex, AnUpdateCutsOnlyWhatChangedAndForgetsWhatIsGone) {
  Tree t;
  auto index = Index::open(t.dir.path() / "index.db").value();
  ASSERT_TRUE(index.update(t.cutlass()).ok());
  auto same = index.update(t.cutlass());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->changed, 0);
  EXPECT_EQ(same->removed, 0);
  EXPECT_EQ(same->files, 7);

  // One header gains a declaration (another size), one goes.
  put(t.root / "include/cute/tensor.hpp",
      "#pragma once\n// The tensor.\nstruct Tensor {};\n// Swizzled layouts.\nstruct Swizzle {};\n");
  fs::remove(t.root / "include/cutlass/pipeline/sm90_pipeline.hpp");
  auto changed = index.update(t.cutlass());
  ASSERT_TRUE(changed.ok()) << changed.error().message;
  EXPECT_EQ(changed->changed, 1);
  EXPECT_EQ(changed->removed, 1);
  EXPECT_EQ(changed->files, 6);
  auto swizzle = index.search("Swizzle");
  ASSERT_TRUE(swizzle.ok());
  ASSERT_FALSE(swizzle->empty());
  EXPECT_EQ((*swizzle)[0].path, "include/cute/tensor.hpp");
  EXPECT_EQ((*swizzle)[0].start_line, 4);
  auto gone = index.search("PipelineTmaAsync producer_acquire");
  ASSERT_TRUE(gone.ok());
  for (const auto& h : *gone) EXPECT_NE(h.path, "include/cutlass/pipeline/sm90_pipeline.hpp");

  // The same size but a newer modification time is a change too.
  put(t.root / "include/cute/tensor.hpp",
      "#pragma once\n// The tensor.\nstruct Tensor {};\n// Swizzled layouts.\nstruct Swizzler{};\n");
  fs::last_write_time(t.root / "include/cute/tensor.hpp",
                      fs::last_write_time(t.root / "include/cute/tensor.hpp") + std::chrono::seconds(2));
  auto touched = index.update(t.cutlass());
  ASSERT_TRUE(touched.ok());
  EXPECT_EQ(touched->changed, 1);

  // Another CUTLASS root: nothing of the old index stays.
  Tree other;
  fs::remove(other.root / "media/docs/cute/0z_tma_tensors.md");
  auto rebuilt = index.update(other.cutlass());
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_EQ(rebuilt->changed, 6);
  EXPECT_EQ(index.root(), fs::weakly_canonical(other.root));
  auto multicast = index.search("multicast");
  ASSERT_TRUE(multicast.ok());
  EXPECT_TRUE(multicast->empty());
}

TEST(CodeIndex, AnIndexOfAnotherLayoutIsBuiltAgainAndAMissingOneSaysHowToMakeIt) {
  Tree t;
  const fs::path db = t.dir.path() / "index.db";
  {
    auto index = Index::open(db).value();
    ASSERT_TRUE(index.update(t.cutlass()).ok());
  }
  {
    auto old = sqlite::Db::open(db.string(), false).value();
    ASSERT_TRUE(old.exec("PRAGMA user_version = 1").ok());
  }
  auto index = Index::open(db).value();
  EXPECT_TRUE(index.root().empty()) << "an index of an older kernelpro is dropped";
  auto again = index.update(t.cutlass());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->changed, 7);

  auto missing = Index::open(t.dir.path() / "none.db", /*read_only=*/true);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("kernelpro cutlass index"), std::string::npos);
  auto empty = Index::open(t.dir.path() / "empty.db").value();
  auto no_hits = empty.search("tma");
  ASSERT_FALSE(no_hits.ok());
  EXPECT_NE(no_hits.error().message.find("kernelpro cutlass index"), std::string::npos);
}

TEST(FtsQuery, AddsOtherNamesDropsStopwordsAndNamesArchitecturesByNumber) {
  const std::string q = fts_query("WGMMA bf16 atom on Hopper");
  EXPECT_NE(q.find("\"wgmma\""), std::string::npos);
  EXPECT_NE(q.find("\"gmma\""), std::string::npos);
  EXPECT_NE(q.find("\"bfloat16\""), std::string::npos);
  EXPECT_NE(q.find("\"sm90\""), std::string::npos);
  EXPECT_EQ(q.find("hopper"), std::string::npos);
  EXPECT_EQ(q.find("\"on\""), std::string::npos);
  EXPECT_NE(fts_query("cp async copy").find("\"cp_async\""), std::string::npos);
  EXPECT_EQ(fts_query("\"; DROP TABLE fts; --"), "\"drop\" OR \"table\" OR \"fts\"") << "only words reach FTS5";
  EXPECT_EQ(fts_query("of the a"), "");
  // The A, B and C of a GEMM are single letters in nearly every chunk: not searched for.
  EXPECT_EQ(fts_query("partition of A B and C fragments"), "\"partition\" OR \"fragments\"");
}

// Files, not chunks, are what a search ranks: the one whose name is the query's words before a
// twin that scores a little better on its text, and the one with several chunks about the query
// (a class and its members) before one with a single better chunk.
TEST(RankByFile, TheFileNamedByTheQueryAndTheFileWithMoreChunksAboutItComeFirst) {
  auto hit = [](std::string path, double score) { return Hit{std::move(path), 1, 2, "struct", "X", score, ""}; };
  const std::string base = "include/cutlass/epilogue/collective/sm90_epilogue_tma_warpspecialized.hpp";
  const std::string array = "include/cutlass/epilogue/collective/sm90_epilogue_array_tma_warpspecialized.hpp";
  std::vector<Hit> named = {hit(array, -10.3), hit(base, -10.0)};
  rank_by_file(named, "epilogue with TMA store warp specialized");
  EXPECT_EQ(paths(named), (std::vector<std::string>{base, array}))
      << "x1.2 for every part of its name (-12.0) against x1.15 for three of four (-11.8)";

  std::vector<Hit> chunks = {hit("include/a.hpp", -12), hit("include/b.hpp", -10), hit("include/b.hpp", -8),
                             hit("include/b.hpp", -6), hit("include/b.hpp", -5)};
  rank_by_file(chunks, "query words");
  EXPECT_EQ(paths(chunks), (std::vector<std::string>{"include/b.hpp", "include/b.hpp", "include/b.hpp", "include/b.hpp",
                                                      "include/a.hpp"}))
      << "b: -10 + 0.3 x (-8 - 6) = -14.2 against a's -12; its fourth chunk does not count";
  EXPECT_EQ(chunks[0].score, -10) << "chunks keep their own score, best first within the file";

  std::vector<Hit> fourth = {hit("include/a.hpp", -14.3), hit("include/b.hpp", -10), hit("include/b.hpp", -8),
                             hit("include/b.hpp", -6), hit("include/b.hpp", -5)};
  rank_by_file(fourth, "query words");
  EXPECT_EQ(fourth[0].path, "include/a.hpp") << "-14.3 beats b's -14.2: only two more chunks of a file count";
}

TEST(ShowLines, NumberedLinesOfAFileUnderTheRootOnly) {
  Tree t;
  auto text = show_lines(t.root, "include/cute/tensor.hpp", 2, 3);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "    2  // The tensor.\n    3  struct Tensor {};\n");
  auto capped = show_lines(t.root, "include/cutlass/version.h", 1, 3, /*max_lines=*/1);
  ASSERT_TRUE(capped.ok());
  EXPECT_NE(capped->find("(2 more lines; ask for include/cutlass/version.h:2-3)"), std::string::npos) << *capped;
  EXPECT_FALSE(show_lines(t.root, "include/cute/tensor.hpp", 99, 100).ok());
  EXPECT_FALSE(show_lines(t.root, "include/cute/none.hpp", 1, 2).ok());
  put(t.dir.path() / "secret.txt", "key\n");
  for (const std::string& escape :
       std::vector<std::string>{"../secret.txt", "include/../../secret.txt", (t.dir.path() / "secret.txt").string()}) {
    auto out = show_lines(t.root, escape, 1, 1);
    ASSERT_FALSE(out.ok()) << escape;
    EXPECT_NE(out.error().message.find("not under the CUTLASS root"), std::string::npos) << escape;
  }
  fs::create_symlink(t.dir.path(), t.root / "include" / "up");
  EXPECT_FALSE(show_lines(t.root, "include/up/secret.txt", 1, 1).ok()) << "a link out of the root is refused";

  auto entries = list_dir(t.root, "include/cute");
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(*entries, (std::vector<std::string>{"atom/", "tensor.hpp"}));
  EXPECT_FALSE(list_dir(t.root, "..").ok());
  EXPECT_FALSE(list_dir(t.root, "include/nothing").ok());
}

TEST(ParseLocation, PathAndLineRange) {
  EXPECT_EQ(parse_location("include/cute/tensor.hpp:10-40").value(),
            std::make_tuple(std::string("include/cute/tensor.hpp"), 10, 40));
  EXPECT_EQ(parse_location("a.hpp:7").value(), std::make_tuple(std::string("a.hpp"), 7, 7));
  EXPECT_EQ(parse_location("a.hpp").value(), std::make_tuple(std::string("a.hpp"), 1, 60));
  EXPECT_FALSE(parse_location("a.hpp:40-10").ok());
  EXPECT_FALSE(parse_location("a.hpp:x-y").ok());
  EXPECT_FALSE(parse_location(":1-2").ok());
}

}  // namespace
}  // namespace kp::codesearch
