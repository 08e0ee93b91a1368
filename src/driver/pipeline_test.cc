// The pipeline's scheduling decisions: when the strategy may be asked for another child, which
// job a stage takes next, and stages that run at once and are taken back when done.
#include "driver/pipeline.h"

#include <atomic>
#include <chrono>
#include <future>

#include <gtest/gtest.h>

namespace kp::driver {
namespace {

TEST(Pipeline, ThePipelineHoldsUpToItsWidthWithinTheBudget) {
  const PipelineLimits l = pipeline_limits(2, 5);
  EXPECT_EQ(l.width, 2);
  EXPECT_EQ(l.max_children, 20) << "duplicates cost no evaluation: bounded apart";
  EXPECT_EQ(pipeline_limits(0, 5).width, 1) << "at least one in flight";
  EXPECT_TRUE(has_room(l, 0, 0, 0));
  EXPECT_TRUE(has_room(l, 1, 0, 1));
  EXPECT_FALSE(has_room(l, 2, 0, 2)) << "the width";
  EXPECT_TRUE(has_room(l, 1, 3, 4));
  EXPECT_FALSE(has_room(l, 1, 4, 4)) << "each job in flight may cost an evaluation of the last one left";
  EXPECT_FALSE(has_room(l, 0, 5, 5)) << "the budget is spent";
  EXPECT_FALSE(has_room(l, 0, 0, 20)) << "children made";
  EXPECT_FALSE(has_room(pipeline_limits(1, 5), 1, 0, 1)) << "one in flight: one after another";
}

TEST(Pipeline, EachStageTakesItsOldestJobAndTheCountOfChildrenMadeStays) {
  Pipeline p(pipeline_limits(3, 10));
  Job& a = p.add(Job{});
  a.child = 1;
  Job& b = p.add(Job{});
  b.child = 2;
  Job& c = p.add(Job{});
  c.child = 3;
  EXPECT_FALSE(p.has_room(0)) << "three in flight";
  EXPECT_EQ(p.oldest_in(Stage::kModel), &a);
  EXPECT_EQ(p.oldest_in(Stage::kGpu), nullptr);
  c.stage = Stage::kGpu;
  b.stage = Stage::kGpu;
  EXPECT_EQ(p.oldest_in(Stage::kGpu), &b) << "oldest first, whatever reached the stage first";
  p.drop(a);
  EXPECT_EQ(p.size(), 2);
  EXPECT_EQ(p.oldest_in(Stage::kModel), nullptr);
  EXPECT_TRUE(p.has_room(0));
  p.drop(b);
  p.drop(c);
  EXPECT_TRUE(p.empty());
  EXPECT_TRUE(p.idle());
  Pipeline small(pipeline_limits(3, 1));  // max_children 4
  for (int i = 0; i < 4; ++i) small.drop(small.add(Job{}));
  EXPECT_FALSE(small.has_room(0)) << "dropped jobs still count as children made";
}

TEST(Pipeline, StagesWorkAtOnceAndAreTakenBackWhenDone) {
  Pipeline p(pipeline_limits(2, 10));
  Job& model = p.add(Job{});
  Job& gpu = p.add(Job{});
  gpu.stage = Stage::kGpu;
  std::promise<void> gpu_started;
  std::promise<void> release_gpu;
  std::shared_future<void> released = release_gpu.get_future().share();
  // The model stage finishes only once the GPU stage is working: both run at once.
  p.start(Stage::kGpu, gpu, [&] {
    gpu_started.set_value();
    released.wait();
    gpu.build_s = 1;
  });
  std::future<void> started = gpu_started.get_future();
  p.start(Stage::kModel, model, [&] {
    started.wait();
    model.model_s = 2;
  });
  EXPECT_TRUE(p.busy(Stage::kModel));
  EXPECT_TRUE(p.busy(Stage::kGpu));
  EXPECT_FALSE(p.busy(Stage::kBuild));
  EXPECT_FALSE(p.idle());
  EXPECT_EQ(p.oldest_in(Stage::kGpu), nullptr) << "a job in its stage is not offered again";
  EXPECT_EQ(p.take(Stage::kBuild), nullptr);

  p.wait();  // the model stage
  EXPECT_EQ(p.take(Stage::kGpu), nullptr) << "still working";
  EXPECT_EQ(p.take(Stage::kModel), &model);
  EXPECT_EQ(model.model_s, 2);
  EXPECT_FALSE(p.busy(Stage::kModel));
  release_gpu.set_value();
  p.wait();
  EXPECT_EQ(p.take(Stage::kGpu), &gpu);
  EXPECT_EQ(gpu.build_s, 1);
  EXPECT_TRUE(p.idle());
}

TEST(Pipeline, APipelineWaitsForItsStagesWhenItGoes) {
  std::atomic<bool> finished{false};
  {
    Pipeline p(pipeline_limits(1, 10));
    Job& j = p.add(Job{});
    p.start(Stage::kBuild, j, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finished = true;
    });
  }
  EXPECT_TRUE(finished) << "the stage's work ended before its job went";
}

TEST(Pipeline, TheSpendSnapshotReadsTheClientOnlyWhenUpdated) {
  int calls = 3;
  bool over = false;
  SpendSnapshot s([&] { return llm::Spend{calls, 100, 0.5}; }, [&] { return over; });
  EXPECT_TRUE(s.tracked());
  EXPECT_EQ(s.spend().calls, 3);
  calls = 4;
  over = true;
  EXPECT_EQ(s.spend().calls, 3) << "as of the last update";
  EXPECT_FALSE(s.over());
  s.update();
  EXPECT_EQ(s.spend().calls, 4);
  EXPECT_TRUE(s.over());
  SpendSnapshot none(nullptr, nullptr);
  EXPECT_FALSE(none.tracked());
  EXPECT_FALSE(none.over());
  EXPECT_EQ(none.spend().calls, 0);
}

}  // namespace
}  // namespace kp::driver
