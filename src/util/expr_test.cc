#include "util/expr.h"

#include <gtest/gtest.h>

namespace kp {
namespace {

TEST(Expr, IntegerArithmeticWithSymbols) {
  SymbolTable s{{"M", 4096}, {"N", 2048}, {"K", 512}};
  auto v = evaluate_expression("2 * M * N * K", s);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_TRUE(v->is_integer);
  EXPECT_EQ(v->i, 2LL * 4096 * 2048 * 512);
  EXPECT_EQ(evaluate_expression("(N + 127) / 128", s)->i, 16);
  EXPECT_EQ(evaluate_expression("N % 3", s)->i, 2048 % 3);
  EXPECT_EQ(evaluate_expression("-M + 1", s)->i, -4095);
}

TEST(Expr, DecimalsSwitchToDouble) {
  auto v = evaluate_expression("1.5 * N", {{"N", 4}});
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->is_integer);
  EXPECT_DOUBLE_EQ(v->d, 6.0);
  EXPECT_DOUBLE_EQ(evaluate_expression("1e3 / 4", {})->d, 250.0);
}

TEST(Expr, UnknownSymbolNamesItAndTheKnownOnes) {
  auto v = evaluate_expression("4 * Q", {{"N", 1}});
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("unknown symbol 'Q'"), std::string::npos);
  EXPECT_NE(v.error().message.find("known: N"), std::string::npos);
}

TEST(Expr, SyntaxErrorsAndDivisionByZero) {
  EXPECT_FALSE(evaluate_expression("(1 + 2", {}).ok());
  EXPECT_FALSE(evaluate_expression("1 +", {}).ok());
  EXPECT_FALSE(evaluate_expression("1 2", {}).ok());
  auto z = evaluate_expression("N / 0", {{"N", 1}});
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().message.find("division by zero"), std::string::npos);
}

TEST(Expr, OverflowIsAnError) {
  EXPECT_FALSE(evaluate_expression("N * N * N", {{"N", 1LL << 40}}).ok());
}

}  // namespace
}  // namespace kp
