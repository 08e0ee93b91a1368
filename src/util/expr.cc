#include "util/expr.h"

#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

namespace kp {
namespace {

class Parser {
 public:
  Parser(std::string_view text, const SymbolTable& symbols) : text_(text), symbols_(symbols) {}

  Result<ExprValue> parse() {
    KP_TRY(ExprValue v, expr());
    skip_ws();
    if (pos_ != text_.size()) return fail(fmt::format("unexpected '{}'", text_[pos_]));
    return v;
  }

 private:
  Error fail(const std::string& what) const {
    return make_error(ErrorCode::kInvalidInput,
                      fmt::format("expression \"{}\": {} at position {}", text_, what, pos_ + 1));
  }
  void skip_ws() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  static ExprValue integer(int64_t i) { return ExprValue{true, i, static_cast<double>(i)}; }
  static ExprValue real(double d) { return ExprValue{false, 0, d}; }

  Result<ExprValue> binary(char op, ExprValue a, ExprValue b) const {
    if (a.is_integer && b.is_integer) {
      int64_t r = 0;
      switch (op) {
        case '+': if (__builtin_add_overflow(a.i, b.i, &r)) return fail("integer overflow"); return integer(r);
        case '-': if (__builtin_sub_overflow(a.i, b.i, &r)) return fail("integer overflow"); return integer(r);
        case '*': if (__builtin_mul_overflow(a.i, b.i, &r)) return fail("integer overflow"); return integer(r);
        case '/': if (b.i == 0) return fail("division by zero"); return integer(a.i / b.i);
        case '%': if (b.i == 0) return fail("division by zero"); return integer(a.i % b.i);
      }
    }
    switch (op) {
      case '+': return real(a.d + b.d);
      case '-': return real(a.d - b.d);
      case '*': return real(a.d * b.d);
      case '/': if (b.d == 0) return fail("division by zero"); return real(a.d / b.d);
      default: return fail("'%' needs integer operands");
    }
  }

  Result<ExprValue> expr() {
    KP_TRY(ExprValue v, term());
    while (true) {
      skip_ws();
      if (pos_ >= text_.size()) return v;
      char op = text_[pos_];
      if (op != '+' && op != '-') return v;
      ++pos_;
      KP_TRY(ExprValue rhs, term());
      KP_TRY(v, binary(op, v, rhs));
    }
  }
  Result<ExprValue> term() {
    KP_TRY(ExprValue v, unary());
    while (true) {
      skip_ws();
      if (pos_ >= text_.size()) return v;
      char op = text_[pos_];
      if (op != '*' && op != '/' && op != '%') return v;
      ++pos_;
      KP_TRY(ExprValue rhs, unary());
      KP_TRY(v, binary(op, v, rhs));
    }
  }
  Result<ExprValue> unary() {
    if (eat('-')) {
      KP_TRY(ExprValue v, unary());
      return binary('-', integer(0), v);
    }
    return primary();
  }
  Result<ExprValue> primary() {
    skip_ws();
    if (pos_ >= text_.size()) return fail("unexpected end");
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      KP_TRY(ExprValue v, expr());
      if (!eat(')')) return fail("missing ')'");
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t start = pos_;
      bool decimal = false;
      while (pos_ < text_.size()) {
        char d = text_[pos_];
        if (std::isdigit(static_cast<unsigned char>(d))) {
          ++pos_;
        } else if (d == '.' || d == 'e' || d == 'E') {
          decimal = true;
          ++pos_;
          if ((d == 'e' || d == 'E') && pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
        } else {
          break;
        }
      }
      std::string literal(text_.substr(start, pos_ - start));
      char* end = nullptr;
      if (decimal) {
        double d = std::strtod(literal.c_str(), &end);
        if (*end) return fail(fmt::format("bad number '{}'", literal));
        return real(d);
      }
      errno = 0;
      long long i = std::strtoll(literal.c_str(), &end, 10);
      if (*end || errno == ERANGE) return fail(fmt::format("bad integer '{}'", literal));
      return integer(i);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      std::string_view name = text_.substr(start, pos_ - start);
      auto it = symbols_.find(name);
      if (it == symbols_.end()) {
        std::string known;
        for (const auto& [k, _] : symbols_) known += (known.empty() ? "" : ", ") + k;
        pos_ = start;
        return fail(fmt::format("unknown symbol '{}' (known: {})", name, known.empty() ? "none" : known));
      }
      return integer(it->second);
    }
    return fail(fmt::format("unexpected '{}'", c));
  }

  std::string_view text_;
  const SymbolTable& symbols_;
  size_t pos_ = 0;
};

}  // namespace

Result<ExprValue> evaluate_expression(std::string_view text, const SymbolTable& symbols) {
  return Parser(text, symbols).parse();
}

}  // namespace kp
