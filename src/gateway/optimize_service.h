// OptimizeService: `switchyard optimize --config FILE`. Every interval, on its own io_context:
//  1. re-reads the config when the file changed (a bad config or profile is logged, counted and
//     shown at /debug/optimizer; the last good one stays in force);
//  2. reads each model's load — the closed request-monitoring intervals of every gateway
//     (their /debug/load, or Redis in Switchyard's or AIBrix's layout), or a load file — and
//     plans per cell the larger of the window's mean rate and the current rate
//     (optimizer/load_window.h);
//  3. solves the model's GPU mix (optimizer/optimizer.h) with the scale-down cool-down's floors,
//     keeps the answer in force under hysteresis (optimizer/stability.h);
// and serves, on `listen`:
//  - GET /metrics/<namespace>/<deployment>: `vllm:deployment_replicas{model_name="M"} N` for
//    AIBrix's PodAutoscaler, N in hundredths of a replica by default (`replicas_unit`);
//  - PUT /scale/<namespace>/<deployment> {"replicas": N}: a manual override; -1 resets every
//    override of the deployment's model (AIBrix's semantics);
//  - GET /debug/optimizer (JSON), GET /dashboard (a page drawing it), GET /metrics (its own),
//    GET /healthz.
// Reading the load and solving block the io thread for their duration (bounded by timeouts
// and the solver's time limit); the endpoints answer between cycles.
#pragma once

#include <string>

namespace switchyard::gateway {

// Runs until SIGTERM/SIGINT; 0 on a clean stop, 2 on a bad config at start.
int runOptimizeService(const std::string& config_path);

}  // namespace switchyard::gateway
