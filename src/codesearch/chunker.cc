#include "codesearch/chunker.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "util/strings.h"

namespace kp::codesearch {

namespace {

constexpr int kHeadLines = 8;  // of a split class's body, in its head chunk

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// What the statement splitter needs of the code: braces, parentheses, semicolons and
// identifiers, outside comments, strings, character literals and preprocessor lines, each with
// its line. A brace that opens a namespace (or an extern "C" block) is marked: it does not make
// a scope of its own.
struct Event {
  enum Kind { kOpen, kClose, kSemi, kParen, kCloseParen, kLess, kGreater, kIdent, kColon, kAssign } kind;
  int line = 0;
  bool ns = false;  // kOpen/kClose: a namespace's
  std::string_view text;
};

struct Lexed {
  std::vector<Event> events;
  std::vector<bool> comment_only;  // by line (0-based): only a comment on it
  std::vector<bool> blank;
  std::vector<bool> preprocessor;
  std::vector<std::string_view> lines;
};

// lex's walk over the text: where it is, and what it has found so far.
struct Lexer {
  std::string_view s;
  Lexed x;
  std::vector<bool> has_code, has_comment;  // by line
  int line = 0;
  bool namespace_pending = false;  // "namespace" (or extern "C") seen: its next { is a namespace's
  std::vector<bool> open_ns;       // the braces open, whether each is a namespace's
  bool line_start = true;          // only spaces so far on this line

  void split_lines() {
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i)
      if (i == s.size() || s[i] == '\n') {
        x.lines.push_back(s.substr(start, i - start));
        start = i + 1;
      }
    const size_t n_lines = x.lines.size();
    x.comment_only.assign(n_lines, false);
    x.blank.assign(n_lines, false);
    x.preprocessor.assign(n_lines, false);
    has_code.assign(n_lines, false);
    has_comment.assign(n_lines, false);
  }

  // The skip_ and read_ steps below start with i on a token's first character and leave it on
  // the token's last, for lex's ++i to step past.
  void skip_line_comment(size_t& i) {
    has_comment[static_cast<size_t>(line)] = true;
    while (i < s.size() && s[i] != '\n') ++i;
    --i;
  }

  void skip_block_comment(size_t& i) {
    has_comment[static_cast<size_t>(line)] = true;
    i += 2;
    while (i + 1 < s.size() && !(s[i] == '*' && s[i + 1] == '/')) {
      if (s[i] == '\n') {
        ++line;
        has_comment[static_cast<size_t>(line)] = true;
      }
      ++i;
    }
    ++i;
  }

  // A directive, with its continuation lines: not code the splitter looks at.
  void skip_directive(size_t& i) {
    while (i < s.size() && s[i] != '\n') {
      if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
        x.preprocessor[static_cast<size_t>(line)] = true;
        ++line;
        i += 2;
        continue;
      }
      ++i;
    }
    x.preprocessor[static_cast<size_t>(line)] = true;
    --i;
  }

  // R"delim( ... )delim" raw strings are rare in headers; a plain string or char literal.
  void skip_literal(size_t& i) {
    const char q = s[i];
    ++i;
    while (i < s.size() && s[i] != q && s[i] != '\n') {
      if (s[i] == '\\') ++i;
      ++i;
    }
  }

  void read_identifier(size_t& i) {
    size_t j = i;
    while (j < s.size() && ident_char(s[j])) ++j;
    std::string_view w = s.substr(i, j - i);
    if (w == "namespace") namespace_pending = true;
    if (w == "extern" && s.substr(j).starts_with(" \"C\"")) namespace_pending = true;
    x.events.push_back({Event::kIdent, line, false, w});
    i = j - 1;
  }

  void skip_number(size_t& i) {
    while (i + 1 < s.size() && (ident_char(s[i + 1]) || s[i + 1] == '.' || s[i + 1] == '\'')) ++i;
  }

  void add(Event::Kind kind) { x.events.push_back({kind, line, false, {}}); }

