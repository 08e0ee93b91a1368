#include "profile/sass/sass_parser.h"

#include <cxxabi.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <string>

#include "util/strings.h"

namespace kp::profile {

std::string SassInstruction::full_opcode() const {
  std::string out = opcode;
  for (const auto& m : modifiers) out += "." + m;
  return out;
}

bool SassInstruction::has_modifier(std::string_view m) const {
  for (const auto& x : modifiers)
    if (x == m) return true;
  return false;
}

const SassFunction* SassListing::find(std::string_view mangled_name, std::string_view arch) const {
  for (const auto& f : functions)
    if (f.mangled_name == mangled_name && (arch.empty() || f.arch == arch)) return &f;
  return nullptr;
}

std::string demangle_name(const std::string& mangled) {
  int status = 0;
  char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) {
    std::free(text);
    return mangled;
  }
  std::string out(text);
  std::free(text);
  return out;
}

namespace {

bool is_hex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Splits "TOKEN rest" at the first space or tab.
std::pair<std::string_view, std::string_view> first_token(std::string_view s) {
  size_t end = s.find_first_of(" \t");
  if (end == std::string_view::npos) return {s, {}};
  return {s.substr(0, end), trim(s.substr(end))};
}

Error line_error(size_t line_no, std::string_view line, const std::string& what) {
  return make_error(ErrorCode::kTool, "cuobjdump -sass output, line " + std::to_string(line_no) + ": " + what + ": \"" +
                                          std::string(trim(line)) + "\" (is this the output of `cuobjdump -sass`?)");
}

}  // namespace

Result<SassListing> parse_cuobjdump_sass(std::string_view text) {
  SassListing listing;
  std::string arch;
  bool in_ptx = false;
  SassFunction* current = nullptr;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    std::string_view t = trim(line);
    if (t.empty()) continue;
    if (starts_with(t, "Fatbin elf code:")) {
      in_ptx = false;
      arch.clear();
      current = nullptr;
      continue;
    }
    if (starts_with(t, "Fatbin ptx code:")) {
      in_ptx = true;
      current = nullptr;
      continue;
    }
    if (in_ptx) continue;
    if (starts_with(t, "arch = ")) {
      arch = std::string(trim(t.substr(7)));
      continue;
    }
    if (starts_with(t, "code for ")) {
      arch = std::string(trim(t.substr(9)));
      continue;
    }
    if (starts_with(t, "Function : ")) {
      SassFunction f;
      f.mangled_name = std::string(trim(t.substr(11)));
      f.name = demangle_name(f.mangled_name);
      f.arch = arch;
      listing.functions.push_back(std::move(f));
      current = &listing.functions.back();
      continue;
    }
    if (!starts_with(t, "/*")) continue;
    size_t close = t.find("*/");
    if (close == std::string_view::npos) continue;
    std::string_view pc_text = t.substr(2, close - 2);
    // The control word "/* 0x000fe20000000800 */" and other comments are not instructions.
    if (starts_with(trim(pc_text), "0x") || pc_text.find(' ') != std::string_view::npos) continue;
    if (!is_hex(pc_text)) return line_error(line_no, line, "the pc is not hexadecimal");
    if (current == nullptr) return line_error(line_no, line, "an instruction outside any \"Function :\"");
    std::string_view body = t.substr(close + 2);
    // Drop the encoding comment "/* 0x... */" that follows the ';'.
    size_t comment = body.rfind("/*");
    if (comment != std::string_view::npos && body.size() >= 2 && body.substr(body.size() - 2) == "*/")
      body = body.substr(0, comment);
    body = trim(body);
    if (!body.empty() && body.back() == ';') body = trim(body.substr(0, body.size() - 1));
    SassInstruction inst;
    std::from_chars(pc_text.data(), pc_text.data() + pc_text.size(), inst.pc, 16);
    if (!body.empty() && body.front() == '@') {
      auto [guard, rest] = first_token(body);
      inst.predicate = std::string(guard.substr(1));
      body = rest;
    }
    auto [mnemonic, operands] = first_token(body);
    if (mnemonic.empty()) return line_error(line_no, line, "an instruction without an opcode");
    auto parts = split(mnemonic, '.');
    inst.opcode = parts[0];
    inst.modifiers.assign(parts.begin() + 1, parts.end());
    inst.operands = std::string(operands);
    current->instructions.push_back(std::move(inst));
  }
  return listing;
}

}  // namespace kp::profile
