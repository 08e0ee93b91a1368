#include "tests/support/cli_run.h"

#include <gtest/gtest.h>

#include "sys/subprocess.h"
#include "tests/support/paths.h"

namespace kp::testing {

CliRun run_kernelpro(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env,
                     std::chrono::milliseconds timeout) {
  sys::Command c;
  c.argv = {kernelpro_binary().string()};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  c.env_set = env;
  c.timeout = timeout;
  auto r = sys::run(c);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (!r.ok()) return {};
  EXPECT_FALSE(r->timed_out) << "kernelpro " << (args.empty() ? "" : args[0]) << " timed out";
  if (r->timed_out) return {};
  return {r->exit_code, r->stdout_text, r->stderr_text};
}

}  // namespace kp::testing