  // Braces, parentheses, semicolons, and the <, >, :, = that are not part of a longer operator.
  void read_punctuation(size_t& i) {
    switch (s[i]) {
      case '{':
        open_ns.push_back(namespace_pending);
        x.events.push_back({Event::kOpen, line, namespace_pending, {}});
        namespace_pending = false;
        break;
      case '}': {
        const bool ns = !open_ns.empty() && open_ns.back();
        if (!open_ns.empty()) open_ns.pop_back();
        x.events.push_back({Event::kClose, line, ns, {}});
        break;
      }
      case ';':
        namespace_pending = false;  // namespace x = y;
        add(Event::kSemi);
        break;
      case '(': add(Event::kParen); break;
      case ')': add(Event::kCloseParen); break;
      case '<':
        if (i + 1 < s.size() && (s[i + 1] == '<' || s[i + 1] == '=')) {
          ++i;  // a shift or a comparison
        } else {
          add(Event::kLess);
        }
        break;
      case '>':
        if (i > 0 && s[i - 1] == '-') break;  // ->
        if (i + 1 < s.size() && s[i + 1] == '=') {
          ++i;
          break;
        }
        add(Event::kGreater);
        break;
      case ':':
        if (i + 1 < s.size() && s[i + 1] == ':') {
          ++i;  // scope resolution
        } else {
          add(Event::kColon);
        }
        break;
      case '=':
        if (i + 1 < s.size() && s[i + 1] == '=') {
          ++i;
        } else {
          add(Event::kAssign);
        }
        break;
      default: break;
    }
  }

  void classify_lines() {
    for (size_t l = 0; l < x.lines.size(); ++l) {
      x.blank[l] = !has_code[l] && !has_comment[l] && !x.preprocessor[l];
      x.comment_only[l] = has_comment[l] && !has_code[l] && !x.preprocessor[l];
    }
  }
};

Lexed lex(std::string_view s) {
  Lexer lx;
  lx.s = s;
  lx.split_lines();
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n') {
      ++lx.line;
      lx.line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      lx.skip_line_comment(i);
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      lx.skip_block_comment(i);
      continue;
    }
    if (c == '#' && lx.line_start) {
      lx.skip_directive(i);
      continue;
    }
    lx.line_start = false;
    lx.has_code[static_cast<size_t>(lx.line)] = true;
    if (c == '"' || c == '\'') {
      lx.skip_literal(i);
    } else if (ident_start(c)) {
      lx.read_identifier(i);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      lx.skip_number(i);
    } else {
      lx.read_punctuation(i);
    }
  }
  lx.classify_lines();
  return std::move(lx.x);
}

// A statement at the splitter's depth: its events [first, last] and its lines.
struct Statement {
  size_t first = 0, last = 0;
  int start_line = 0, end_line = 0;  // 0-based
};

// The statements at depth 0 of events [from, to), namespaces looked through.
std::vector<Statement> statements(const std::vector<Event>& ev, size_t from, size_t to) {
  std::vector<Statement> out;
  int depth = 0;
  int parens = 0;  // open parentheses of the statement, outside any body
  bool in = false;
  bool ns_head = false;  // between "namespace" and its brace (or the ; of a namespace alias)
  Statement cur;
  for (size_t i = from; i < to; ++i) {
    const Event& e = ev[i];
    if (e.ns) {  // a namespace's braces
      ns_head = false;
      continue;
    }
    if (depth == 0 && !in) {
      if (ns_head) {
        if (e.kind == Event::kSemi) ns_head = false;
        continue;
      }
      if (e.kind == Event::kClose || e.kind == Event::kSemi) continue;  // a stray ; or the end of the range
      if (e.kind == Event::kIdent && (e.text == "namespace" || (e.text == "inline" && i + 1 < to &&
                                                                  ev[i + 1].text == "namespace"))) {
        ns_head = true;
        continue;
      }
      if (e.kind == Event::kIdent && e.text == "extern" && i + 1 < to && ev[i + 1].kind == Event::kOpen &&
          ev[i + 1].ns)
        continue;
      in = true;
      cur = {i, i, e.line, e.line};
    }
    // Braces and semicolons inside parentheses at statement level (a braced default argument
    // "decltype(make_layout(Int<1>{}))", a lambda passed to a call) are part of the statement.
    if (depth == 0 && e.kind == Event::kParen) ++parens;
    if (depth == 0 && e.kind == Event::kCloseParen && parens > 0) --parens;
    if (depth == 0 && parens > 0) continue;
    if (e.kind == Event::kOpen) {
      ++depth;
    } else if (e.kind == Event::kClose) {
      if (depth == 0) break;  // the enclosing scope ends
      --depth;
      if (depth == 0) {
        // The body closed: a class's ; follows it, a function's does not.
        size_t end = i;
        if (i + 1 < to && ev[i + 1].kind == Event::kSemi) end = i + 1;
        cur.last = end;
        cur.end_line = ev[end].line;
        out.push_back(cur);
        in = false;
        parens = 0;
        i = end;
      }
    } else if (e.kind == Event::kSemi && depth == 0) {
      cur.last = i;
      cur.end_line = e.line;
      out.push_back(cur);
      in = false;
      parens = 0;
    }
  }
  return out;
}

