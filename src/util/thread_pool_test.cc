#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace kp {
namespace {

TEST(ThreadPool, ReturnsResults) {
  ThreadPool pool(2);
  EXPECT_EQ(pool.size(), 2u);
  auto number = pool.submit([] { return 6 * 7; });
  auto text = pool.submit([] { return std::string("done"); });
  auto nothing = pool.submit([] {});
  EXPECT_EQ(number.get(), 42);
  EXPECT_EQ(text.get(), "done");
  nothing.get();
}

TEST(ThreadPool, ManyTasksOnSeveralThreads) {
  ThreadPool pool(4);
  std::vector<std::future<int>> futures;
  for (int i = 0; i < 10000; ++i) futures.push_back(pool.submit([i] { return i * 2; }));
  long long sum = 0;
  for (auto& future : futures) sum += future.get();
  EXPECT_EQ(sum, 2LL * (9999LL * 10000 / 2));

  // Blocking tasks run in parallel: 4 tasks of 100 ms on 4 threads take about 100 ms.
  std::mutex mutex;
  std::set<std::thread::id> ids;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::future<void>> sleepers;
  for (int i = 0; i < 4; ++i) {
    sleepers.push_back(pool.submit([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard lock(mutex);
      ids.insert(std::this_thread::get_id());
    }));
  }
  for (auto& sleeper : sleepers) sleeper.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(350));
  EXPECT_EQ(ids.size(), 4u);
}

TEST(ThreadPool, ConcurrentSubmitAndMoveOnlyTasks) {
  ThreadPool pool(3);
  std::atomic<int> ran{0};
  std::vector<std::thread> submitters;
  std::mutex mutex;
  std::vector<std::future<std::unique_ptr<int>>> futures;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&] {
      for (int i = 0; i < 250; ++i) {
        auto owned = std::make_unique<int>(i);
        auto future = pool.submit([&ran, owned = std::move(owned)]() mutable {
          ++ran;
          return std::move(owned);
        });
        std::lock_guard lock(mutex);
        futures.push_back(std::move(future));
      }
    });
  }
  for (auto& submitter : submitters) submitter.join();
  for (auto& future : futures) EXPECT_NE(future.get(), nullptr);
  EXPECT_EQ(ran.load(), 1000);
}

TEST(ThreadPool, DestructorDrainsQueuedWork) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(1);
    for (int i = 0; i < 100; ++i) {
      (void)pool.submit([&ran] {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        ++ran;
      });
    }
    // A task may submit more work, even while the destructor drains.
    (void)pool.submit([&] { (void)pool.submit([&ran] { ++ran; }); });
  }
  EXPECT_EQ(ran.load(), 101);
}

TEST(ThreadPool, ZeroMeansHardwareConcurrency) {
  ThreadPool pool(0);
  EXPECT_GE(pool.size(), 1u);
  EXPECT_EQ(pool.submit([] { return 1; }).get(), 1);
}

}  // namespace
}  // namespace kp
