// Prompt templates: text files in prompts/ (one per role and task kind), not strings in code.
//
// Syntax: {{name}} is replaced by the variable's value; a section {{#name}}...{{/name}} is kept
// only when the variable is set and not empty (for optional parts: feedback, lessons, the
// current best). render() fails, naming the template and the variable, when a {{name}} outside
// a false section has no value, and when a section is not closed: a prompt never goes out with
// a hole in it. Values are inserted as they are (no escaping; prompts are plain text); runs of
// blank lines (left by sections that are out) are cut to one.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "util/result.h"

namespace kp::agent {

using Vars = std::map<std::string, std::string>;

class PromptLibrary {
 public:
  // Reads every *.md file of `dir`; the template's name is the file name without ".md".
  static Result<PromptLibrary> load(const std::string& dir);
  // A library from texts in memory (name -> template), for tests and embedded defaults.
  static PromptLibrary from_texts(std::map<std::string, std::string> texts, std::string origin = "(memory)");

  bool has(const std::string& name) const { return texts_.count(name) > 0; }
  Result<std::string> render(const std::string& name, const Vars& vars) const;

 private:
  std::map<std::string, std::string> texts_;
  std::string origin_;
};

// The same substitution on one template text; `what` names it in errors.
Result<std::string> render_template(std::string_view text, const Vars& vars, const std::string& what);

}  // namespace kp::agent
