#include "fleet/discovery/kubernetes/pod_mapping.h"

#include <gtest/gtest.h>

#include "fleet/discovery/kubernetes/victim_choice.h"

namespace switchyard::fleet::kubernetes {
namespace {

PodInfo pod(std::string name, std::string ip, bool ready = true) {
  PodInfo p;
  p.namespace_ = "llm";
  p.name = name;
  p.uid = "uid-" + name;
  p.pod_ip = std::move(ip);
  p.ready = ready;
  p.phase = "Running";
  p.labels = {{"model.aibrix.ai/name", "llama"}, {"pod-template-hash", "abc"}, {"team", "x"}};
  p.owner_kind = "ReplicaSet";
  p.owner_name = "llama-a100-abc";
  p.ports = {{"metrics", 9090}, {"http", 8000}};
  return p;
}

std::vector<DiscoveredReplica> map(const std::vector<PodInfo>& pods, std::set<std::string>& admitted,
                                   bool initial = false,
                                   const std::map<std::string, std::string>* nodes = nullptr,
                                   MappingSettings settings = {}) {
  std::vector<const PodInfo*> ptrs;
  for (const PodInfo& p : pods) ptrs.push_back(&p);
  MappingContext context;
  context.admitted = &admitted;
  context.initial = initial;
  context.node_gpus = nodes;
  return mapPods(ptrs, settings, context);
}

TEST(PodMapping, AReadyPodWithAnIpIsAReplica) {
  std::set<std::string> admitted;
  PodInfo p = pod("a", "10.0.0.5");
  p.labels["gpu"] = "A100";
  p.labels["engine"] = "vllm";
  const auto replicas = map({p}, admitted, true);
  ASSERT_EQ(replicas.size(), 1u);
  const DiscoveredReplica& r = replicas[0];
  EXPECT_EQ(r.model, "llama");
  EXPECT_EQ(r.spec.address, "10.0.0.5:8000");  // the container port named http
  EXPECT_EQ(r.spec.labels.at("gpu"), "A100");
  EXPECT_EQ(r.spec.labels.at("engine"), "vllm");
  EXPECT_EQ(r.spec.labels.at("team"), "x");  // every Pod label comes along
  EXPECT_EQ(r.spec.lifecycle, 0);
  EXPECT_TRUE(r.spec.established);
  EXPECT_EQ(r.spec.pod.name, "a");
  EXPECT_EQ(r.spec.pod.namespace_, "llm");
  EXPECT_EQ(r.spec.pod.deployment, "llama-a100");
  EXPECT_TRUE(admitted.count("uid-a"));
}

TEST(PodMapping, StartingPodsStayOutUntilReady) {
  std::set<std::string> admitted;
  EXPECT_TRUE(map({pod("a", "")}, admitted).empty());          // no IP yet
  EXPECT_TRUE(map({pod("a", "10.0.0.5", false)}, admitted).empty());  // never Ready yet
  ASSERT_EQ(map({pod("a", "10.0.0.5")}, admitted).size(), 1u);
  // Once admitted, NotReady keeps it in the fleet, excluded.
  const auto replicas = map({pod("a", "10.0.0.5", false)}, admitted);
  ASSERT_EQ(replicas.size(), 1u);
  EXPECT_EQ(replicas[0].spec.lifecycle, kNotReady);
  EXPECT_FALSE(replicas[0].spec.established);
}

TEST(PodMapping, DeletingAndDrainLabelledPodsDrain) {
  std::set<std::string> admitted;
  PodInfo deleting = pod("a", "10.0.0.5");
  deleting.deleting = true;
  PodInfo labelled = pod("b", "10.0.0.6");
  labelled.labels["aibrix.ai/draining"] = "true";
  PodInfo not_really = pod("c", "10.0.0.7");
  not_really.labels["aibrix.ai/draining"] = "false";
  const auto replicas = map({deleting, labelled, not_really}, admitted);
  ASSERT_EQ(replicas.size(), 3u);
  EXPECT_EQ(replicas[0].spec.lifecycle, kTerminating);
  EXPECT_EQ(replicas[1].spec.lifecycle, kDrainLabel);
  EXPECT_EQ(replicas[2].spec.lifecycle, 0);
}

TEST(PodMapping, FinishedAndUnlabelledPodsAreNotReplicas) {
  std::set<std::string> admitted;
  PodInfo done = pod("a", "10.0.0.5");
  done.phase = "Succeeded";
  PodInfo failed = pod("b", "10.0.0.6");
  failed.phase = "Failed";
  PodInfo other = pod("c", "10.0.0.7");
  other.labels.erase("model.aibrix.ai/name");
  PodInfo empty = pod("d", "10.0.0.8");
  empty.labels["model.aibrix.ai/name"] = "";
  EXPECT_TRUE(map({done, failed, other, empty}, admitted).empty());
}

TEST(PodMapping, PortFromLabelAnnotationNamedPortOrDefault) {
  MappingSettings settings;
  PodInfo p = pod("a", "10.0.0.5");
  EXPECT_EQ(podPort(p, settings), 8000);
  p.annotations["model.aibrix.ai/port"] = "8100";
  EXPECT_EQ(podPort(p, settings), 8100);
  p.labels["model.aibrix.ai/port"] = "8200";  // the label wins over the annotation
  EXPECT_EQ(podPort(p, settings), 8200);
  p.labels["model.aibrix.ai/port"] = "http";
  std::string why;
  EXPECT_EQ(podPort(p, settings, &why), -1);
  EXPECT_NE(why.find("is not a port"), std::string::npos);
  PodInfo bare = pod("b", "10.0.0.6");
  bare.ports.clear();
  EXPECT_EQ(podPort(bare, settings), 8000);
  settings.default_port = 9000;
  EXPECT_EQ(podPort(bare, settings), 9000);
  // A bad port label keeps the Pod out, with a problem line.
  std::set<std::string> admitted;
  std::vector<const PodInfo*> ptrs = {&p};
  std::vector<std::string> problems;
  MappingContext context;
  context.admitted = &admitted;
  EXPECT_TRUE(mapPods(ptrs, MappingSettings{}, context, &problems).empty());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("llm/a"), std::string::npos);
}

TEST(PodMapping, GpuFromPodLabelsThenTheNode) {
  std::set<std::string> admitted;
  std::map<std::string, std::string> nodes = {{"node-7", "NVIDIA-L20"}};
  PodInfo p = pod("a", "10.0.0.5");
  p.node_name = "node-7";
  auto replicas = map({p}, admitted, false, &nodes);
  EXPECT_EQ(replicas[0].spec.labels.at("gpu"), "NVIDIA-L20");
  p.labels["nvidia.com/gpu.product"] = "H100";
  replicas = map({p}, admitted, false, &nodes);
  EXPECT_EQ(replicas[0].spec.labels.at("gpu"), "H100");
  p.labels.erase("nvidia.com/gpu.product");
  p.node_name = "unknown-node";
  replicas = map({p}, admitted, false, &nodes);
  EXPECT_EQ(replicas[0].spec.labels.count("gpu"), 0u);
}

TEST(PodMapping, IPv6AndDuplicates) {
  std::set<std::string> admitted;
  PodInfo v6 = pod("a", "fd00::5");
  PodInfo old = pod("b", "10.0.0.9");
  old.deleting = true;
  PodInfo fresh = pod("c", "10.0.0.9");
  const auto replicas = map({v6, old, fresh}, admitted);
  ASSERT_EQ(replicas.size(), 2u);
  EXPECT_EQ(replicas[0].spec.address, "10.0.0.9:8000");
  EXPECT_EQ(replicas[0].spec.pod.name, "c");  // the one not draining stays
  EXPECT_EQ(replicas[1].spec.address, "[fd00::5]:8000");
}

TEST(ComposeFleet, DiscoveredReplicasJoinStaticModelsOrNewOnes) {
  ModelSpec stat;
  stat.name = "llama";
  stat.routing_strategy = "load-balance";
  stat.replicas.push_back({"10.0.0.1:8000", {{"gpu", "A10"}}});
  ModelSpec defaults;
  defaults.routing_strategy = "least-request";
  defaults.candidate_sample = 0;
  DiscoveredReplica a{"llama", {"10.0.0.2:8000", {{"gpu", "A100"}}}};
  DiscoveredReplica dup{"llama", {"10.0.0.1:8000", {{"gpu", "other"}}}};
  DiscoveredReplica b{"mistral", {"10.0.0.3:8000", {}}};
  const auto models = composeFleet({stat}, {a, dup, b}, defaults);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "llama");
  EXPECT_EQ(models[0].routing_strategy, "load-balance");
  ASSERT_EQ(models[0].replicas.size(), 2u);
  EXPECT_EQ(models[0].replicas[0].labels.at("gpu"), "A10");  // the static entry wins
  EXPECT_EQ(models[1].name, "mistral");
  EXPECT_EQ(models[1].routing_strategy, "least-request");
  EXPECT_EQ(models[1].replicas.size(), 1u);
}

