// Arithmetic expressions over named symbols, used for shapes and ideal costs in task.toml
// ("2 * M * N * K", "4*N + 4*N", "(N + 127) / 128").
//
// Grammar: expr := term (('+'|'-') term)*; term := unary (('*'|'/'|'%') unary)*;
// unary := '-' unary | primary; primary := number | identifier | '(' expr ')'.
// Numbers are integers or decimals (1e-5 style exponents allowed). Values are computed exactly
// in int64 while every operand is an integer and '/' and '%' divide exactly as integers
// (truncating, as C does); once a decimal appears the computation continues in double.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "util/result.h"

namespace kp {

struct ExprValue {
  bool is_integer = true;
  int64_t i = 0;   // valid when is_integer
  double d = 0;    // always valid (== i when is_integer)
};

using SymbolTable = std::map<std::string, int64_t, std::less<>>;

// Evaluates text against symbols. Errors (kInvalidInput) name the expression and the problem:
// an unknown symbol (listing the known ones), a syntax error with its position, division by
// zero, or int64 overflow.
Result<ExprValue> evaluate_expression(std::string_view text, const SymbolTable& symbols);

}  // namespace kp
