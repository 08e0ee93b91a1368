// Source text with what cannot change the program taken out: comments, and spacing that is not
// indentation in Python. Two candidates whose normalized texts are equal compile to the same
// program (only __LINE__ can tell them apart), so a search measures them once.
//
// Not a parser: a small lexer that knows comments, string and character literals (raw strings
// in C++, triple quotes in Python) so that a "//" or "#" inside a literal is kept. Spacing
// inside literals is kept too.
#pragma once

#include <string>
#include <string_view>

namespace kp {

// C, C++ and CUDA: comments removed and every run of spacing, line breaks and comments made one
// space (none at a line's start or end), except that a preprocessor directive keeps its own
// line, since it ends at the line break (and goes on after a trailing backslash). Ends with a
// line break unless empty.
// Example: "int  a; // x\n\n/* y */ int b;\n#define N 4 // four\n" gives
// "int a; int b;\n#define N 4\n".
std::string normalized_cpp(std::string_view text);

// Python: comments removed, spaces at the end of each line and blank lines removed;
// indentation, which is syntax, kept.
// Example: "def f():   # doc\n\n    return 1  \n" gives "def f():\n    return 1\n".
std::string normalized_python(std::string_view text);

// The SHA-256 of a candidate's normalized files (the CUDA source, and the Python file of a
// KernelBench candidate, empty for a native one): equal for files that differ only in comments
// and spacing.
std::string code_key(std::string_view cuda, std::string_view python);

}  // namespace kp
