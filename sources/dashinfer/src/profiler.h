// Operator profiler behind AS_PROFILE. Compiled in only with
// DASHINFER_PROFILE=ON (DI_PROFILE_OP expands to nothing otherwise, so the
// default build pays zero cost); enabled at run time by env AS_PROFILE=ON.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace dashinfer {

class Profiler {
 public:
  explicit Profiler(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  // Device backends set this so a timed op measures finished work, not just
  // the kernel launch (CUDA: stream synchronize).
  void set_sync(std::function<void()> sync) { sync_ = std::move(sync); }
  void Sync() const {
    if (sync_) sync_();
  }
  void Record(const std::string& op, double ms);
  void Reset();
  // "*** forward ***" section in the column layout of DashInfer's
  // get_op_profiling_info: rank opname count min_ms max_ms ave_ms total_ms
  // percentage, sorted by total time.
  std::string Table(int rank = 0) const;

 private:
  struct Stat {
    long long count = 0;
    double min_ms = 0, max_ms = 0, total_ms = 0;
  };
  bool enabled_;
  std::function<void()> sync_;
  mutable std::mutex mu_;
  std::map<std::string, Stat> stats_;
};

// RAII timer for one operator invocation.
class OpTimer {
 public:
  OpTimer(Profiler* p, const char* op) : p_(p && p->enabled() ? p : nullptr), op_(op) {
    if (p_) {
      p_->Sync();  // do not bill this op for earlier asynchronous work
      t0_ = std::chrono::steady_clock::now();
    }
  }
  ~OpTimer() {
    if (!p_) return;
    p_->Sync();
    auto dt = std::chrono::steady_clock::now() - t0_;
    p_->Record(op_, std::chrono::duration<double, std::milli>(dt).count());
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  Profiler* p_;
  const char* op_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace dashinfer

#define DI_CONCAT_(a, b) a##b
#define DI_CONCAT(a, b) DI_CONCAT_(a, b)
#if DASHINFER_PROFILE
#define DI_PROFILE_OP(profiler, name) \
  ::dashinfer::OpTimer DI_CONCAT(di_op_timer_, __LINE__)((profiler), (name))
#else
#define DI_PROFILE_OP(profiler, name) ((void)(profiler))
#endif
