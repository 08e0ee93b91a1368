#include "analysis/rule_expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace kp::analysis {

struct RuleExpr::Node {
  enum class Kind { kNumber, kName, kNeg, kNot, kBinary, kCall };
  Kind kind = Kind::kNumber;
  double number = 0;
  std::string name;  // kName: the name; kBinary: the operator; kCall: the function
  std::vector<std::unique_ptr<Node>> args;
  size_t begin = 0, end = 0;  // the source span, for messages
};

namespace {

using Node = RuleExpr::Node;
using Kind = Node::Kind;

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
bool is_comparison(std::string_view op) {
  return op == "<" || op == "<=" || op == ">" || op == ">=" || op == "==" || op == "!=";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<std::unique_ptr<Node>> parse() {
    skip_ws();
    if (pos_ == text_.size()) return fail("expected an expression");
    KP_TRY(auto root, parse_or());
    skip_ws();
    if (pos_ != text_.size()) return fail(fmt::format("expected an operator or the end, found '{}'", rest_token()));
    return root;
  }

 private:
  // "column 17: expected ')' after 'max(a, b'".
  Error fail(const std::string& what) const {
    std::string_view before = text_.substr(0, pos_);
    while (!before.empty() && std::isspace(static_cast<unsigned char>(before.back()))) before.remove_suffix(1);
    std::string msg = fmt::format("column {}: {}", pos_ + 1, what);
    if (!before.empty()) msg += fmt::format(" after '{}'", before);
    return make_error(ErrorCode::kInvalidInput, msg);
  }
  std::string rest_token() const {
    size_t n = 1;
    if (is_name_char(text_[pos_]))
      while (pos_ + n < text_.size() && is_name_char(text_[pos_ + n])) ++n;
    return std::string(text_.substr(pos_, n));
  }
  void skip_ws() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // The word at pos_ (a name or keyword), without consuming it.
  std::string_view peek_word() {
    skip_ws();
    if (pos_ >= text_.size() || !is_name_start(text_[pos_])) return {};
    size_t n = 1;
    while (pos_ + n < text_.size() && is_name_char(text_[pos_ + n])) ++n;
    return text_.substr(pos_, n);
  }
  bool eat_word(std::string_view w) {
    if (peek_word() != w) return false;
    pos_ += w.size();
    return true;
  }
  bool eat(std::string_view s) {
    skip_ws();
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  static std::unique_ptr<Node> binary(std::string op, std::unique_ptr<Node> a, std::unique_ptr<Node> b) {
    auto n = std::make_unique<Node>();
    n->kind = Kind::kBinary;
    n->name = std::move(op);
    n->begin = a->begin;
    n->end = b->end;
    n->args.push_back(std::move(a));
    n->args.push_back(std::move(b));
    return n;
  }

  Result<std::unique_ptr<Node>> parse_or() {
    KP_TRY(auto lhs, parse_and());
    while (eat_word("or")) {
      KP_TRY(auto rhs, parse_and());
      lhs = binary("or", std::move(lhs), std::move(rhs));
    }
    return lhs;
  }
  Result<std::unique_ptr<Node>> parse_and() {
    KP_TRY(auto lhs, parse_not());
    while (eat_word("and")) {
      KP_TRY(auto rhs, parse_not());
      lhs = binary("and", std::move(lhs), std::move(rhs));
    }
    return lhs;
  }
  Result<std::unique_ptr<Node>> parse_not() {
    size_t begin = (skip_ws(), pos_);
    if (eat_word("not")) {
      KP_TRY(auto operand, parse_not());
      auto n = std::make_unique<Node>();
      n->kind = Kind::kNot;
      n->begin = begin;
      n->end = operand->end;
      n->args.push_back(std::move(operand));
      return n;
    }
    return parse_compare();
  }
  // The comparison operator at pos_, consumed, or "" when there is none.
  std::string eat_comparison() {
    for (std::string_view op : {"<=", ">=", "==", "!=", "<", ">"})
      if (eat(op)) return std::string(op);
    return "";
  }
  Result<std::unique_ptr<Node>> parse_compare() {
    KP_TRY(auto lhs, parse_sum());
    std::string op = eat_comparison();
    if (op.empty()) return lhs;
    KP_TRY(auto rhs, parse_sum());
    size_t at = pos_;
    if (!eat_comparison().empty()) {
      pos_ = at;
      return fail("comparisons do not chain: expected 'and' between them");
    }
    return binary(op, std::move(lhs), std::move(rhs));
  }
  Result<std::unique_ptr<Node>> parse_sum() {
    KP_TRY(auto lhs, parse_product());
    while (true) {
      skip_ws();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) return lhs;
      std::string op(1, text_[pos_++]);
      KP_TRY(auto rhs, parse_product());
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
  }
  Result<std::unique_ptr<Node>> parse_product() {
    KP_TRY(auto lhs, parse_unary());
    while (true) {
      skip_ws();
      if (pos_ >= text_.size() || (text_[pos_] != '*' && text_[pos_] != '/')) return lhs;
      std::string op(1, text_[pos_++]);
      KP_TRY(auto rhs, parse_unary());
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
  }
  Result<std::unique_ptr<Node>> parse_unary() {
    size_t begin = (skip_ws(), pos_);
    if (eat("-")) {
      KP_TRY(auto operand, parse_unary());
      auto n = std::make_unique<Node>();
      n->kind = Kind::kNeg;
      n->begin = begin;
      n->end = operand->end;
      n->args.push_back(std::move(operand));
      return n;
    }
    return parse_primary();
  }
  Result<std::unique_ptr<Node>> parse_primary() {
    skip_ws();
    if (pos_ >= text_.size()) return fail("expected a number, a name or '('");
    const size_t begin = pos_;
    const char c = text_[pos_];
    auto n = std::make_unique<Node>();
    n->begin = begin;
    if (c == '(') {
      ++pos_;
      KP_TRY(auto inner, parse_or());
      if (!eat(")")) return fail("expected ')'");
      inner->begin = begin;
      inner->end = pos_;
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
        ++pos_;
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      }
      std::string literal(text_.substr(begin, pos_ - begin));
      char* end = nullptr;
      n->number = std::strtod(literal.c_str(), &end);
      if (*end != '\0' || literal == ".") {
        pos_ = begin;
        return fail(fmt::format("expected a number, found '{}'", literal));
      }
      n->kind = Kind::kNumber;
      n->end = pos_;
      return n;
    }
    if (is_name_start(c)) {
      std::string word(peek_word());
      if (word == "and" || word == "or" || word == "not")
        return fail(fmt::format("expected a number, a name or '(', found '{}'", word));
      pos_ += word.size();
      if (word == "min" || word == "max" || word == "abs") {
        if (!eat("(")) return fail(fmt::format("expected '(' after the function name (min, max and abs are reserved)"));
        const int arity = word == "abs" ? 1 : 2;
        for (int i = 0; i < arity; ++i) {
          if (i > 0 && !eat(",")) return fail(fmt::format("expected ',' ({} takes two arguments)", word));
          KP_TRY(auto arg, parse_or());
          n->args.push_back(std::move(arg));
        }
        if (!eat(")")) return fail(arity == 1 ? "expected ')' (abs takes one argument)" : "expected ')'");
        n->kind = Kind::kCall;
        n->name = word;
        n->end = pos_;
        return n;
      }
      n->kind = Kind::kName;
      n->name = word;
      n->end = pos_;
      return n;
    }
    return fail(fmt::format("expected a number, a name or '(', found '{}'", c));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

void collect_names(const Node& n, std::vector<std::string>& out) {
  if (n.kind == Kind::kName && std::find(out.begin(), out.end(), n.name) == out.end()) out.push_back(n.name);
  for (const auto& a : n.args) collect_names(*a, out);
}

class Evaluator {
 public:
  Evaluator(std::string_view text, const NameLookup& lookup) : text_(text), lookup_(lookup) {}

  // The value of n; on nullopt, why_ says why (the first reason met).
  std::optional<double> eval(const Node& n) {
    switch (n.kind) {
      case Kind::kNumber: return n.number;
      case Kind::kName: {
        auto v = lookup_(n.name);
        if (!v || !std::isfinite(*v)) return miss(fmt::format("missing '{}'", n.name));
        return v;
      }
      case Kind::kNeg: {
        auto v = eval(*n.args[0]);
        if (!v) return v;
        return -*v;
      }
      case Kind::kNot: {
        auto v = eval(*n.args[0]);
        if (!v) return v;
        return *v == 0 ? 1.0 : 0.0;
      }
      case Kind::kCall: {
        auto a = eval(*n.args[0]);
        if (!a) return a;
        if (n.name == "abs") return std::fabs(*a);
        auto b = eval(*n.args[1]);
        if (!b) return b;
        return n.name == "min" ? std::min(*a, *b) : std::max(*a, *b);
      }
      case Kind::kBinary: break;
    }
    auto a = eval(*n.args[0]);
    if (!a) return a;
    auto b = eval(*n.args[1]);
    if (!b) return b;
    const std::string& op = n.name;
    double r = 0;
    if (op == "+") r = *a + *b;
    else if (op == "-") r = *a - *b;
    else if (op == "*") r = *a * *b;
    else if (op == "/") {
      if (*b == 0) return miss(fmt::format("division by zero in '{}'", span(n)));
      r = *a / *b;
    }
    else if (op == "<") r = *a < *b;
    else if (op == "<=") r = *a <= *b;
    else if (op == ">") r = *a > *b;
    else if (op == ">=") r = *a >= *b;
    else if (op == "==") r = *a == *b;
    else if (op == "!=") r = *a != *b;
    else if (op == "and") r = (*a != 0 && *b != 0);
    else if (op == "or") r = (*a != 0 || *b != 0);
    if (!std::isfinite(r)) return miss(fmt::format("'{}' is not finite", span(n)));
    return r;
  }

  const std::string& why() const { return why_; }

 private:
  std::optional<double> miss(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return std::nullopt;
  }
  std::string_view span(const Node& n) const { return text_.substr(n.begin, n.end - n.begin); }

  std::string_view text_;
  const NameLookup& lookup_;
  std::string why_;
};

void collect_comparisons(const Node& n, Evaluator& ev, std::vector<RuleComparison>& out) {
  if (n.kind == Kind::kBinary && is_comparison(n.name)) {
    const Node& l = *n.args[0];
    const Node& r = *n.args[1];
    auto lv = ev.eval(l);
    auto rv = ev.eval(r);
    if (lv && rv) {
      if (l.kind == Kind::kName) {
        out.push_back({l.name, *lv, n.name, *rv});
      } else if (r.kind == Kind::kName) {
        // "1e6 < x" reads as "x > 1e6".
        std::string op = n.name;
        if (op[0] == '<') op[0] = '>';
        else if (op[0] == '>') op[0] = '<';
        out.push_back({r.name, *rv, op, *lv});
      }
    }
    return;
  }
  for (const auto& a : n.args) collect_comparisons(*a, ev, out);
}

}  // namespace

RuleExpr::RuleExpr(RuleExpr&&) noexcept = default;
RuleExpr& RuleExpr::operator=(RuleExpr&&) noexcept = default;
RuleExpr::~RuleExpr() = default;

Result<RuleExpr> RuleExpr::parse(std::string_view text) {
  KP_TRY(auto root, Parser(text).parse());
  RuleExpr e;
  e.text_ = std::string(text);
  e.root_ = std::move(root);
  collect_names(*e.root_, e.names_);
  return e;
}

RuleEvaluation RuleExpr::evaluate(const NameLookup& lookup) const {
  Evaluator ev(text_, lookup);
  RuleEvaluation out;
  out.value = ev.eval(*root_);
  if (!out.value) out.not_evaluated = ev.why();
  return out;
}

std::vector<RuleComparison> RuleExpr::comparisons(const NameLookup& lookup) const {
  Evaluator ev(text_, lookup);
  std::vector<RuleComparison> out;
  collect_comparisons(*root_, ev, out);
  return out;
}

}  // namespace kp::analysis
