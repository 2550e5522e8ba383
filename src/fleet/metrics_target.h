// The request target of a telemetry scrape (defined in engine_signals.cc, next to the families
// parseEngineSignals reads, so the two cannot drift apart).
#pragma once

#include <string_view>

namespace switchyard::fleet {

// With `family_filter`, /metrics with one `name[]` query parameter per family parseEngineSignals
// reads (percent-encoded). prometheus_client's filter, served where /metrics is its ASGI app
// (SGLang; vLLM unless an instrumentator answers /metrics first), answers those families only:
// a page of about a kilobyte instead of ten or more of histograms, cheaper for the engine
// to render and for the gateway to read. An engine that ignores the parameters answers the whole
// page, which is parsed the same way. Else "/metrics".
std::string_view engineMetricsTarget(bool family_filter);

}  // namespace switchyard::fleet
