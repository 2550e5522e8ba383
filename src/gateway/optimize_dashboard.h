// The optimizer's own dashboard page (GET /dashboard on the optimize service): it polls
// /debug/optimizer and draws, per model, the planned load by request shape, the mix (replicas
// and the cells each GPU type serves), cost, solve time and feasibility. A page of its own
// rather than a panel on the gateway's dashboard: the optimizer is a separate process on its
// own port, and the gateway need not know where it runs.
#pragma once

#include <string_view>

namespace switchyard::gateway {

std::string_view optimizeDashboardHtml();

}  // namespace switchyard::gateway
