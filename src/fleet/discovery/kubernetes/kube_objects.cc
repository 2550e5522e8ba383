#include "fleet/discovery/kubernetes/kube_objects.h"

#include <fmt/format.h>
#include <simdjson.h>

namespace switchyard::fleet::kubernetes {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

ParseStatus fail(KubeParseError error, std::string message) {
  return ParseStatus{error, std::move(message)};
}

// Member `key` of `obj` as an object; absent or null -> nullopt; another type -> error.
ParseStatus optionalObject(const object& obj, std::string_view key, std::string_view where,
                           std::optional<object>& out) {
  out.reset();
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return {};
  object o;
  if (value.get(o) != simdjson::SUCCESS) {
    return fail(KubeParseError::kWrongType, fmt::format("{}.{}: not an object", where, key));
  }
  out = o;
  return {};
}

// Member `key` as a string; absent or null leaves `out` empty unless `required`.
ParseStatus stringField(const object& obj, std::string_view key, std::string_view where,
                        std::string& out, bool required = false) {
  out.clear();
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) {
    if (required) {
      return fail(KubeParseError::kMissingField, fmt::format("{}.{}: required", where, key));
    }
    return {};
  }
  std::string_view text;
  if (value.get(text) != simdjson::SUCCESS) {
    return fail(KubeParseError::kWrongType, fmt::format("{}.{}: not a string", where, key));
  }
  // A required name or version that is empty names nothing (an unnamed Pod would be a replica
  // without an identity; an empty list version would watch "from any point").
  if (required && text.empty()) {
    return fail(KubeParseError::kMissingField, fmt::format("{}.{}: empty", where, key));
  }
  out.assign(text);
  return {};
}

