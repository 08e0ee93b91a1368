// Cutting C++ and Markdown into the pieces a search returns (DESIGN.md section 9): a C++ file at
// its declaration boundaries (each struct, class, function, alias or macro group at namespace
// scope, with its leading comment; a long one also by its members), a Markdown file at its
// headings. And the code-aware tokens the index holds for them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kp::codesearch {

struct Chunk {
  int start_line = 0;  // 1-based, inclusive, the leading comment included
  int end_line = 0;
  std::string kind;    // "struct", "class", "union", "enum", "function", "alias", "declaration", "macro", "section"
  std::string name;    // the declared name ("Copy_Traits", "Outer::member"), or the heading
  std::string scope;   // the class a member is of ("Outer"), empty at namespace scope
  std::string header;  // the declaration up to its body ("template <...> struct X : Y<...>"), or the heading
  std::string doc;     // the leading comment
  std::string text;    // the lines, comment included
};

// Declarations at namespace scope; a class longer than max_lines is given as its head (the
// declaration and its first lines) and then its members (named Outer::member), so that a search
// finds a class by a chunk about it and not by a long one that mentions everything. Consecutive
// short declarations (a run of aliases) are merged into one chunk of at most merge_lines.
std::vector<Chunk> chunk_cpp(std::string_view text, int max_lines = 40, int merge_lines = 30);

// A section per heading (its lines up to the next heading of any level).
std::vector<Chunk> chunk_markdown(std::string_view text);

// The words of `text` as the index holds them, space-separated and lower-case: each identifier
// whole and, when it has several, its parts, split at underscores and case changes with digits
// kept on the letters before them: "SM90_TMA_LOAD" gives sm90_tma_load sm90 tma load,
// "MainloopSm90TmaGmma" gives mainloopsm90tmagmma mainloop sm90 tma gmma,
// "F32BF16BF16" gives f32bf16bf16 f32 bf16 bf16.
std::string code_tokens(std::string_view text);

// The parts alone, for one identifier (no whole word): "make_tma_copy" -> make, tma, copy.
std::vector<std::string> identifier_parts(std::string_view word);

}  // namespace kp::codesearch
