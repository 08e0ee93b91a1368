// `kernelpro mcp`: the MCP server (mcp/server.h) on stdin and stdout, with kernelpro's own files
// (examples/, prompts/) from resource_root(): the install prefix or the source tree.
#include <filesystem>
#include <string>
#include <vector>

#include "util/resource_root.h"
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
  o.examples_dir = resource_root() / "examples";
  o.prompts_dir = resource_root() / "prompts";
  o.version = KP_VERSION;
  return mcp::serve_stdio(o);
}

}  // namespace kp::cli
