#include "build/diagnostics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "util/strings.h"

namespace kp::build {
namespace {

// Logs captured with CUDA 13.0 nvcc; each .log sits beside the .cu it came from.
std::string read_log(const std::string& relative) {
  std::ifstream in(std::string(KP_TEST_DATA_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing test data " << relative;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<Diagnostic> parse_file(const std::string& relative) {
  return parse_nvcc_diagnostics(read_log(relative));
}

TEST(DiagnosticsTest, UndefinedIdentifiers) {
  auto d = parse_file("nvcc/undefined_identifier.log");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].file, "undefined_identifier.cu");
  EXPECT_EQ(d[0].line, 4);
  EXPECT_EQ(d[0].column, 31);  // the caret under "factor"
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_EQ(d[0].tool, DiagnosticTool::kFrontEnd);
  EXPECT_EQ(d[0].message, "identifier \"factor\" is undefined");
  ASSERT_EQ(d[0].context.size(), 2u);
  EXPECT_EQ(d[0].context[0], "    if (i < n) out[i] = in[i] * factor;");
  EXPECT_EQ(d[0].context[1].find('^'), 32u);
  EXPECT_EQ(d[1].line, 5);
  EXPECT_EQ(d[1].column, 13);
  EXPECT_EQ(d[1].message, "identifier \"undeclared_bias\" is undefined");
}

TEST(DiagnosticsTest, ColumnOfAnUnindentedLineAndManyErrors) {
  auto d = parse_file("nvcc/type_mismatch.log");
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].line, 7);
  EXPECT_EQ(d[0].column, 10);  // "Pair p = 3;" at column 1 of the source: the 3
  EXPECT_EQ(d[0].message, "no suitable constructor exists to convert from \"int\" to \"Pair\"");
  EXPECT_EQ(d[3].message, "class \"Pair\" has no member \"c\"");
  for (const auto& x : d) EXPECT_EQ(x.severity, Severity::kError);
}

TEST(DiagnosticsTest, TemplateInstantiationErrorWithNote) {
  auto d = parse_file("nvcc/template_error.log");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_EQ(d[0].line, 6);
  EXPECT_EQ(d[0].column, 12);
  EXPECT_EQ(d[0].message, "no operator \"*\" matches these operands");
  ASSERT_EQ(d[0].context.size(), 3u);
  EXPECT_EQ(d[0].context[0], "            operand types are: Opaque * int");

  EXPECT_EQ(d[1].severity, Severity::kNote);
  EXPECT_EQ(d[1].code, "3328-D");
  EXPECT_EQ(d[1].line, 6);
  ASSERT_EQ(d[1].context.size(), 5u);
  EXPECT_EQ(d[1].context[2], "          detected during:");
  EXPECT_EQ(d[1].context[3], "            instantiation of \"T twice(T) [with T=Opaque]\" at line 11");
  EXPECT_EQ(d[1].context[4], "            instantiation of \"void apply(T *) [with T=Opaque]\" at line 14");
}

TEST(DiagnosticsTest, ErrorInAnIncludedHeader) {
  auto d = parse_file("nvcc/header_error.log");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].file, "header_error.cuh");
  EXPECT_EQ(d[0].line, 6);
  EXPECT_EQ(d[0].column, 10);  // "  return p[i].scale();": the p
  ASSERT_EQ(d[0].context.size(), 3u);
  EXPECT_NE(d[0].context[2].find("detected during instantiation of \"T load_scaled(const T *, int) "
                                 "[with T=float]\" at line 5 of header_error.cu"),
            std::string::npos);
}

TEST(DiagnosticsTest, MissingSemicolon) {
  auto d = parse_file("nvcc/missing_semicolon.log");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].line, 4);
  EXPECT_EQ(d[0].column, 3);
  EXPECT_EQ(d[0].message, "expected a \";\"");
}

TEST(DiagnosticsTest, FrontEndWarningsWithCodesAndNoErrors) {
  auto d = parse_file("nvcc/unused_variable.log");  // also holds a ptxas -v report
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_EQ(d[0].code, "177-D");
  EXPECT_EQ(d[0].line, 4);
  EXPECT_EQ(d[0].column, 7);
  EXPECT_EQ(d[0].message, "variable \"unused\" was declared but never referenced");
  EXPECT_EQ(d[0].context.size(), 2u);  // the "Remark: ... -diag-suppress" hint is not context
  EXPECT_EQ(d[1].code, "550-D");
  EXPECT_EQ(d[1].message, "variable \"scratch\" was set but never used");
  EXPECT_EQ(d[1].context.size(), 2u);  // ptxas info lines end it
}

