#include "fleet/discovery/kubernetes/kube_objects.h"

#include <gtest/gtest.h>

namespace switchyard::fleet::kubernetes {
namespace {

constexpr std::string_view kPod = R"({
  "kind": "Pod", "apiVersion": "v1",
  "metadata": {
    "name": "llama-a100-7d9f-abcde", "namespace": "llm", "uid": "u-1",
    "resourceVersion": "4242",
    "labels": {"model.aibrix.ai/name": "llama2-7b", "pod-template-hash": "7d9f", "gpu": "A100"},
    "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-100"},
    "ownerReferences": [
      {"apiVersion": "v1", "kind": "Node", "name": "other"},
      {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llama-a100-7d9f", "controller": true}
    ]
  },
  "spec": {"nodeName": "gpu-node-3", "containers": [
    {"name": "sidecar"},
    {"name": "vllm", "ports": [{"name": "metrics", "containerPort": 9090},
                               {"name": "http", "containerPort": 8000, "protocol": "TCP"}]}]},
  "status": {"phase": "Running", "podIP": "10.1.2.3", "conditions": [
    {"type": "PodScheduled", "status": "True"},
    {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}
})";

TEST(KubeObjects, ParsesAPod) {
  PodInfo pod;
  const ParseStatus status = parsePod(kPod, pod);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(pod.name, "llama-a100-7d9f-abcde");
  EXPECT_EQ(pod.namespace_, "llm");
  EXPECT_EQ(pod.key(), "llm/llama-a100-7d9f-abcde");
  EXPECT_EQ(pod.uid, "u-1");
  EXPECT_EQ(pod.resource_version, "4242");
  EXPECT_EQ(pod.labels.at("model.aibrix.ai/name"), "llama2-7b");
  EXPECT_EQ(pod.annotations.at("controller.kubernetes.io/pod-deletion-cost"), "-100");
  EXPECT_EQ(pod.owner_kind, "ReplicaSet");  // the controller owner wins over the first
  EXPECT_EQ(pod.owner_name, "llama-a100-7d9f");
  EXPECT_EQ(pod.deployment(), "llama-a100");
  EXPECT_EQ(pod.node_name, "gpu-node-3");
  EXPECT_EQ(pod.pod_ip, "10.1.2.3");
  EXPECT_EQ(pod.phase, "Running");
  EXPECT_TRUE(pod.ready);
  EXPECT_FALSE(pod.deleting);
  ASSERT_EQ(pod.ports.size(), 2u);
  EXPECT_EQ(pod.ports[1].name, "http");
  EXPECT_EQ(pod.ports[1].port, 8000);
}

TEST(KubeObjects, DeletionTimestampAndNotReady) {
  PodInfo pod;
  ASSERT_TRUE(parsePod(R"({"metadata":{"name":"p","deletionTimestamp":"2025-01-01T00:00:00Z",
      "deletionGracePeriodSeconds":30},"status":{"conditions":[{"type":"Ready","status":"False"}]}})",
                       pod)
                  .ok());
  EXPECT_TRUE(pod.deleting);
  EXPECT_EQ(pod.deletion_grace_seconds, 30);
  EXPECT_FALSE(pod.ready);
  EXPECT_TRUE(pod.pod_ip.empty());
  EXPECT_EQ(pod.deployment(), "");  // no owner
}

TEST(KubeObjects, DeploymentOfAReplicaSetWithoutHashLabel) {
  PodInfo pod;
  ASSERT_TRUE(parsePod(R"({"metadata":{"name":"p","ownerReferences":[{"kind":"ReplicaSet",
      "name":"rs-1","controller":true}]}})",
                       pod)
                  .ok());
  EXPECT_EQ(pod.deployment(), "rs-1");
}

TEST(KubeObjects, ParsesADeployment) {
  DeploymentInfo d;
  ASSERT_TRUE(parseDeployment(R"({"kind":"Deployment","metadata":{"name":"llama-l20",
      "namespace":"llm","resourceVersion":"7","labels":{"model.aibrix.ai/min_replicas":"1"}},
      "spec":{"replicas":4},"status":{"readyReplicas":3}})",
                              d)
                  .ok());
  EXPECT_EQ(d.key(), "llm/llama-l20");
  EXPECT_EQ(d.replicas, 4);
  EXPECT_EQ(d.ready_replicas, 3);
  EXPECT_EQ(d.labels.at("model.aibrix.ai/min_replicas"), "1");
  ASSERT_TRUE(parseDeployment(R"({"metadata":{"name":"x"}})", d).ok());
  EXPECT_EQ(d.replicas, 1);  // the API's default
}