// Member `key` as an integer within [lo, hi]; absent or null leaves `out` unchanged.
ParseStatus intField(const object& obj, std::string_view key, std::string_view where, int64_t lo,
                     int64_t hi, int64_t& out) {
  element value;
  if (obj.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return {};
  int64_t n = 0;
  if (value.get(n) != simdjson::SUCCESS) {
    return fail(KubeParseError::kWrongType, fmt::format("{}.{}: not an integer", where, key));
  }
  if (n < lo || n > hi) {
    return fail(KubeParseError::kBadValue,
                fmt::format("{}.{}: {} is out of range [{}, {}]", where, key, n, lo, hi));
  }
  out = n;
  return {};
}

// A string-to-string map (labels, annotations).
ParseStatus stringMap(const object& obj, std::string_view key, std::string_view where,
                      std::map<std::string, std::string>& out) {
  out.clear();
  std::optional<object> map;
  if (ParseStatus s = optionalObject(obj, key, where, map); !s.ok()) return s;
  if (!map) return {};
  for (auto [k, v] : *map) {
    std::string_view text;
    if (v.get(text) != simdjson::SUCCESS) {
      return fail(KubeParseError::kWrongType,
                  fmt::format("{}.{}[{}]: not a string", where, key, std::string_view(k)));
    }
    out.emplace(std::string(k), std::string(text));
  }
  return {};
}

struct Metadata {
  std::string namespace_, name, uid, resource_version;
  std::map<std::string, std::string> labels, annotations;
  bool deleting = false;
  int64_t grace = -1;
  std::string owner_kind, owner_name;
};

ParseStatus parseMetadata(const object& root, std::string_view where, Metadata& m,
                          bool name_required = true) {
  std::optional<object> meta;
  if (ParseStatus s = optionalObject(root, "metadata", where, meta); !s.ok()) return s;
  if (!meta) {
    return fail(KubeParseError::kMissingField, fmt::format("{}.metadata: required", where));
  }
  const std::string mwhere = std::string(where) + ".metadata";
  if (ParseStatus s = stringField(*meta, "name", mwhere, m.name, name_required); !s.ok()) return s;
  if (ParseStatus s = stringField(*meta, "namespace", mwhere, m.namespace_); !s.ok()) return s;
  if (ParseStatus s = stringField(*meta, "uid", mwhere, m.uid); !s.ok()) return s;
  if (ParseStatus s = stringField(*meta, "resourceVersion", mwhere, m.resource_version); !s.ok()) {
    return s;
  }
  if (ParseStatus s = stringMap(*meta, "labels", mwhere, m.labels); !s.ok()) return s;
  if (ParseStatus s = stringMap(*meta, "annotations", mwhere, m.annotations); !s.ok()) return s;
  std::string deletion;
  if (ParseStatus s = stringField(*meta, "deletionTimestamp", mwhere, deletion); !s.ok()) return s;
  m.deleting = !deletion.empty();
  if (ParseStatus s =
          intField(*meta, "deletionGracePeriodSeconds", mwhere, 0, int64_t{1} << 40, m.grace);
      !s.ok()) {
    return s;
  }
  element owners;
  if (meta->at_key("ownerReferences").get(owners) == simdjson::SUCCESS && !owners.is_null()) {
    simdjson::dom::array list;
    if (owners.get(list) != simdjson::SUCCESS) {
      return fail(KubeParseError::kWrongType, mwhere + ".ownerReferences: not an array");
    }
    for (element owner : list) {
      object o;
      if (owner.get(o) != simdjson::SUCCESS) {
        return fail(KubeParseError::kWrongType, mwhere + ".ownerReferences[]: not an object");
      }
      bool controller = false;
      element flag;
      if (o.at_key("controller").get(flag) == simdjson::SUCCESS && flag.is_bool()) {
        controller = flag.get_bool().value();
      }
      std::string kind, name;
      if (ParseStatus s = stringField(o, "kind", mwhere + ".ownerReferences[]", kind); !s.ok()) {
        return s;
      }
      if (ParseStatus s = stringField(o, "name", mwhere + ".ownerReferences[]", name); !s.ok()) {
        return s;
      }
      // The controller owner wins; without one the first owner stands in.
      if (controller || m.owner_kind.empty()) {
        m.owner_kind = std::move(kind);
        m.owner_name = std::move(name);
      }
      if (controller) break;
    }
  }
  return {};
}

ParseStatus parsePodElement(element root_element, PodInfo& out) {
  out = PodInfo{};
  object root;
  if (root_element.get(root) != simdjson::SUCCESS) {
    return fail(KubeParseError::kNotAnObject, "pod: not an object");
  }
  Metadata m;
  if (ParseStatus s = parseMetadata(root, "pod", m); !s.ok()) return s;
  out.namespace_ = std::move(m.namespace_);
  out.name = std::move(m.name);
  out.uid = std::move(m.uid);
  out.resource_version = std::move(m.resource_version);
  out.labels = std::move(m.labels);
  out.annotations = std::move(m.annotations);
  out.deleting = m.deleting;
  out.deletion_grace_seconds = m.grace;
  out.owner_kind = std::move(m.owner_kind);
  out.owner_name = std::move(m.owner_name);

  std::optional<object> spec;
  if (ParseStatus s = optionalObject(root, "spec", "pod", spec); !s.ok()) return s;
  if (spec) {
    if (ParseStatus s = stringField(*spec, "nodeName", "pod.spec", out.node_name); !s.ok()) {
      return s;
    }
    element containers;
    if (spec->at_key("containers").get(containers) == simdjson::SUCCESS && !containers.is_null()) {
      simdjson::dom::array list;
      if (containers.get(list) != simdjson::SUCCESS) {
        return fail(KubeParseError::kWrongType, "pod.spec.containers: not an array");
      }
      for (element container : list) {
        object c;
        if (container.get(c) != simdjson::SUCCESS) {
          return fail(KubeParseError::kWrongType, "pod.spec.containers[]: not an object");
        }
        element ports;
        if (c.at_key("ports").get(ports) != simdjson::SUCCESS || ports.is_null()) continue;
        simdjson::dom::array port_list;
        if (ports.get(port_list) != simdjson::SUCCESS) {
          return fail(KubeParseError::kWrongType, "pod.spec.containers[].ports: not an array");
        }
        for (element port : port_list) {
          object p;
          if (port.get(p) != simdjson::SUCCESS) {
            return fail(KubeParseError::kWrongType, "pod.spec.containers[].ports[]: not an object");
          }
          ContainerPort entry;
          int64_t number = 0;
          if (ParseStatus s =
                  intField(p, "containerPort", "pod.spec.containers[].ports[]", 1, 65535, number);
              !s.ok()) {
            return s;
          }
          if (number == 0) continue;  // no containerPort: nothing to connect to
          entry.port = static_cast<int>(number);
          if (ParseStatus s = stringField(p, "name", "pod.spec.containers[].ports[]", entry.name);
              !s.ok()) {
            return s;
          }
          out.ports.push_back(std::move(entry));
        }
      }
    }
  }

  std::optional<object> status;
  if (ParseStatus s = optionalObject(root, "status", "pod", status); !s.ok()) return s;
  if (status) {
    if (ParseStatus s = stringField(*status, "podIP", "pod.status", out.pod_ip); !s.ok()) return s;
    if (ParseStatus s = stringField(*status, "phase", "pod.status", out.phase); !s.ok()) return s;
    element conditions;
    if (status->at_key("conditions").get(conditions) == simdjson::SUCCESS &&
        !conditions.is_null()) {
      simdjson::dom::array list;
      if (conditions.get(list) != simdjson::SUCCESS) {
        return fail(KubeParseError::kWrongType, "pod.status.conditions: not an array");
      }
      for (element condition : list) {
        object c;
        if (condition.get(c) != simdjson::SUCCESS) {
          return fail(KubeParseError::kWrongType, "pod.status.conditions[]: not an object");
        }
        std::string type, value;
        if (ParseStatus s = stringField(c, "type", "pod.status.conditions[]", type); !s.ok()) {
          return s;
        }
        if (type != "Ready") continue;
        if (ParseStatus s = stringField(c, "status", "pod.status.conditions[]", value); !s.ok()) {
          return s;
        }
        out.ready = value == "True";
        if (ParseStatus s =
                stringField(c, "lastTransitionTime", "pod.status.conditions[]", out.ready_since);
            !s.ok()) {
          return s;
        }
      }
    }
  }
  return {};
}

ParseStatus parseDeploymentElement(element root_element, DeploymentInfo& out) {
  out = DeploymentInfo{};
  object root;
  if (root_element.get(root) != simdjson::SUCCESS) {
    return fail(KubeParseError::kNotAnObject, "deployment: not an object");
  }
  Metadata m;
  if (ParseStatus s = parseMetadata(root, "deployment", m); !s.ok()) return s;
  out.namespace_ = std::move(m.namespace_);
  out.name = std::move(m.name);
  out.resource_version = std::move(m.resource_version);
  out.labels = std::move(m.labels);
  out.deleting = m.deleting;
  std::optional<object> spec;
  if (ParseStatus s = optionalObject(root, "spec", "deployment", spec); !s.ok()) return s;
  if (spec) {
    if (ParseStatus s = intField(*spec, "replicas", "deployment.spec", 0, 1'000'000, out.replicas);
        !s.ok()) {
      return s;
    }
  }
  std::optional<object> status;
  if (ParseStatus s = optionalObject(root, "status", "deployment", status); !s.ok()) return s;
  if (status) {
    if (ParseStatus s = intField(*status, "readyReplicas", "deployment.status", 0, 1'000'000,
                                 out.ready_replicas);
        !s.ok()) {
      return s;
    }
  }
  return {};
}

ParseStatus parseRoot(simdjson::dom::parser& parser, std::string_view json, size_t limit,
                      element& root) {
  if (json.size() > limit) {
    return fail(KubeParseError::kTooLarge,
                fmt::format("{} bytes is above the limit of {}", json.size(), limit));
  }
  if (parser.parse(json.data(), json.size(), true).get(root) != simdjson::SUCCESS) {
    return fail(KubeParseError::kMalformedJson, "not valid JSON");
  }
  if (!root.is_object()) return fail(KubeParseError::kNotAnObject, "not a JSON object");
  return {};
}

}  // namespace

