#include "driver/pipeline.h"

#include <algorithm>
#include <utility>

namespace kp::driver {

PipelineLimits pipeline_limits(int in_flight, int max_evaluations) {
  return {std::max(1, in_flight), max_evaluations, 4 * max_evaluations};
}

bool has_room(const PipelineLimits& l, int in_flight, int evaluated, int made) {
  return in_flight < l.width && evaluated + in_flight < l.max_evaluations && made < l.max_children;
}

Pipeline::~Pipeline() {
  for (Slot& s : slots_)
    if (s.work.valid()) s.work.wait();
}

Job& Pipeline::add(Job job) {
  ++made_;
  jobs_.push_back(std::move(job));
  return jobs_.back();
}

void Pipeline::drop(Job& job) {
  jobs_.remove_if([&](const Job& x) { return &x == &job; });
}

Job* Pipeline::oldest_in(Stage stage) {
  for (auto& j : jobs_)
    if (j.stage == stage && !j.waiting && slot_(stage).job != &j) return &j;
  return nullptr;
}

bool Pipeline::any_parked() const {
  for (const auto& j : jobs_)
    if (j.waiting) return true;
  return false;
}

void Pipeline::start(Stage stage, Job& job, std::function<void()> work) {
  Slot& s = slot_(stage);
  s.job = &job;
  s.done = false;
  s.work = std::async(std::launch::async, [this, &s, work = std::move(work)] {
    work();
    {
      std::lock_guard lock(mu_);
      s.done = true;
      ++done_;
    }
    done_cv_.notify_one();
  });
}

void Pipeline::wait() {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return done_ > 0; });
}

Job* Pipeline::take(Stage stage) {
  Slot& s = slot_(stage);
  {
    std::lock_guard lock(mu_);
    if (!s.job || !s.done) return nullptr;
    s.done = false;
    --done_;
  }
  s.work.get();  // the work has finished: at most the end of its thread is waited for
  return std::exchange(s.job, nullptr);
}

SpendSnapshot::SpendSnapshot(std::function<llm::Spend()> spent, std::function<bool()> budget_spent)
    : spent_(std::move(spent)), budget_spent_(std::move(budget_spent)) {
  update();
}

void SpendSnapshot::update() {
  std::lock_guard lock(mu_);
  if (spent_) spend_ = spent_();
  if (budget_spent_) over_ = budget_spent_();
}

llm::Spend SpendSnapshot::spend() const {
  std::lock_guard lock(mu_);
  return spend_;
}

bool SpendSnapshot::over() const {
  std::lock_guard lock(mu_);
  return over_;
}

}  // namespace kp::driver
