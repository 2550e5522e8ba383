// What discovery keeps of the Kubernetes objects it watches, and the parsers of what the API
// server sends: one object (Pod, Deployment), a list page, one watch event line.
//
// The parsers are total: any byte string gives either a value or a KubeParseError with a message
// naming the offending field; nothing throws and nothing is trusted (sizes are bounded, numbers
// range-checked). Control thread only (they allocate); see tests/fuzz/kube_objects_fuzz.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::fleet::kubernetes {

inline constexpr size_t kMaxObjectBytes = 8u << 20;  // one watch line or one list page: 8 MiB
inline constexpr size_t kMaxListBytes = 64u << 20;

struct ContainerPort {
  std::string name;
  int port = 0;
};

struct PodInfo {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::string owner_kind;  // the controller owner's kind ("ReplicaSet"), "" if none
  std::string owner_name;
  std::string node_name;
  std::string pod_ip;
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  bool ready = false;  // condition Ready is "True"
  bool deleting = false;  // metadata.deletionTimestamp is set
  int64_t deletion_grace_seconds = -1;
  std::string ready_since;  // the Ready condition's lastTransitionTime (RFC 3339), if any
  std::vector<ContainerPort> ports;  // every container's ports, in order

  std::string key() const { return namespace_ + "/" + name; }
  // The owning Deployment's name: the ReplicaSet owner's name without its "-<pod-template-hash>"
  // suffix; "" when the Pod is not owned by a ReplicaSet.
  std::string deployment() const;
};

struct DeploymentInfo {
  std::string namespace_;
  std::string name;
  std::string resource_version;
  std::map<std::string, std::string> labels;
  int64_t replicas = 1;  // spec.replicas (the API's default is 1)
  int64_t ready_replicas = 0;
  bool deleting = false;

  std::string key() const { return namespace_ + "/" + name; }
};

enum class KubeParseError : uint8_t {
  kNone = 0,
  kTooLarge,        // above kMaxObjectBytes / kMaxListBytes
  kMalformedJson,   // not JSON
  kNotAnObject,     // JSON, but not an object where one is required
  kMissingField,    // a required member is absent (metadata.name, type, object, ...)
  kWrongType,       // a member has the wrong JSON type
  kBadValue,        // a member's value is out of range (a port of 70000, an unknown type)
};

std::string_view kubeParseErrorName(KubeParseError error);

struct ParseStatus {
  KubeParseError error = KubeParseError::kNone;
  std::string message;  // names the field; empty when error is kNone
  bool ok() const { return error == KubeParseError::kNone; }
};

enum class ResourceKind : uint8_t { kPod, kDeployment };

// One object of `kind` (a Pod or a Deployment) from its JSON.
ParseStatus parsePod(std::string_view json, PodInfo& out);
ParseStatus parseDeployment(std::string_view json, DeploymentInfo& out);

// A list response (PodList, DeploymentList): its resourceVersion and continue token, and each
// item. An item that does not parse fails the whole page (the store must not be half-replaced).
struct ListPage {
  std::string resource_version;
  std::string continue_token;
  std::vector<PodInfo> pods;                // kind kPod
  std::vector<DeploymentInfo> deployments;  // kind kDeployment
};
ParseStatus parseList(std::string_view json, ResourceKind kind, ListPage& out);

enum class WatchEventType : uint8_t { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  std::string resource_version;  // the object's (or the bookmark's) resourceVersion
  std::optional<PodInfo> pod;                // kAdded/kModified/kDeleted of a Pod
  std::optional<DeploymentInfo> deployment;  // ... of a Deployment
  int status_code = 0;    // kError: the Status object's code (410: the version is too old)
  std::string message;    // kError: the Status message
};
// One line of a watch stream ({"type":...,"object":{...}}).
ParseStatus parseWatchEvent(std::string_view line, ResourceKind kind, WatchEvent& out);

// A Node's labels (for its GPU label).
ParseStatus parseNodeLabels(std::string_view json, std::map<std::string, std::string>& labels);

// A Status object (an error response body): its code and message; false if `json` is not one.
bool parseStatus(std::string_view json, int& code, std::string& message);

}  // namespace switchyard::fleet::kubernetes
