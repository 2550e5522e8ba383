// FleetPlane: where the fleet comes from and how replicas leave it, for the control plane —
// the static `models:` list plus Kubernetes discovery (when configured), operators' drains
// (POST /admin/drain, for any fleet) and traffic-aware scale-down (with discovery).
//
// The control plane asks compose() for the fleet to apply whenever `on_fleet_change` fires
// (discovery saw a change) or the config is reloaded, then calls afterApply(). Everything runs
// on the control plane's io_context; nothing here is on the request path. Control thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fleet/discovery/kubernetes/kubernetes_discovery.h"
#include "gateway/admin_server.h"
#include "gateway/config.h"
#include "gateway/drain_controller.h"
#include "gateway/scale_down_controller.h"
#include "state/shared_state.h"

namespace switchyard::gateway {

class FleetPlane {
 public:
  // Throws std::runtime_error when discovery is configured but its credentials are unusable.
  FleetPlane(boost::asio::io_context& io, const fleet::FleetRegistry& registry,
             state::SharedStateBackend& backend, const GatewayConfig& config,
             std::function<void()> on_fleet_change);
  ~FleetPlane();
  void start();
  void stop();

  // The fleet to apply: the static models of `config` plus the discovered replicas.
  std::vector<fleet::ModelSpec> compose(const GatewayConfig& config);
  // After every apply: operator drains reach replicas that just joined.
  void afterApply();

  // POST /admin/drain, GET /admin/drain[/<replica>].
  void registerAdmin(AdminServer& admin);
  // `"discovery":{...}` (and `"scale_down":{...}` with discovery) for /debug/fleet.
  std::string debugJson(TimeNs now) const;
  // switchyard_discovery_*, switchyard_scale_down_*, switchyard_fleet_replicas.
  void appendMetrics(std::string& out, const fleet::FleetSnapshot& snapshot, TimeNs now) const;

  bool discovering() const { return discovery_ != nullptr; }
  bool discoverySynced() const { return discovery_ != nullptr && discovery_->synced(); }
  DrainController& drain() { return *drain_; }

 private:
  std::unique_ptr<state::SharedStateSync> sync_;  // coordination: drains, the scale-down lease
  std::unique_ptr<fleet::kubernetes::KubernetesDiscovery> discovery_;
  std::unique_ptr<DrainController> drain_;
  std::unique_ptr<ScaleDownController> scale_down_;
};

}  // namespace switchyard::gateway