TEST(DiagnosticsTest, HostPreprocessorFatalError) {
  auto d = parse_file("nvcc/missing_include.log");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].tool, DiagnosticTool::kHostCompiler);
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_EQ(d[0].file, "missing_include.cu");
  EXPECT_EQ(d[0].line, 2);
  EXPECT_EQ(d[0].column, 10);
  EXPECT_EQ(d[0].message, "kernel_helpers_that_do_not_exist.cuh: No such file or directory");
  ASSERT_EQ(d[0].context.size(), 2u);
  EXPECT_EQ(d[0].context[0], "    2 | #include \"kernel_helpers_that_do_not_exist.cuh\"");
}

TEST(DiagnosticsTest, HostCompilerErrorKeepsItsInFunctionPreamble) {
  auto d = parse_file("nvcc/host_compiler_error.log");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].tool, DiagnosticTool::kHostCompiler);
  EXPECT_EQ(d[0].line, 8);
  EXPECT_EQ(d[0].column, 27);
  EXPECT_NE(d[0].message.find("declared with attribute error: do not call checked_abort"), std::string::npos);
  ASSERT_EQ(d[0].context.size(), 3u);
  EXPECT_TRUE(d[0].context[0].starts_with("host_compiler_error.cu: In function "));
  EXPECT_TRUE(d[0].context[1].starts_with("    8 |"));
}

TEST(DiagnosticsTest, GccWarningOptionBecomesTheCode) {
  auto d = parse_file("nvcc/preprocessor_warning.log");
  ASSERT_EQ(d.size(), 2u);  // the host and device preprocessing passes both print it
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_EQ(d[0].code, "-Wcpp");
  EXPECT_EQ(d[0].message, "#warning \"this kernel is a placeholder\"");
  EXPECT_EQ(d[0].column, 2);
}

TEST(DiagnosticsTest, PtxasTooMuchSharedMemory) {
  auto d = parse_file("nvcc/too_much_smem.log");
  ASSERT_EQ(d.size(), 1u);  // ptxas info lines are not diagnostics
  EXPECT_EQ(d[0].tool, DiagnosticTool::kPtxas);
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_EQ(d[0].file, "");
  EXPECT_EQ(d[0].message,
            "Entry function '_Z8big_smemPf' uses too much shared data (0x40000 bytes, 0x38c00 max)");
  EXPECT_TRUE(d[0].context.empty());
}

TEST(DiagnosticsTest, PtxasErrorsInInlinePtx) {
  auto d = parse_file("nvcc/inline_ptx_error.log");
  ASSERT_EQ(d.size(), 2u);  // "Ptx assembly aborted due to errors" only repeats them
  EXPECT_EQ(d[0].tool, DiagnosticTool::kPtxas);
  EXPECT_TRUE(d[0].file.ends_with("_inline_ptx_error.ptx"));
  EXPECT_EQ(d[0].line, 27);
  EXPECT_EQ(d[0].message, "Unknown modifier '.f32x'");
  EXPECT_EQ(d[1].message, "Unexpected instruction types specified for 'mov'");
}

TEST(DiagnosticsTest, PtxasWarning) {
  auto d = parse_file("ptxas/launch_bounds_warning.log");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].tool, DiagnosticTool::kPtxas);
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_EQ(d[0].message,
            "Value of minnctapersm for entry _Z7boundedPf is out of range. minnctapersm will be ignored");
}

TEST(DiagnosticsTest, HostLinkerUndefinedReference) {
  auto d = parse_file("nvcc/undefined_reference.log");
  ASSERT_EQ(d.size(), 1u);  // collect2's "ld returned 1 exit status" only repeats it
  EXPECT_EQ(d[0].tool, DiagnosticTool::kLinker);
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_EQ(d[0].message, "undefined reference to `missing_host_helper'");
  ASSERT_EQ(d[0].context.size(), 1u);
  EXPECT_EQ(d[0].context[0], "in function `main'");
}

TEST(DiagnosticsTest, NvlinkUndefinedReference) {
  auto d = parse_file("nvcc/nvlink_undefined.log");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].tool, DiagnosticTool::kNvlink);
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_TRUE(d[0].message.starts_with("Undefined reference to '_Z21missing_device_helperf' in '/tmp/"));
}

TEST(DiagnosticsTest, NvccDriverFatal) {
  auto d = parse_file("nvcc/bad_arch.log");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].tool, DiagnosticTool::kDriver);
  EXPECT_EQ(d[0].severity, Severity::kError);
  EXPECT_EQ(d[0].message, "Unsupported gpu architecture 'compute_99'");
}

TEST(DiagnosticsTest, CleanBuildsAndEmptyLogsHaveNone) {
  EXPECT_TRUE(parse_nvcc_diagnostics("").empty());
  EXPECT_TRUE(parse_file("ptxas/simple.log").empty());
  EXPECT_TRUE(parse_file("ptxas/spills.log").empty());
  EXPECT_TRUE(parse_file("ptxas/device_function.log").empty());
}

