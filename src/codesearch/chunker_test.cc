#include "codesearch/chunker.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace kp::codesearch {
namespace {

const Chunk* named(const std::vector<Chunk>& chunks, const std::string& name) {
  for (const auto& c : chunks)
    if (c.name == name) return &c;
  return nullptr;
}

TEST(CodeTokens, KeepsWholeIdentifiersAndTheirParts) {
  EXPECT_EQ(code_tokens("SM90_TMA_LOAD"), "sm90_tma_load sm90 tma load");
  EXPECT_EQ(code_tokens("MainloopSm90TmaGmmaWarpSpecialized"),
            "mainloopsm90tmagmmawarpspecialized mainloop sm90 tma gmma warp specialized");
  EXPECT_EQ(code_tokens("SM90_64x128x16_F32BF16BF16_SS"),
            "sm90_64x128x16_f32bf16bf16_ss sm90 64x128x16 f32 bf16 bf16 ss");
  EXPECT_EQ(code_tokens("make_tma_copy(x, 2);"), "make_tma_copy make tma copy x");
  // Acronyms end where a capitalised word starts; punctuation and lone digits go.
  EXPECT_EQ(code_tokens("TMALoad 1 + _ z"), "tmaload tma load z");
}

TEST(IdentifierParts, SplitsAtUnderscoresAndCaseWithDigitsOnTheLettersBefore) {
  EXPECT_EQ(identifier_parts("make_tma_copy"), (std::vector<std::string>{"make", "tma", "copy"}));
  EXPECT_EQ(identifier_parts("ClusterTransactionBarrier"),
            (std::vector<std::string>{"cluster", "transaction", "barrier"}));
  EXPECT_EQ(identifier_parts("Sm90TmaGmma"), (std::vector<std::string>{"sm90", "tma", "gmma"}));
  EXPECT_EQ(identifier_parts("GMMA"), (std::vector<std::string>{"gmma"}));
}

// A header in the style of CuTe's: namespaces, a comment over each declaration, templates whose
// parentheses and angle brackets must not be taken for a function's, macros, aliases.
constexpr const char* kHeader = R"(#pragma once
#include <cute/config.hpp>

#define CUTE_TMA_DEFAULT 1

namespace cute {
namespace detail {

// Round up to a multiple of the tile.
template <int N>
constexpr int round_up(int x) {
  return (x + N - 1) / N * N;
}

}  // namespace detail

using TmaIndex = int;
using TmaCount = int;

/// The copy of one tile by the Tensor Memory Accelerator.
template <class GmemTensor, class SmemLayout = decltype(make_layout(Int<1>{}))>
struct SM90_TMA_LOAD : TmaBase<sizeof(int)> {
  using Base = TmaBase<sizeof(int)>;
  static void copy(void const* desc, uint64_t& bar, void* smem) {
    asm volatile("cp.async.bulk.tensor" ::"l"(desc));
  }
};

enum class Major { K, MN };

int counter = 0;
}  // namespace cute
)";

TEST(ChunkCpp, CutsAtDeclarationsWithTheirLeadingComments) {
  const auto chunks = chunk_cpp(kHeader);
  const Chunk* f = named(chunks, "round_up");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, "function");
  EXPECT_EQ(f->start_line, 9);  // the comment over the template
  EXPECT_EQ(f->end_line, 13);
  EXPECT_NE(f->doc.find("Round up to a multiple"), std::string::npos);

  const Chunk* s = named(chunks, "SM90_TMA_LOAD");
  ASSERT_NE(s, nullptr) << "the template's default argument and base's sizeof(...) are not a function";
  EXPECT_EQ(s->kind, "struct");
  EXPECT_EQ(s->start_line, 20);
  EXPECT_EQ(s->end_line, 27);
  EXPECT_NE(s->header.find("struct SM90_TMA_LOAD : TmaBase<sizeof(int)>"), std::string::npos) << s->header;
  EXPECT_NE(s->doc.find("Tensor Memory Accelerator"), std::string::npos);
  EXPECT_NE(s->text.find("cp.async.bulk.tensor"), std::string::npos);

  const Chunk* e = named(chunks, "Major");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, "enum");
  const Chunk* m = named(chunks, "CUTE_TMA_DEFAULT");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->kind, "macro");

  // Two aliases in a row are one chunk; a namespace is never a chunk of its own.
  int aliases = 0;
  for (const auto& c : chunks) {
    EXPECT_NE(c.name, "cute");
    EXPECT_NE(c.name, "detail");
    if (c.kind == "alias") {
      ++aliases;
      EXPECT_EQ(c.start_line, 17);
      EXPECT_EQ(c.end_line, 18);
      EXPECT_NE(c.name.find("TmaIndex"), std::string::npos);
      EXPECT_NE(c.name.find("TmaCount"), std::string::npos);
    }
  }
  EXPECT_EQ(aliases, 1);
  for (size_t i = 1; i < chunks.size(); ++i) EXPECT_LE(chunks[i - 1].start_line, chunks[i].start_line);
}

TEST(ChunkCpp, ALongClassIsItsHeadAndThenItsMembers) {
  std::string text = "// A pipeline of stages.\nstruct PipelineTmaAsync {\n";
  for (int i = 0; i < 6; ++i) {
    text += fmt::format("  // Member {}.\n  void step{}(int phase) {{\n", i, i);
    for (int l = 0; l < 8; ++l) text += fmt::format("    work({}, phase);\n", l);
    text += "  }\n";
  }
  text += "};\n";
  const auto chunks = chunk_cpp(text, /*max_lines=*/40);
  const Chunk* head = named(chunks, "PipelineTmaAsync");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->start_line, 1);
  EXPECT_LT(head->end_line, 20) << "the head is the declaration and its first lines, not the whole class";
  const Chunk* member = named(chunks, "PipelineTmaAsync::step3");
  ASSERT_NE(member, nullptr);
  EXPECT_EQ(member->kind, "function");
  EXPECT_EQ(member->scope, "PipelineTmaAsync");
  EXPECT_NE(member->doc.find("Member 3."), std::string::npos);
  EXPECT_NE(member->text.find("void step3(int phase)"), std::string::npos);
  EXPECT_EQ(member->text.find("step4"), std::string::npos);
  // A short class is one chunk.
  const auto small = chunk_cpp("struct Small {\n  int a;\n  int b;\n};\n");
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].name, "Small");
  EXPECT_EQ(small[0].end_line, 4);
}

TEST(ChunkCpp, BracesInStringsCommentsAndMacrosDoNotConfuseIt) {
  const auto chunks = chunk_cpp(
      "#define OPEN {\n"
      "// a } in a comment\n"
      "void f() { const char* s = \"}\"; char c = '{'; }\n"
      "/* { */ void g() {}\n");
  ASSERT_NE(named(chunks, "f"), nullptr);
  const Chunk* g = named(chunks, "g");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->start_line, 4);
}

TEST(ChunkMarkdown, ASectionPerHeadingIgnoringFencedCode) {
  const auto chunks = chunk_markdown("intro\n# TMA\ntext\n```\n# not a heading\n```\n## Multicast\nmore\n");
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].name, "");
  EXPECT_EQ(chunks[1].name, "TMA");
  EXPECT_EQ(chunks[1].start_line, 2);
  EXPECT_EQ(chunks[1].end_line, 6);
  EXPECT_EQ(chunks[2].name, "Multicast");
  EXPECT_EQ(chunks[2].kind, "section");
  EXPECT_EQ(chunks[2].end_line, 8);
}

}  // namespace
}  // namespace kp::codesearch