TEST(KubeObjects, ParsesAListPage) {
  ListPage page;
  const std::string list = R"({"kind":"PodList","metadata":{"resourceVersion":"99","continue":"c1"},
      "items":[)" + std::string(kPod) +
                           "," + std::string(kPod) + "]}";
  ASSERT_TRUE(parseList(list, ResourceKind::kPod, page).ok());
  EXPECT_EQ(page.resource_version, "99");
  EXPECT_EQ(page.continue_token, "c1");
  EXPECT_EQ(page.pods.size(), 2u);
  ASSERT_TRUE(parseList(R"({"metadata":{"resourceVersion":"5"},"items":null})",
                        ResourceKind::kDeployment, page)
                  .ok());
  EXPECT_TRUE(page.deployments.empty());
}

TEST(KubeObjects, ParsesWatchEvents) {
  WatchEvent event;
  ASSERT_TRUE(parseWatchEvent(R"({"type":"MODIFIED","object":)" + std::string(kPod) + "}",
                              ResourceKind::kPod, event)
                  .ok());
  EXPECT_EQ(event.type, WatchEventType::kModified);
  ASSERT_TRUE(event.pod.has_value());
  EXPECT_EQ(event.resource_version, "4242");

  ASSERT_TRUE(parseWatchEvent(R"({"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1",
      "metadata":{"resourceVersion":"12746","annotations":{"k8s.io/initial-events-end":"true"}}}})",
                              ResourceKind::kPod, event)
                  .ok());
  EXPECT_EQ(event.type, WatchEventType::kBookmark);
  EXPECT_EQ(event.resource_version, "12746");
  EXPECT_FALSE(event.pod.has_value());

  ASSERT_TRUE(parseWatchEvent(R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",
      "status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired",
      "code":410}})json",
                              ResourceKind::kPod, event)
                  .ok());
  EXPECT_EQ(event.type, WatchEventType::kError);
  EXPECT_EQ(event.status_code, 410);
  EXPECT_EQ(event.message, "too old resource version: 1 (5)");

  ASSERT_TRUE(parseWatchEvent(R"({"type":"DELETED","object":{"metadata":{"name":"d",
      "namespace":"n","resourceVersion":"8"},"spec":{"replicas":0}}})",
                              ResourceKind::kDeployment, event)
                  .ok());
  EXPECT_EQ(event.type, WatchEventType::kDeleted);
  ASSERT_TRUE(event.deployment.has_value());
  EXPECT_EQ(event.deployment->replicas, 0);
}

struct BadInput {
  std::string_view text;
  KubeParseError error;
  std::string_view mentions;
};

TEST(KubeObjects, PodErrorsNameTheField) {
  const BadInput cases[] = {
      {"", KubeParseError::kMalformedJson, "JSON"},
      {"{", KubeParseError::kMalformedJson, "JSON"},
      {"[1,2]", KubeParseError::kNotAnObject, "object"},
      {"{}", KubeParseError::kMissingField, "metadata"},
      {R"({"metadata":{}})", KubeParseError::kMissingField, "metadata.name"},
      {R"({"metadata":[]})", KubeParseError::kWrongType, "metadata"},
      {R"({"metadata":{"name":7}})", KubeParseError::kWrongType, "metadata.name"},
      {R"({"metadata":{"name":"p","labels":{"a":1}}})", KubeParseError::kWrongType, "labels[a]"},
      {R"({"metadata":{"name":"p","labels":"x"}})", KubeParseError::kWrongType, "labels"},
      {R"({"metadata":{"name":"p","ownerReferences":{}}})", KubeParseError::kWrongType,
       "ownerReferences"},
      {R"({"metadata":{"name":"p"},"spec":{"containers":[{"ports":[{"containerPort":70000}]}]}})",
       KubeParseError::kBadValue, "containerPort"},
      {R"({"metadata":{"name":"p"},"spec":{"containers":[{"ports":[{"containerPort":"80"}]}]}})",
       KubeParseError::kWrongType, "containerPort"},
      {R"({"metadata":{"name":"p"},"status":{"conditions":[1]}})", KubeParseError::kWrongType,
       "conditions"},
      {R"({"metadata":{"name":"p"},"status":{"podIP":false}})", KubeParseError::kWrongType,
       "podIP"},
      {R"({"metadata":{"name":"p","deletionGracePeriodSeconds":-1}})", KubeParseError::kBadValue,
       "deletionGracePeriodSeconds"},
  };
  for (const BadInput& c : cases) {
    PodInfo pod;
    const ParseStatus status = parsePod(c.text, pod);
    EXPECT_EQ(status.error, c.error) << c.text << " -> " << status.message;
    EXPECT_NE(status.message.find(c.mentions), std::string::npos) << status.message;
    EXPECT_FALSE(kubeParseErrorName(status.error).empty());
  }
}