TEST(DiagnosticsTest, SyntheticLinkerLines) {
  auto d = parse_nvcc_diagnostics(
      "/usr/bin/ld: cannot find -lfoo: No such file or directory\r\n"
      "/usr/bin/ld: a.o: warning: relocation in read-only section `.text'\r\n"
      "/usr/bin/ld: b.o:(.bss+0x0): multiple definition of `x'; a.o:(.bss+0x0): first defined here\r\n"
      "/usr/bin/ld: a.o: in function `f()':\r\n"
      "a.cpp:(.text+0x1): undefined reference to `g()'\r\n"
      "a.cpp:(.text+0x9): undefined reference to `h()'\r\n"
      "collect2: error: ld returned 1 exit status\r\n");
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].message, "cannot find -lfoo: No such file or directory");
  EXPECT_EQ(d[1].severity, Severity::kWarning);
  EXPECT_EQ(d[1].message, "relocation in read-only section `.text'");
  EXPECT_EQ(d[2].message, "multiple definition of `x'; a.o:(.bss+0x0): first defined here");
  EXPECT_TRUE(d[2].context.empty());
  EXPECT_EQ(d[3].message, "undefined reference to `g()'");
  EXPECT_EQ(d[3].context, std::vector<std::string>{"in function `f()'"});
  EXPECT_EQ(d[4].context, std::vector<std::string>{"in function `f()'"});
  for (const auto& x : d) EXPECT_EQ(x.tool, DiagnosticTool::kLinker);
}

TEST(DiagnosticsTest, SyntheticGccInstantiationPreamble) {
  auto d = parse_nvcc_diagnostics(
      "kernel.cu: In instantiation of 'void f(T) [with T = int]':\n"
      "kernel.cu:10:5:   required from here\n"
      "kernel.cu:3:5: error: 'x' was not declared in this scope\n"
      "    3 |   x = 1;\n"
      "      |   ^\n"
      "compilation terminated.\n"
      "kernel.cu: In function 'void g()':\n"  // a preamble with nothing after it is dropped
      "some unrelated output\n"
      "kernel.cu(99999999999): error: a line number too large to be true\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].line, 3);
  EXPECT_EQ(d[0].column, 5);
  ASSERT_EQ(d[0].context.size(), 4u);
  EXPECT_EQ(d[0].context[0], "kernel.cu: In instantiation of 'void f(T) [with T = int]':");
  EXPECT_EQ(d[0].context[1], "kernel.cu:10:5:   required from here");
  EXPECT_EQ(d[1].line, 0);
  EXPECT_TRUE(d[1].context.empty());
}

TEST(DiagnosticsTest, CollectTwoAloneIsALinkError) {
  auto d = parse_nvcc_diagnostics("collect2: error: ld returned 1 exit status\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].tool, DiagnosticTool::kLinker);
  EXPECT_EQ(d[0].message, "ld returned 1 exit status");
}

TEST(DiagnosticsTest, EnumStringsRoundTrip) {
  for (Severity s : {Severity::kError, Severity::kWarning, Severity::kRemark, Severity::kNote}) {
    auto back = severity_from_string(to_string(s));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, s);
  }
  EXPECT_FALSE(severity_from_string("fatal").ok());
  for (DiagnosticTool t : {DiagnosticTool::kFrontEnd, DiagnosticTool::kHostCompiler, DiagnosticTool::kPtxas,
                           DiagnosticTool::kNvlink, DiagnosticTool::kLinker, DiagnosticTool::kDriver}) {
    auto back = diagnostic_tool_from_string(to_string(t));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, t);
  }
  auto bad = diagnostic_tool_from_string("gcc");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
}

TEST(SummarizeDiagnosticsTest, ExactTextForFrontEndErrors) {
  EXPECT_EQ(summarize_diagnostics(parse_file("nvcc/undefined_identifier.log"), 10),
            "undefined_identifier.cu:4:31: error: identifier \"factor\" is undefined\n"
            "    if (i < n) out[i] = in[i] * factor;\n"
            "                                ^\n"
            "undefined_identifier.cu:5:13: error: identifier \"undeclared_bias\" is undefined\n"
            "    out[0] += undeclared_bias;\n"
            "              ^\n");
}

TEST(SummarizeDiagnosticsTest, LimitsErrorsAndCountsTheRest) {
  std::string text = summarize_diagnostics(parse_file("nvcc/type_mismatch.log"), 2);
  EXPECT_NE(text.find("type_mismatch.cu:7:10: error:"), std::string::npos);
  EXPECT_NE(text.find("type_mismatch.cu:8:"), std::string::npos);
  EXPECT_EQ(text.find("type_mismatch.cu:9:"), std::string::npos);
  EXPECT_TRUE(text.ends_with("... 2 more errors not shown\n")) << text;
  EXPECT_EQ(summarize_diagnostics(parse_file("nvcc/type_mismatch.log"), 0), "... 4 more errors not shown\n");
}

