#include "util/source_text.h"

#include <cctype>

#include "util/hash.h"

namespace kp {

namespace {

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The end of the quoted literal that opens at text[i] (the quote), past its closing quote; a
// literal that is not closed ends at the line's end.
size_t quoted_end(std::string_view text, size_t i) {
  const char quote = text[i];
  for (size_t j = i + 1; j < text.size(); ++j) {
    if (text[j] == '\\') {
      ++j;
    } else if (text[j] == quote) {
      return j + 1;
    } else if (text[j] == '\n') {
      return j;
    }
  }
  return text.size();
}

// R"delim( ... )delim" opening at text[i] (the R): its end, or 0 when it is not one.
size_t raw_string_end(std::string_view text, size_t i) {
  if (i + 1 >= text.size() || text[i + 1] != '"') return 0;
  const size_t open = text.find('(', i + 2);
  if (open == std::string_view::npos || open - (i + 2) > 16) return 0;
  const std::string close = ")" + std::string(text.substr(i + 2, open - (i + 2))) + "\"";
  const size_t end = text.find(close, open + 1);
  return end == std::string_view::npos ? text.size() : end + close.size();
}

}  // namespace

std::string normalized_cpp(std::string_view text) {
  std::string out;
  bool space = false;       // spacing or a comment since the last token
  bool line_start = true;   // no token yet on this line
  bool directive = false;   // on a preprocessor line, which a line break ends
  auto emit = [&](std::string_view s) {
    if (line_start && s.front() == '#') {
      if (!out.empty() && out.back() != '\n') out += '\n';
      directive = true;
    } else if (space && !out.empty() && out.back() != '\n') {
      out += ' ';
    }
    space = line_start = false;
    out += s;
  };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      // Outside a directive a line break is spacing; a directive ends at one, unless the line
      // ends with a backslash (it goes on).
      if (directive) {
        directive = !out.empty() && out.back() == '\\';
        out += '\n';
      } else {
        space = true;
      }
      line_start = true;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      space = true;
      ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) i = text.size();
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
      space = true;
    } else if (c == 'R' && (i == 0 || !identifier_char(text[i - 1])) && raw_string_end(text, i) > 0) {
      const size_t end = raw_string_end(text, i);
      emit(text.substr(i, end - i));
      i = end;
    } else if (c == '"' || (c == '\'' && (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]))))) {
      // A quote after a digit or letter is a digit separator (1'000) or a prefix's (u8'a'):
      // copied as it comes.
      const size_t end = quoted_end(text, i);
      emit(text.substr(i, end - i));
      i = end;
    } else {
      emit(text.substr(i, 1));
      ++i;
    }
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

std::string normalized_python(std::string_view text) {
  std::string out, line;
  auto end_line = [&] {
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
    bool blank = true;
    for (char c : line) blank = blank && (c == ' ' || c == '\t');
    if (!blank) out += line + '\n';
    line.clear();
  };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      end_line();
      ++i;
    } else if (c == '#') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) i = text.size();
    } else if (c == '"' || c == '\'') {
      const bool triple = i + 2 < text.size() && text[i + 1] == c && text[i + 2] == c;
      size_t end = text.size();
      if (triple) {
        for (size_t j = i + 3; j < text.size(); ++j) {
          if (text[j] == '\\') {
            ++j;
          } else if (text.substr(j, 3) == std::string(3, c)) {
            end = j + 3;
            break;
          }
        }
      } else {
        end = quoted_end(text, i);
      }
      line += text.substr(i, end - i);
      i = end;
    } else {
      line += c;
      ++i;
    }
  }
  end_line();
  return out;
}

std::string code_key(std::string_view cuda, std::string_view python) {
  return sha256_hex(normalized_cpp(cuda) + std::string(1, '\0') + normalized_python(python));
}

}  // namespace kp
