// The names of the mark sets (state::SharedState::putMark/readMarks) that more than one
// component reads, so that writer and reader spell them alike.
#pragma once

#include <string_view>

namespace switchyard::state {

// Written by the deciding gateway's scale-down review: key "NAMESPACE/DEPLOYMENT", value the
// Deployment's model.aibrix.ai/min_replicas label. Read by the optimize service (Redis load
// source) as the floor of deployments whose config names no min_replicas. With Redis the set is
// the hash PREFIX:marks:{min-replicas}, each field "DEADLINE_MS VALUE" (unix milliseconds).
inline constexpr std::string_view kMinReplicasMarks = "min-replicas";

}  // namespace switchyard::state
