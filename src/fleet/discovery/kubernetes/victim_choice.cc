#include "fleet/discovery/kubernetes/victim_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace switchyard::fleet::kubernetes {

double victimCost(const VictimCandidate& candidate, const ScaleDownSettings& settings) {
  return candidate.in_flight + settings.session_weight * candidate.session_requests +
         settings.job_weight * candidate.jobs - (candidate.warming ? 0.5 : 0.0);
}

std::vector<std::string> chooseVictims(const std::vector<VictimCandidate>& candidates,
                                       const std::vector<std::string>& current, size_t count,
                                       const ScaleDownSettings& settings) {
  struct Ranked {
    double cost;
    const std::string* pod;
  };
  std::vector<Ranked> ranked;
  std::map<std::string, double> cost_of;
  for (const VictimCandidate& c : candidates) {
    ranked.push_back({victimCost(c, settings), &c.pod});
    cost_of[c.pod] = ranked.back().cost;
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.cost != b.cost ? a.cost < b.cost : *a.pod < *b.pod;
  });
  count = std::min(count, ranked.size());
  // Keep the standing victims that are still candidates, as long as nobody unchosen beats them
  // by more than the margin.
  std::vector<std::string> chosen;
  for (const std::string& pod : current) {
    if (chosen.size() >= count) break;
    if (!cost_of.count(pod)) continue;
    chosen.push_back(pod);
  }
  auto isChosen = [&](const std::string& pod) {
    return std::find(chosen.begin(), chosen.end(), pod) != chosen.end();
  };
  for (size_t i = 0; i < chosen.size();) {
    const double mine = cost_of[chosen[i]];
    const auto better = std::find_if(ranked.begin(), ranked.end(), [&](const Ranked& r) {
      return !isChosen(*r.pod) && r.cost + settings.switch_margin < mine;
    });
    if (better != ranked.end()) {
      chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  for (const Ranked& r : ranked) {
    if (chosen.size() >= count) break;
    if (!isChosen(*r.pod)) chosen.push_back(*r.pod);
  }
  std::sort(chosen.begin(), chosen.end(), [&](const std::string& a, const std::string& b) {
    return cost_of[a] != cost_of[b] ? cost_of[a] < cost_of[b] : a < b;
  });
  return chosen;
}

int parseRecommendedReplicas(std::string_view text, double unit) {
  static constexpr std::string_view kName = "vllm:deployment_replicas";
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.starts_with(kName)) continue;
    line.remove_prefix(kName.size());
    if (!line.empty() && line.front() == '{') {
      const size_t close = line.find('}');
      if (close == std::string_view::npos) return -1;
      line.remove_prefix(close + 1);
    }
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    const std::string number(line.substr(0, line.find(' ')));
    char* stop = nullptr;
    const double value = std::strtod(number.c_str(), &stop);
    if (number.empty() || stop != number.c_str() + number.size() || !std::isfinite(value) ||
        value < 0 || unit <= 0) {
      return -1;
    }
    return static_cast<int>(std::ceil(value / unit - 1e-9));
  }
  return -1;
}

}  // namespace switchyard::fleet::kubernetes