std::string_view kubeParseErrorName(KubeParseError error) {
  switch (error) {
    case KubeParseError::kNone:
      return "none";
    case KubeParseError::kTooLarge:
      return "too_large";
    case KubeParseError::kMalformedJson:
      return "malformed_json";
    case KubeParseError::kNotAnObject:
      return "not_an_object";
    case KubeParseError::kMissingField:
      return "missing_field";
    case KubeParseError::kWrongType:
      return "wrong_type";
    case KubeParseError::kBadValue:
      return "bad_value";
  }
  return "unknown";
}

std::string PodInfo::deployment() const {
  if (owner_kind != "ReplicaSet" || owner_name.empty()) return {};
  const auto hash = labels.find("pod-template-hash");
  if (hash != labels.end() && !hash->second.empty() &&
      owner_name.size() > hash->second.size() + 1 && owner_name.ends_with(hash->second) &&
      owner_name[owner_name.size() - hash->second.size() - 1] == '-') {
    return owner_name.substr(0, owner_name.size() - hash->second.size() - 1);
  }
  // No hash label: the ReplicaSet's name stands for its Deployment's.
  return owner_name;
}

ParseStatus parsePod(std::string_view json, PodInfo& out) {
  simdjson::dom::parser parser;
  element root;
  if (ParseStatus s = parseRoot(parser, json, kMaxObjectBytes, root); !s.ok()) return s;
  return parsePodElement(root, out);
}

ParseStatus parseDeployment(std::string_view json, DeploymentInfo& out) {
  simdjson::dom::parser parser;
  element root;
  if (ParseStatus s = parseRoot(parser, json, kMaxObjectBytes, root); !s.ok()) return s;
  return parseDeploymentElement(root, out);
}