TEST(KubeObjects, EventErrorsAreDefined) {
  const BadInput cases[] = {
      {R"({"object":{}})", KubeParseError::kMissingField, "event.type"},
      {R"({"type":"ADDED"})", KubeParseError::kMissingField, "event.object"},
      {R"({"type":"ADDED","object":5})", KubeParseError::kWrongType, "event.object"},
      {R"({"type":"RENAMED","object":{}})", KubeParseError::kBadValue, "RENAMED"},
      {R"({"type":"BOOKMARK","object":{"metadata":{}}})", KubeParseError::kMissingField,
       "resourceVersion"},
      {R"({"type":"ERROR","object":{"code":"410"}})", KubeParseError::kWrongType, "code"},
      {R"({"type":"ADDED","object":{"metadata":{}}})", KubeParseError::kMissingField, "name"},
      {"not json at all", KubeParseError::kMalformedJson, "JSON"},
  };
  for (const BadInput& c : cases) {
    WatchEvent event;
    const ParseStatus status = parseWatchEvent(c.text, ResourceKind::kPod, event);
    EXPECT_EQ(status.error, c.error) << c.text << " -> " << status.message;
    EXPECT_NE(status.message.find(c.mentions), std::string::npos) << status.message;
  }
}

TEST(KubeObjects, ListErrorsAndLimits) {
  ListPage page;
  EXPECT_EQ(parseList(R"({"items":[]})", ResourceKind::kPod, page).error,
            KubeParseError::kMissingField);
  // An empty resourceVersion cannot be watched from, an unnamed Pod is no replica (both found
  // by the kube_objects fuzz target).
  EXPECT_EQ(parseList(R"({"metadata":{"resourceVersion":""},"items":[]})", ResourceKind::kPod, page)
                .error,
            KubeParseError::kMissingField);
  PodInfo unnamed;
  EXPECT_EQ(parsePod(R"({"kind":"Pod","metadata":{"name":""}})", unnamed).error,
            KubeParseError::kMissingField);
  EXPECT_EQ(
      parseList(R"({"metadata":{"resourceVersion":"1"},"items":{}})", ResourceKind::kPod, page)
          .error,
      KubeParseError::kWrongType);
  // One bad item fails the page: a store is never half-replaced.
  EXPECT_EQ(parseList(R"({"metadata":{"resourceVersion":"1"},"items":[{"metadata":{}}]})",
                      ResourceKind::kPod, page)
                .error,
            KubeParseError::kMissingField);
  const std::string huge(kMaxObjectBytes + 1, ' ');
  WatchEvent event;
  EXPECT_EQ(parseWatchEvent(huge, ResourceKind::kPod, event).error, KubeParseError::kTooLarge);
}

TEST(KubeObjects, StatusAndNodeLabels) {
  int code = 0;
  std::string message;
  EXPECT_TRUE(parseStatus(R"({"kind":"Status","code":403,"message":"forbidden"})", code, message));
  EXPECT_EQ(code, 403);
  EXPECT_EQ(message, "forbidden");
  EXPECT_FALSE(parseStatus(R"({"kind":"Pod"})", code, message));
  EXPECT_FALSE(parseStatus("<html>", code, message));
  std::map<std::string, std::string> labels;
  ASSERT_TRUE(parseNodeLabels(R"({"metadata":{"name":"n","labels":{"nvidia.com/gpu.product":
      "NVIDIA-A100-SXM4-80GB"}}})",
                              labels)
                  .ok());
  EXPECT_EQ(labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
}

}  // namespace
}  // namespace switchyard::fleet::kubernetes