// The event that opens a statement's body: its first brace outside parentheses (a braced
// default argument, "decltype(make_layout(Int<1>{}))", is not a body); st.last + 1 if none.
size_t body_open(const std::vector<Event>& ev, const Statement& st) {
  int parens = 0;
  for (size_t i = st.first; i <= st.last; ++i) {
    if (ev[i].kind == Event::kParen) ++parens;
    if (ev[i].kind == Event::kCloseParen && parens > 0) --parens;
    if (ev[i].kind == Event::kOpen && parens == 0) return i;
  }
  return st.last + 1;
}

// Kind and name of a statement from its events before its body: template parameter lists and
// the parentheses of decltype, sizeof, attributes and the like are looked through, so that
// "template <class T> auto make_x(...)" is the function make_x and "decltype(f(x)) member;" a
// declaration of member.
void classify(const std::vector<Event>& ev, const Statement& st, std::string& kind, std::string& name) {
  kind = "declaration";
  name.clear();
  std::string_view last_ident, before_paren, before_assign, tagged;
  bool paren = false;
  int paren_depth = 0;  // '=' inside parentheses is a default argument, not an initializer
  std::string_view tag;
  const bool using_ = ev[st.first].kind == Event::kIdent && ev[st.first].text == "using";
  const size_t body = body_open(ev, st);
  for (size_t i = st.first; i <= st.last && i < body; ++i) {
    const Event& e = ev[i];
    if (e.kind == Event::kIdent && e.text == "template" && i + 1 <= st.last && ev[i + 1].kind == Event::kLess) {
      int depth = 0;  // skip "<...>", nested ones included
      for (++i; i <= st.last && i < body; ++i) {
        if (ev[i].kind == Event::kLess) ++depth;
        if (ev[i].kind == Event::kGreater && --depth == 0) break;
        if (ev[i].kind == Event::kSemi) break;
      }
      continue;
    }
    if (e.kind == Event::kIdent) {
      const bool skip_parens = e.text == "decltype" || e.text == "sizeof" || e.text == "alignof" ||
                               e.text == "noexcept" || e.text == "alignas" || e.text == "__launch_bounds__" ||
                               e.text == "__attribute__" || e.text == "__align__" || e.text == "requires" ||
                               e.text == "CUTE_ALIGNAS" || e.text == "CUTLASS_ALIGNAS" || e.text == "static_assert";
      if (skip_parens && i + 1 <= st.last && ev[i + 1].kind == Event::kParen) {
        int depth = 0;
        for (++i; i <= st.last; ++i) {
          if (ev[i].kind == Event::kParen) ++depth;
          if (ev[i].kind == Event::kCloseParen && --depth == 0) break;
        }
        continue;
      }
      if (tag.empty() && !paren && !using_ &&
          (e.text == "struct" || e.text == "class" || e.text == "union" || e.text == "enum")) {
        tag = e.text;
        size_t j = i + 1;
        if (j <= st.last && ev[j].kind == Event::kIdent && (ev[j].text == "class" || ev[j].text == "struct")) ++j;
        if (j <= st.last && ev[j].kind == Event::kIdent) tagged = ev[j].text;
      }
      last_ident = e.text;
    } else if (e.kind == Event::kParen) {
      if (!paren) before_paren = last_ident;
      paren = true;
      ++paren_depth;
    } else if (e.kind == Event::kCloseParen) {
      --paren_depth;
    } else if (e.kind == Event::kAssign && before_assign.empty() && paren_depth == 0) {
      before_assign = last_ident;
    } else if (e.kind == Event::kColon && !tag.empty()) {
      break;  // struct X : Base<...>: the rest is its bases
    }
  }
  if (using_) {
    kind = "alias";
    name = std::string(before_assign.empty() ? last_ident : before_assign);
  } else if (!tag.empty() && !tagged.empty()) {
    kind = std::string(tag);
    name = std::string(tagged);
  } else if (paren && !before_paren.empty() && before_assign.empty()) {
    kind = "function";
    name = std::string(before_paren);
  } else {
    name = std::string(before_assign.empty() ? last_ident : before_assign);
  }
}

