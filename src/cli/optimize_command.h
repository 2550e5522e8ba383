// `switchyard optimize --config FILE`: the optimizer service (src/gateway/optimize_service.h).
// `switchyard optimize --once --profile FILE… --load FILE [--slice-factor N] [--headroom H]`:
// one solve, printed as JSON. See docs/optimizer.md.
#pragma once

namespace CLI {
class App;
}

namespace switchyard::cli {

void addOptimizeCommand(CLI::App& app, int& exit_code);

}  // namespace switchyard::cli
