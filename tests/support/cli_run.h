// Running the kernelpro binary as a user does, for the e2e tests.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace kp::testing {

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// Runs `kernelpro ARGS...` with `env` added to the environment and waits for it (at most
// `timeout`). A run that could not start or timed out fails the calling test and gives
// exit_code -1.
CliRun run_kernelpro(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env,
                     std::chrono::milliseconds timeout = std::chrono::minutes(10));

}  // namespace kp::testing