std::string join_lines(const std::vector<std::string_view>& lines, int from, int to) {
  std::string out;
  for (int l = from; l <= to && l < static_cast<int>(lines.size()); ++l) {
    out += lines[static_cast<size_t>(l)];
    out += '\n';
  }
  return out;
}

// The comment lines directly above line `at` (no blank line between), as the first such line.
int comment_start(const Lexed& x, int at, int floor) {
  int l = at - 1;
  while (l >= floor && x.comment_only[static_cast<size_t>(l)]) --l;
  return l + 1;
}

std::string header_of(const Lexed& x, const std::vector<Event>& ev, const Statement& st) {
  const size_t open = body_open(ev, st);
  const int body = open <= st.last ? ev[open].line : st.end_line;
  std::string h = join_lines(x.lines, st.start_line, body);
  std::string flat;
  for (char c : h) flat += (c == '\n' || c == '\t') ? ' ' : c;
  if (flat.size() > 400) flat.resize(400);
  return std::string(trim(flat));
}

std::string strip_comment_marks(const std::string& doc) {
  std::string out;
  for (const auto& line : split(doc, '\n')) {
    std::string_view t = trim(line);
    while (!t.empty() && (t.front() == '/' || t.front() == '*' || t.front() == '!')) t.remove_prefix(1);
    if (t.ends_with("*/")) t.remove_suffix(2);
    t = trim(t);
    if (t.empty()) continue;
    if (!out.empty()) out += ' ';
    out += t;
  }
  return out;
}

void emit(const Lexed& x, const std::vector<Event>& ev, size_t from, size_t to, int floor_line, const std::string& outer,
          int max_lines, int merge_lines, std::vector<Chunk>& out) {
  const auto sts = statements(ev, from, to);
  int floor = floor_line;
  std::vector<Chunk> here;
  for (const auto& st : sts) {
    Chunk c;
    classify(ev, st, c.kind, c.name);
    if (!outer.empty()) {
      c.scope = outer;
      c.name = outer + "::" + c.name;
    }
    const int doc_from = comment_start(x, st.start_line, floor);
    c.start_line = doc_from + 1;
    c.end_line = st.end_line + 1;
    c.doc = strip_comment_marks(join_lines(x.lines, doc_from, st.start_line - 1));
    c.header = header_of(x, ev, st);
    c.text = join_lines(x.lines, doc_from, st.end_line);
    floor = st.end_line + 1;
    const int lines = c.end_line - c.start_line + 1;
    if (lines > max_lines && (c.kind == "struct" || c.kind == "class" || c.kind == "union")) {
      // Too long to read as one: its head (up to the body) and then its members.
      const size_t open = body_open(ev, st);
      Chunk head = c;
      const int body_line = open <= st.last ? ev[open].line : st.start_line;
      head.end_line = std::min(c.end_line, body_line + 1 + kHeadLines);
      head.text = join_lines(x.lines, doc_from, head.end_line - 1);
      here.push_back(std::move(head));
      if (open <= st.last) {
        for (auto& m : here) out.push_back(std::move(m));
        here.clear();
        emit(x, ev, open + 1, st.last + 1, body_line + 1, c.name, max_lines, merge_lines, out);
      }
      continue;
    }
    here.push_back(std::move(c));
  }
  // Runs of short declarations (aliases, forward declarations, one-line functions) read better
  // together: merged while the run stays within merge_lines.
  std::vector<Chunk> merged;
  for (auto& c : here) {
    const int lines = c.end_line - c.start_line + 1;
    if (!merged.empty()) {
      Chunk& m = merged.back();
      const int m_lines = m.end_line - m.start_line + 1;
      const bool short_run = lines <= 3 && m_lines < merge_lines && (m.kind == "alias" || m.kind == "declaration") &&
                             (c.kind == "alias" || c.kind == "declaration") && c.start_line <= m.end_line + 2;
      if (short_run) {
        m.end_line = c.end_line;
        m.name += ", " + c.name;
        m.header += "; " + c.header;
        if (!c.doc.empty()) m.doc += (m.doc.empty() ? "" : " ") + c.doc;
        m.text = join_lines(x.lines, m.start_line - 1, m.end_line - 1);
        continue;
      }
    }
    merged.push_back(std::move(c));
  }
  for (auto& c : merged) out.push_back(std::move(c));
}

