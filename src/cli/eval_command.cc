// `kernelpro eval TASK [CANDIDATE]`: builds the reference and the candidate, and on a GPU checks
// and times the candidate. A `.py` task is a KernelBench problem, evaluated by the Python worker.
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "driver/judge.h"
#include "eval/evaluator.h"
#include "task/kernelbench_loader.h"
#include "task/native_task_loader.h"

namespace kp::cli {

namespace fs = std::filesystem;

namespace {

int run_kernelbench_eval(const EvalFlags& flags, const CommonFlags& common) {
  auto task = task::load_kernelbench_problem(flags.task);
  if (!task.ok()) return exit_for(task.error());
  if (flags.candidate.empty())
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("{} is a KernelBench problem: name the candidate to evaluate, a .py defining "
                                           "ModelNew: kernelpro eval {} CANDIDATE.py [--cu CANDIDATE.cu]",
                                           flags.task, flags.task)));
  auto scratch = make_scratch("kernelpro-eval-", common.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  std::string python = resolve_python(flags.python);
  eval::EvaluatorOptions o;
  o.build = build_options(common);
  o.eval = eval_options(flags, 5, 600);
  o.worker = python_worker_options(python, scratch->path());
  driver::Judge judge(o);
  auto result = judge.evaluate(*task, flags.candidate, flags.cu);
  if (!result.ok()) return exit_for(result.error());
  return print_verdict(*task, *result, common.json,
                       fmt::format("\nNot run: KernelBench candidates run in `{} -m kernelpro_torch.worker`, which needs "
                                   "an NVIDIA GPU and PyTorch with CUDA;{}\nrun the same command on a GPU machine "
                                   "(--python picks the interpreter).\n",
                                   python,
                                   result->form == eval::CandidateForm::kPrebuilt
                                       ? " the candidate's .cu was built and its resources are shown above;"
                                       : ""));
}

}  // namespace

int run_eval(const EvalFlags& flags, const CommonFlags& common) {
  if (is_kernelbench_path(flags.task)) return run_kernelbench_eval(flags, common);
  if (!flags.cu.empty())
    return exit_for(make_error(ErrorCode::kInvalidInput,
                               fmt::format("--cu applies to KernelBench problems (a .py task); {} is a native task, whose "
                                           "candidate is itself the .cu",
                                           flags.task)));
  auto task = task::load_native_task(flags.task);
  if (!task.ok()) return exit_for(task.error());
  auto cand = candidate_path(*task, flags.candidate);
  if (!cand.ok()) return exit_for(cand.error());
  auto scratch = make_scratch("kernelpro-eval-", common.keep_scratch);
  if (!scratch.ok()) return exit_for(scratch.error());
  eval::EvaluatorOptions o;
  o.build = build_options(common);
  o.eval = eval_options(flags, 3, 120);
  o.worker.worker_path = common.worker.empty() ? self_dir() / "kp-worker" : fs::path(common.worker);
  o.worker.scratch_dir = scratch->path();
  driver::Judge judge(o);
  auto result = judge.evaluate(*task, *cand);
  if (!result.ok()) return exit_for(result.error());
  return print_verdict(*task, *result, common.json,
                       "\nNo GPU here: kernelpro built the reference and the candidate and reported their resources "
                       "above;\ncorrectness, timing and energy need an NVIDIA GPU. Run the same command on a GPU machine.\n");
}

}  // namespace kp::cli
