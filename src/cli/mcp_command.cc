// `kernelpro mcp`: the MCP server (mcp/server.h) on stdin and stdout, with kernelpro's own files
// (examples/, prompts/) beside the binary's source tree.
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "mcp/server.h"

namespace kp::cli {

namespace fs = std::filesystem;

int run_mcp(const std::string& workspace, const std::vector<std::string>& allow) {
  mcp::ServerOptions o;
  o.kernelpro = self_dir() / "kernelpro";
  o.workspace = workspace.empty() ? fs::current_path() / "kernelpro-mcp" : fs::path(workspace);
  for (const auto& a : allow) o.allowed.emplace_back(fs::absolute(a));
  o.examples_dir = fs::path(KP_SOURCE_DIR) / "examples";
  o.prompts_dir = fs::path(KP_SOURCE_DIR) / "prompts";
  o.version = KP_VERSION;
  return mcp::serve_stdio(o);
}

}  // namespace kp::cli