// Macro definitions at file level: each run of #define lines (with its comment) is a chunk.
void emit_macros(const Lexed& x, std::vector<Chunk>& out) {
  const int n = static_cast<int>(x.lines.size());
  for (int l = 0; l < n;) {
    std::string_view t = trim(x.lines[static_cast<size_t>(l)]);
    if (!(x.preprocessor[static_cast<size_t>(l)] && t.starts_with("#") && trim(t.substr(1)).starts_with("define"))) {
      ++l;
      continue;
    }
    const int doc_from = comment_start(x, l, 0);
    int end = l;
    while (end + 1 < n && x.preprocessor[static_cast<size_t>(end + 1)]) ++end;
    Chunk c;
    c.kind = "macro";
    std::string_view d = trim(trim(t.substr(1)).substr(6));
    size_t k = 0;
    while (k < d.size() && ident_char(d[k])) ++k;
    c.name = std::string(d.substr(0, k));
    c.header = std::string(t.substr(0, std::min<size_t>(t.size(), 200)));
    c.start_line = doc_from + 1;
    c.end_line = end + 1;
    c.doc = strip_comment_marks(join_lines(x.lines, doc_from, l - 1));
    c.text = join_lines(x.lines, doc_from, end);
    out.push_back(std::move(c));
    l = end + 1;
  }
}

}  // namespace

std::vector<Chunk> chunk_cpp(std::string_view text, int max_lines, int merge_lines) {
  const Lexed x = lex(text);
  std::vector<Chunk> out;
  emit(x, x.events, 0, x.events.size(), 0, "", max_lines, merge_lines, out);
  emit_macros(x, out);
  std::stable_sort(out.begin(), out.end(), [](const Chunk& a, const Chunk& b) { return a.start_line < b.start_line; });
  return out;
}

std::vector<Chunk> chunk_markdown(std::string_view text) {
  std::vector<Chunk> out;
  const auto lines = split(std::string(text), '\n');
  bool fence = false;
  for (size_t l = 0; l < lines.size(); ++l) {
    std::string_view t = lines[l];
    if (t.starts_with("```")) fence = !fence;
    const bool heading = !fence && t.starts_with("#");
    if (heading || out.empty()) {
      Chunk c;
      c.kind = "section";
      std::string_view h = t;
      while (!h.empty() && h.front() == '#') h.remove_prefix(1);
      c.name = heading ? std::string(trim(h)) : "";
      c.header = c.name;
      c.start_line = static_cast<int>(l) + 1;
      out.push_back(std::move(c));
    }
    Chunk& c = out.back();
    c.end_line = static_cast<int>(l) + 1;
    c.text += std::string(t) + "\n";
  }
  // Trailing blank lines belong to no section.
  if (!out.empty() && !lines.empty() && lines.back().empty() && out.back().end_line > out.back().start_line)
    --out.back().end_line;
  return out;
}

std::vector<std::string> identifier_parts(std::string_view w) {
  std::vector<std::string> parts;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) parts.push_back(cur);
    cur.clear();
  };
  for (size_t i = 0; i < w.size(); ++i) {
    const char c = w[i];
    if (c == '_') {
      flush();
      continue;
    }
    const bool upper = std::isupper(static_cast<unsigned char>(c));
    if (upper && !cur.empty()) {
      const char p = w[i - 1];
      const bool after_lower_or_digit = std::islower(static_cast<unsigned char>(p)) || std::isdigit(static_cast<unsigned char>(p));
      const bool acronym_end = std::isupper(static_cast<unsigned char>(p)) && i + 1 < w.size() &&
                               std::islower(static_cast<unsigned char>(w[i + 1]));
      if (after_lower_or_digit || acronym_end) flush();
    }
    cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  flush();
  return parts;
}

std::string code_tokens(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 2);
  auto add = [&](std::string_view t) {
    if (!out.empty()) out += ' ';
    out += t;
  };
  for (size_t i = 0; i < text.size();) {
    if (!ident_char(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && ident_char(text[j])) ++j;
    std::string_view w = text.substr(i, j - i);
    i = j;
    std::string lower(w);
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    while (!lower.empty() && lower.front() == '_') lower.erase(lower.begin());
    while (!lower.empty() && lower.back() == '_') lower.pop_back();
    if (lower.size() < 2 && !(lower.size() == 1 && std::isalpha(static_cast<unsigned char>(lower[0])))) continue;
    add(lower);
    auto parts = identifier_parts(w);
    if (parts.size() > 1)
      for (const auto& p : parts)
        if (p.size() >= 2) add(p);
  }
  return out;
}

}  // namespace kp::codesearch