ParseStatus parseList(std::string_view json, ResourceKind kind, ListPage& out) {
  out = ListPage{};
  simdjson::dom::parser parser;
  element root_element;
  if (ParseStatus s = parseRoot(parser, json, kMaxListBytes, root_element); !s.ok()) return s;
  const object root = root_element.get_object().value();
  std::optional<object> meta;
  if (ParseStatus s = optionalObject(root, "metadata", "list", meta); !s.ok()) return s;
  if (!meta) return fail(KubeParseError::kMissingField, "list.metadata: required");
  if (ParseStatus s =
          stringField(*meta, "resourceVersion", "list.metadata", out.resource_version, true);
      !s.ok()) {
    return s;
  }
  if (ParseStatus s = stringField(*meta, "continue", "list.metadata", out.continue_token);
      !s.ok()) {
    return s;
  }
  element items;
  if (root.at_key("items").get(items) != simdjson::SUCCESS || items.is_null()) return {};
  simdjson::dom::array list;
  if (items.get(list) != simdjson::SUCCESS) {
    return fail(KubeParseError::kWrongType, "list.items: not an array");
  }
  for (element item : list) {
    if (kind == ResourceKind::kPod) {
      if (ParseStatus s = parsePodElement(item, out.pods.emplace_back()); !s.ok()) return s;
    } else {
      if (ParseStatus s = parseDeploymentElement(item, out.deployments.emplace_back()); !s.ok()) {
        return s;
      }
    }
  }
  return {};
}

ParseStatus parseWatchEvent(std::string_view line, ResourceKind kind, WatchEvent& out) {
  out = WatchEvent{};
  simdjson::dom::parser parser;
  element root_element;
  if (ParseStatus s = parseRoot(parser, line, kMaxObjectBytes, root_element); !s.ok()) return s;
  const object root = root_element.get_object().value();
  std::string type;
  if (ParseStatus s = stringField(root, "type", "event", type, true); !s.ok()) return s;
  if (type == "ADDED") {
    out.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    out.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    out.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    out.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    out.type = WatchEventType::kError;
  } else {
    return fail(KubeParseError::kBadValue, "event.type: unknown type '" + type + "'");
  }
  element object_element;
  if (root.at_key("object").get(object_element) != simdjson::SUCCESS || object_element.is_null()) {
    return fail(KubeParseError::kMissingField, "event.object: required");
  }
  object obj;
  if (object_element.get(obj) != simdjson::SUCCESS) {
    return fail(KubeParseError::kWrongType, "event.object: not an object");
  }
  switch (out.type) {
    case WatchEventType::kError: {
      int64_t code = 0;
      if (ParseStatus s = intField(obj, "code", "event.object", 0, 999, code); !s.ok()) return s;
      out.status_code = static_cast<int>(code);
      return stringField(obj, "message", "event.object", out.message);
    }
    case WatchEventType::kBookmark: {
      Metadata m;
      if (ParseStatus s = parseMetadata(obj, "event.object", m, false); !s.ok()) return s;
      if (m.resource_version.empty()) {
        return fail(KubeParseError::kMissingField,
                    "event.object.metadata.resourceVersion: required in a bookmark");
      }
      out.resource_version = std::move(m.resource_version);
      return {};
    }
    default:
      break;
  }
  if (kind == ResourceKind::kPod) {
    if (ParseStatus s = parsePodElement(object_element, out.pod.emplace()); !s.ok()) return s;
    out.resource_version = out.pod->resource_version;
  } else {
    if (ParseStatus s = parseDeploymentElement(object_element, out.deployment.emplace()); !s.ok()) {
      return s;
    }
    out.resource_version = out.deployment->resource_version;
  }
  return {};
}

ParseStatus parseNodeLabels(std::string_view json, std::map<std::string, std::string>& labels) {
  labels.clear();
  simdjson::dom::parser parser;
  element root_element;
  if (ParseStatus s = parseRoot(parser, json, kMaxObjectBytes, root_element); !s.ok()) return s;
  Metadata m;
  if (ParseStatus s = parseMetadata(root_element.get_object().value(), "node", m); !s.ok()) {
    return s;
  }
  labels = std::move(m.labels);
  return {};
}

bool parseStatus(std::string_view json, int& code, std::string& message) {
  simdjson::dom::parser parser;
  element root_element;
  if (!parseRoot(parser, json, kMaxObjectBytes, root_element).ok()) return false;
  const object root = root_element.get_object().value();
  std::string kind;
  if (!stringField(root, "kind", "status", kind).ok() || kind != "Status") return false;
  int64_t value = 0;
  if (!intField(root, "code", "status", 0, 999, value).ok()) return false;
  code = static_cast<int>(value);
  return stringField(root, "message", "status", message).ok();
}

}  // namespace switchyard::fleet::kubernetes
