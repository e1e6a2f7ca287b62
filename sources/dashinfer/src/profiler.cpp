#include "profiler.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace dashinfer {

void Profiler::Record(const std::string& op, double ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Stat& s = stats_[op];
  if (s.count == 0 || ms < s.min_ms) s.min_ms = ms;
  if (s.count == 0 || ms > s.max_ms) s.max_ms = ms;
  s.total_ms += ms;
  ++s.count;
}

void Profiler::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.clear();
}

std::string Profiler::Table(int rank) const {
  std::vector<std::pair<std::string, Stat>> rows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rows.assign(stats_.begin(), stats_.end());
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.total_ms > b.second.total_ms; });
  double all = 0;
  for (const auto& r : rows) all += r.second.total_ms;
  const std::string rule(95, '-');
  std::string out = "*** forward ***\n" + rule + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-10s%-20s%-10s%-10s%-10s%-10s%-15s%s\n", "rank", "opname",
                "count", "min_ms", "max_ms", "ave_ms", "total_ms", "percentage");
  out += line + rule + "\n";
  for (const auto& [name, s] : rows) {
    std::snprintf(line, sizeof line, "%-10d%-20s%-10lld%-10.2f%-10.2f%-10.2f%-15.2f%.2f\n", rank,
                  name.c_str(), s.count, s.min_ms, s.max_ms, s.total_ms / double(s.count),
                  s.total_ms, all > 0 ? 100.0 * s.total_ms / all : 0.0);
    out += line;
  }
  out += rule + "\n";
  return out;
}

}  // namespace dashinfer
