#include "engine/virtual_run.h"

#include <cmath>

#include "core/rng.h"
#include "engine/batching_model.h"

namespace switchyard::engine {

std::vector<VirtualOutcome> runVirtual(const PerfConfig& config,
                                       std::span<const VirtualArrival> arrivals, TimeNs horizon) {
  BatchingModel model(config);
  std::vector<VirtualOutcome> out(arrivals.size());
  std::vector<TokenEvent> events;
  size_t next = 0;
  size_t finished = 0;
  auto handle = [&] {
    for (const TokenEvent& event : events) {
      VirtualOutcome& o = out[event.id];
      if (o.first_token < 0) o.first_token = event.time;
      o.output_tokens += event.tokens;
      if (event.finished) {
        o.finished = event.time;
        ++finished;
      }
    }
    events.clear();
  };
  while (finished < arrivals.size()) {
    const TimeNs engine_next = model.nextEventTime();
    const bool arrival_first =
        next < arrivals.size() && (engine_next < 0 || arrivals[next].at <= engine_next);
    const TimeNs now = arrival_first ? arrivals[next].at : engine_next;
    if (now < 0 || (horizon >= 0 && now > horizon)) break;
    model.advance(now, events);
    handle();
    if (arrival_first) {
      const VirtualArrival& a = arrivals[next];
      out[next].arrival = a.at;
      model.submit(ModelRequest{next, a.prompt_tokens, a.output_tokens, {}}, a.at);
      ++next;
    }
  }
  for (size_t i = next; i < arrivals.size(); ++i) out[i].arrival = arrivals[i].at;
  return out;
}

std::vector<VirtualArrival> poissonArrivals(double rate, int count, int prompt_tokens,
                                            int output_tokens, uint64_t seed) {
  std::vector<VirtualArrival> arrivals;
  if (!(rate > 0) || count <= 0) return arrivals;
  arrivals.reserve(static_cast<size_t>(count));
  Rng rng(seed);
  double t = 0;
  for (int i = 0; i < count; ++i) {
    t += -std::log(1.0 - rng.uniform01()) / rate;
    arrivals.push_back({static_cast<TimeNs>(t * 1e9), prompt_tokens, output_tokens});
  }
  return arrivals;
}

}  // namespace switchyard::engine
