// ThreadPool: a fixed set of worker threads running submitted tasks in FIFO order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace kp {

// Thread safety: submit() may be called from any thread, and from inside a task (also while the
// destructor drains the queue). The destructor must not race with submit() from outside the
// pool's tasks, and must not be called from a task.
class ThreadPool {
 public:
  // Starts `threads` workers; 0 means std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(size_t threads);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  // Runs every task already submitted, then joins the workers.
  ~ThreadPool();

  // Queues f() and returns a future for its result. Tasks should not throw; if one does, the
  // exception is stored in the future (and rethrown by get()), not propagated to the worker.
  template <class F>
  auto submit(F f) -> std::future<std::invoke_result_t<F&>> {
    using R = std::invoke_result_t<F&>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(f));
    std::future<R> future = task->get_future();
    enqueue([task] { (*task)(); });
    return future;
  }

  size_t size() const { return threads_.size(); }

 private:
  void enqueue(std::function<void()> job);
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace kp