ScaleDownSettings settings() {
  ScaleDownSettings s;
  s.switch_margin = 2;
  s.session_weight = 0.5;
  s.job_weight = 2;
  return s;
}

TEST(VictimChoice, CheapestToLoseFirst) {
  const std::vector<VictimCandidate> candidates = {
      {"a", 5, 0, 0, false}, {"b", 1, 0, 0, false}, {"c", 1, 4, 0, false},
      {"d", 0, 0, 1, false}, {"e", 2, 0, 0, true}};
  // costs: a 5, b 1, c 3, d 2, e 1.5
  EXPECT_EQ(chooseVictims(candidates, {}, 1, settings()), std::vector<std::string>{"b"});
  EXPECT_EQ(chooseVictims(candidates, {}, 3, settings()),
            (std::vector<std::string>{"b", "e", "d"}));
  EXPECT_EQ(chooseVictims(candidates, {}, 9, settings()).size(), 5u);
  EXPECT_DOUBLE_EQ(victimCost(candidates[2], settings()), 3.0);
}

TEST(VictimChoice, TheStandingChoiceHoldsWithinTheMargin) {
  std::vector<VictimCandidate> candidates = {{"a", 3, 0, 0, false}, {"b", 2, 0, 0, false}};
  EXPECT_EQ(chooseVictims(candidates, {"a"}, 1, settings()), std::vector<std::string>{"a"});
  candidates[0].in_flight = 5;  // now b is cheaper by 3 > margin 2
  EXPECT_EQ(chooseVictims(candidates, {"a"}, 1, settings()), std::vector<std::string>{"b"});
  // A standing victim that is no longer a candidate (deleting, gone) is replaced.
  EXPECT_EQ(chooseVictims(candidates, {"zzz"}, 1, settings()), std::vector<std::string>{"b"});
  // Ties go to the name, so every gateway agrees.
  candidates = {{"y", 1, 0, 0, false}, {"x", 1, 0, 0, false}};
  EXPECT_EQ(chooseVictims(candidates, {}, 1, settings()), std::vector<std::string>{"x"});
  EXPECT_TRUE(chooseVictims({}, {"a"}, 1, settings()).empty());
}

TEST(VictimChoice, ParsesTheOptimizersAnswer) {
  EXPECT_EQ(parseRecommendedReplicas("vllm:deployment_replicas{model_name=\"m\"} 300\n", 100), 3);
  EXPECT_EQ(parseRecommendedReplicas("# HELP x\nvllm:deployment_replicas 250\n", 100), 3);
  EXPECT_EQ(parseRecommendedReplicas("vllm:deployment_replicas 2", 1), 2);
  EXPECT_EQ(parseRecommendedReplicas("vllm:deployment_replicas 0\n", 100), 0);
  EXPECT_EQ(parseRecommendedReplicas("other 3\n", 100), -1);
  EXPECT_EQ(parseRecommendedReplicas("vllm:deployment_replicas{x=\"1\" 3", 100), -1);
  EXPECT_EQ(parseRecommendedReplicas("vllm:deployment_replicas nan", 100), -1);
  EXPECT_EQ(parseRecommendedReplicas("vllm:deployment_replicas -4", 100), -1);
}

}  // namespace
}  // namespace switchyard::fleet::kubernetes
