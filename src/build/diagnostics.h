// Diagnostics of an nvcc build, parsed from its combined stdout+stderr into plain structs, and a
// short summary of them for people and for the LLM that repairs the candidate.
//
// nvcc's log interleaves several tools, each with its own format (all observed with CUDA 13.0,
// see tests/data/nvcc/*.log):
//   front end (EDG)   file.cu(12): error: identifier "x" is undefined
//                     file.cu(12): warning #177-D: variable "y" was declared but never referenced
//                     followed by indented lines: a source excerpt, a caret line, "detected during
//                     instantiation of ... at line 14", and a blank line
//   host gcc          file.cu:12:5: error: ...   (also the preprocessor: a missing #include)
//                     preceded by "file.cu: In function '...':", followed by "  12 | code" lines
//   ptxas             ptxas error   : Entry function '_Z1kPf' uses too much shared data (...)
//                     ptxas /tmp/x.ptx, line 27; error   : Unknown modifier '.f32x'
//   nvlink            nvlink error   : Undefined reference to '_Z1fv' in '/tmp/x.o'
//   ld                x.cudafe1.cpp:(.text+0x39): undefined reference to `f'
//                     /usr/bin/ld: cannot find -lfoo: No such file or directory
//   nvcc driver       nvcc fatal   : Unsupported gpu architecture 'compute_99'
// Summary lines ("2 errors detected in the compilation of ...", "collect2: error: ld returned 1
// exit status", "ptxas fatal : Ptx assembly aborted due to errors") and the ptxas -v resource
// report (see ptxas_report.h) are not diagnostics.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace kp::build {

enum class Severity {
  kError,  // the build fails ("error", "fatal error", "catastrophic error", "fatal")
  kWarning,
  kRemark,
  kNote,  // explains the diagnostic before it (EDG "note #3328-D", gcc "note:")
};

// "error", "warning", "remark", "note".
const char* to_string(Severity severity);
// Inverse of to_string; kInvalidInput for any other text.
Result<Severity> severity_from_string(std::string_view text);

// Which tool reported a diagnostic.
enum class DiagnosticTool {
  kFrontEnd,      // nvcc's C++ front end (EDG, cudafe++)
  kHostCompiler,  // the host compiler or its preprocessor (gcc)
  kPtxas,         // the PTX assembler
  kNvlink,        // the device linker
  kLinker,        // the host linker (ld)
  kDriver,        // nvcc itself ("nvcc fatal", "nvcc warning")
};

// "front_end", "host_compiler", "ptxas", "nvlink", "ld", "nvcc".
const char* to_string(DiagnosticTool tool);
// Inverse of to_string; kInvalidInput for any other text.
Result<DiagnosticTool> diagnostic_tool_from_string(std::string_view text);

struct Diagnostic {
  std::string file;  // as the log names it (relative if nvcc was given a relative path); empty
                     // when the tool names no file (ptxas about a kernel, nvlink, ld, nvcc)
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown. EDG prints no column: it is read off the caret
                     // line under the source excerpt when there is one
  Severity severity = Severity::kError;
  std::string message;  // the text after "error: ", without the code
  // The lines that belong to it, verbatim without the trailing newline: a preamble printed just
  // before it ("file.cu: In function 'void f()':", ld's "in function `main'"), then the
  // following indented lines (source excerpt, caret, "operand types are", "detected during
  // instantiation of ...").
  std::vector<std::string> context;
  DiagnosticTool tool = DiagnosticTool::kFrontEnd;
  std::string code;  // the tool's number or flag for it when printed ("177-D", "-Wcpp"), or ""
};

// Parses the combined output of one nvcc invocation. Pure, never fails: lines that are not
// diagnostics are skipped, so any text (even empty) gives a possibly empty list, in log order.
// Duplicates are kept (nvcc runs the preprocessor once per pass and may repeat a message);
// summarize_diagnostics drops them.
std::vector<Diagnostic> parse_nvcc_diagnostics(std::string_view log);

// A short text for people and LLMs. Shows at most `max_errors` diagnostics in full, errors first
// (in log order), then, while room is left, warnings and remarks; each as
//   file:line:col: error: message        (":col" or ":line:col" left out when unknown; the tool
//   <context lines>                       name stands in for an empty file: "ptxas: error: ...")
// followed by the notes that come right after it in the log, then one line counting what was
// left out ("... and 3 more errors, 1 more warning"). Exact duplicates are shown once and not
// counted. Returns "" for an empty list.
std::string summarize_diagnostics(const std::vector<Diagnostic>& diagnostics, size_t max_errors);

}  // namespace kp::build
