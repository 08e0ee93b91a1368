#include "util/source_text.h"

#include <gtest/gtest.h>

namespace kp {
namespace {

TEST(NormalizedCpp, CommentsAndSpacingGoLiteralsAndDirectiveLinesStay) {
  EXPECT_EQ(normalized_cpp("int  a; // x\n\n/* y */ int b;\n#define N 4 // four\n"), "int a; int b;\n#define N 4\n");
  EXPECT_EQ(normalized_cpp("void f() { y[0] = 1; }"), normalized_cpp("void f()\n{\n  y[0] = 1;\n}\n"))
      << "line breaks outside directives are spacing";
  EXPECT_EQ(normalized_cpp("  x\t=\t1 ;  \r\n"), "x = 1 ;\n");
  // A comment marker inside a literal is the literal's.
  EXPECT_EQ(normalized_cpp("const char* s = \"a // b /* c\";  // d\n"), "const char* s = \"a // b /* c\";\n");
  EXPECT_EQ(normalized_cpp("char c = '/'; char d = '\\''; // e\n"), "char c = '/'; char d = '\\'';\n");
  EXPECT_EQ(normalized_cpp("auto r = R\"x(// not a comment )\" )x\";\n"), "auto r = R\"x(// not a comment )\" )x\";\n");
  EXPECT_EQ(normalized_cpp("int n = 1'000; // sep\n"), "int n = 1'000;\n");
  // A directive ends at its line: the break after it stays, and a backslash continues it.
  EXPECT_EQ(normalized_cpp("int x;\n  #define N 4 // four\nint a[N];"), "int x;\n#define N 4\nint a[N];\n");
  EXPECT_EQ(normalized_cpp("#define F(a) \\\n    ((a) + 1)\nint y;"), "#define F(a) \\\n((a) + 1)\nint y;\n");
  EXPECT_EQ(normalized_cpp("a/**/b"), "a b\n") << "a block comment separates tokens";
  EXPECT_EQ(normalized_cpp("// only a comment\n\n"), "");
}

TEST(NormalizedCpp, AnyChangeOfTokensChangesIt) {
  EXPECT_NE(normalized_cpp("y[i] = x[i];"), normalized_cpp("y[i] = x[i + 1];"));
  EXPECT_NE(normalized_cpp("s = \"a  b\";"), normalized_cpp("s = \"a b\";")) << "spacing inside a literal is kept";
  EXPECT_NE(normalized_cpp("a+ +b"), normalized_cpp("a++b")) << "a space between tokens is kept as one";
}

TEST(NormalizedPython, CommentsTrailingSpaceAndBlankLinesGoIndentationStays) {
  EXPECT_EQ(normalized_python("def f():   # doc\n\n    return 1  \n"), "def f():\n    return 1\n");
  EXPECT_EQ(normalized_python("s = '# not a comment'  # a comment\n"), "s = '# not a comment'\n");
  EXPECT_EQ(normalized_python("d = \"\"\"a\n\n# kept\"\"\"\nx = 1"), "d = \"\"\"a\n\n# kept\"\"\"\nx = 1\n");
  EXPECT_NE(normalized_python("if a:\n    b()\nc()\n"), normalized_python("if a:\n    b()\n    c()\n"));
}

TEST(CodeKey, EqualForTheSameCodeWithOtherCommentsAndSpacing) {
  const std::string cu = "// v1\n__global__ void k(float* y) { y[0] = 1.0f; }\n";
  const std::string py = "import torch\n\nclass ModelNew:  # the model\n    pass\n";
  EXPECT_EQ(code_key(cu, py), code_key("/* v2 */\n__global__ void k(float* y) {\n  y[0] = 1.0f;\n}\n", py + "\n\n"));
  EXPECT_NE(code_key(cu, py), code_key(cu, "import torch\nclass ModelNew:\n    pass\n    x = 1\n"));
  EXPECT_NE(code_key(cu, ""), code_key("", cu)) << "the CUDA file and the Python file are told apart";
}

}  // namespace
}  // namespace kp
