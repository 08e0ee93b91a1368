// The condition language of rule files (analysis/rule_tool.h): arithmetic, comparisons and
// logic over doubles whose names are metrics ("dram__bytes_write.sum") or derived quantities
// ("kernel.duration_s"). Parsed once into a tree, then evaluated per kernel.
//
// Grammar (lowest precedence first):
//   expr    := or
//   or      := and ('or' and)*
//   and     := not ('and' not)*
//   not     := 'not' not | compare
//   compare := sum (('<'|'<='|'>'|'>='|'=='|'!=') sum)?     comparisons do not chain
//   sum     := product (('+'|'-') product)*
//   product := unary (('*'|'/') unary)*
//   unary   := '-' unary | primary
//   primary := number | name | ('min'|'max') '(' expr ',' expr ')' | 'abs' '(' expr ')'
//            | '(' expr ')'
// Numbers: 42, 0.5, .5, 1e-3, 2.5E+6. Names: a letter or '_', then letters, digits, '_' and
// '.' (Perfworks names: "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"). 'and', 'or', 'not',
// 'min', 'max' and 'abs' are reserved. Comparisons and logic give 1 (true) or 0 (false); a
// value is true when it is not 0.
//
// Evaluation never guesses: a missing name, a division by zero or a non-finite result makes
// the whole expression "not evaluated" (nullopt), so a rule never fires on absent evidence.
// Example: "dram__bytes_write.sum > 2 * dram__bytes_read.sum and kernel.duration_s > 5e-6"
// with write 6e8, read 2e8, duration 1.2e-4 gives 1; without dram__bytes_read.sum, nullopt.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace kp::analysis {

// A value for a name, or nullopt when it is unknown for this kernel.
using NameLookup = std::function<std::optional<double>(std::string_view name)>;

// The outcome of one evaluation: the value, or why there is none.
struct RuleEvaluation {
  std::optional<double> value;
  std::string not_evaluated;  // when value is empty: "missing 'x'", "division by zero in 'a / b'"
};

// One comparison of the form `name OP expression` (or `expression OP name`, turned around),
// as it evaluated: the evidence behind a fired rule ("dram__bytes_write.sum 6e8 > 4e8").
struct RuleComparison {
  std::string name;
  double value = 0;
  std::string op;  // "<", "<=", ">", ">=", "==", "!="
  double threshold = 0;
};

class RuleExpr {
 public:
  // Parses `text`. Errors (kInvalidInput) say where and what was expected, 1-based column:
  // "column 9: expected ')' after 'max(a, b'". An empty text is an error.
  static Result<RuleExpr> parse(std::string_view text);

  RuleExpr(RuleExpr&&) noexcept;
  RuleExpr& operator=(RuleExpr&&) noexcept;
  ~RuleExpr();

  RuleEvaluation evaluate(const NameLookup& lookup) const;
  std::optional<double> value(const NameLookup& lookup) const { return evaluate(lookup).value; }

  // The names it reads, each once, in order of first appearance.
  const std::vector<std::string>& names() const { return names_; }
  // Its comparisons whose one side is a bare name and whose both sides evaluate, in order.
  std::vector<RuleComparison> comparisons(const NameLookup& lookup) const;
  const std::string& text() const { return text_; }

  struct Node;  // the tree, defined in rule_expr.cc

 private:
  RuleExpr() = default;
  std::string text_;
  std::unique_ptr<Node> root_;
  std::vector<std::string> names_;
};

}  // namespace kp::analysis