TEST(SummarizeDiagnosticsTest, ErrorsComeBeforeEarlierWarnings) {
  std::string log = read_log("nvcc/unused_variable.log") + read_log("nvcc/missing_semicolon.log");
  std::string text = summarize_diagnostics(parse_nvcc_diagnostics(log), 2);
  EXPECT_TRUE(text.starts_with("missing_semicolon.cu:4:3: error: expected a \";\"\n")) << text;
  EXPECT_NE(text.find("unused_variable.cu:4:7: warning: variable \"unused\""), std::string::npos);
  EXPECT_TRUE(text.ends_with("... 1 more warning not shown\n")) << text;
}

TEST(SummarizeDiagnosticsTest, NotesStayWithTheirErrorAndToolsNameUnlocatedOnes) {
  std::string text = summarize_diagnostics(parse_file("nvcc/template_error.log"), 1);
  EXPECT_NE(text.find("template_error.cu:6:12: error: no operator"), std::string::npos);
  EXPECT_NE(text.find("template_error.cu:6:12: note: built-in operator*"), std::string::npos);
  EXPECT_NE(text.find("instantiation of \"void apply(T *) [with T=Opaque]\" at line 14"), std::string::npos);
  EXPECT_EQ(text.find("more"), std::string::npos) << text;

  EXPECT_EQ(summarize_diagnostics(parse_file("nvcc/too_much_smem.log"), 5),
            "ptxas: error: Entry function '_Z8big_smemPf' uses too much shared data (0x40000 bytes, 0x38c00 "
            "max)\n");
  EXPECT_EQ(summarize_diagnostics(parse_file("nvcc/undefined_reference.log"), 5),
            "ld: error: undefined reference to `missing_host_helper'\nin function `main'\n");
}

// A CuTe candidate that gives make_tma_copy the three-mode (stage) shared-memory layout instead
// of one stage's (cute_tma_rank.cu:322, built against the nvidia-cutlass 4.2 headers): nine
// errors and 29 KB of instantiation chains, every one from that line.
TEST(SummarizeDiagnosticsTest, DeepTemplateErrorsAreCutToTheErrorTheCallAndTheCandidatesLine) {
  const std::string log = read_log("nvcc/cute_tma_rank.log");
  const auto d = parse_nvcc_diagnostics(log);
  ASSERT_EQ(std::count_if(d.begin(), d.end(), [](const Diagnostic& x) { return x.severity == Severity::kError; }), 9);
  const std::string text = summarize_diagnostics(d, 5);
  EXPECT_LT(text.size(), 2500u) << text;
  EXPECT_GT(log.size(), 25000u);
  // The first error, at its CUTLASS-relative path (what `kernelpro cutlass show` reads) ...
  EXPECT_TRUE(text.starts_with("include/cute/layout.hpp:1150:5: error: static assertion failed\n")) << text;
  EXPECT_NE(text.find("static_assert(tuple_size<Tiler>::value <= Layout<LShape,LStride>::rank);"), std::string::npos);
  // ... the innermost frame, the CuTe function the candidate called, and the candidate's line.
  EXPECT_NE(text.find("instantiation of \"auto cute::composition("), std::string::npos) << text;
  EXPECT_NE(text.find("instantiation of \"auto cute::make_tma_copy(const CopyOp &, const cute::Tensor<GEngine, "
                      "GLayout> &, const SLayout &) [with"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("at line 322 of cute_tma_rank.cu"), std::string::npos) << text;
  EXPECT_NE(text.find("... (1 more instantiation inside library headers)"), std::string::npos) << text;
  EXPECT_EQ(text.find("dist-packages"), std::string::npos) << "install prefixes are cut";
  // The other eight come from the same line: counted, not shown.
  EXPECT_TRUE(text.ends_with("... 8 more errors from the same instantiation at cute_tma_rank.cu:322 not shown\n"))
      << text;
  for (const auto& line : split_lines(text)) EXPECT_LE(line.size(), 320u) << line;
  // The parsed diagnostics keep everything: only the summary is cut.
  EXPECT_NE(d[0].file.find("dist-packages"), std::string::npos);
}

TEST(SummarizeDiagnosticsTest, DuplicatesShownOnceAndEmptyIsEmpty) {
  std::string text = summarize_diagnostics(parse_file("nvcc/preprocessor_warning.log"), 5);
  EXPECT_EQ(text,
            "preprocessor_warning.cu:2:2: warning: #warning \"this kernel is a placeholder\"\n"
            "    2 | #warning \"this kernel is a placeholder\"\n"
            "      |  ^~~~~~~\n");
  EXPECT_EQ(summarize_diagnostics({}, 5), "");
}

}  // namespace
}  // namespace kp::build
