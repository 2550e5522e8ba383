// FakeApiServer: a Kubernetes API server for tests and the scale-down benchmark. Real HTTPS
// (a throw-away CA, test_tls.h), the real list/watch protocol for Pods and Deployments:
// label selectors, paginated lists (limit/continue), watches from a resourceVersion as chunked
// streams of JSON lines with bookmarks (allowWatchBookmarks), timeoutSeconds, 410 Gone for a
// resourceVersion older than the kept history (as an ERROR event, or as an HTTP 410 when asked),
// filtered-watch semantics (an object leaving the selector is DELETED), bearer-token or
// client-certificate checks (401), merge-patches of Pod annotations and labels, Node reads.
//
// Injections: Pods added, made Ready / NotReady, deleted with a grace period (deletionTimestamp
// first, removal later) or at once, labels changed; watch connections cut; history compacted
// (the next watch from an old version gets 410); the server slow (every answer delayed) or down
// (connections closed on accept); lists failing with an HTTP status.
//
// A ReplicaSet controller stand-in (scaleDeployment) picks Pods to delete the way Kubernetes
// does: not-ready first, then the lowest controller.kubernetes.io/pod-deletion-cost (unless told
// to ignore it), then the most recently Ready.
//
// Runs its own io_context on its own thread; every public method is thread-safe (it runs on that
// thread and waits). Test code only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/fake_kube/test_tls.h"

namespace switchyard::testing {

struct FakePod {
  std::string namespace_ = "default";
  std::string name;
  std::string ip = "127.0.0.1";
  int port = 8000;             // the container port named "http"
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  bool ready = true;
  std::string node = "node-1";
  std::string owner_replica_set;  // "" = no owner
  // Set by the server:
  std::string uid;
  bool deleting = false;
  int64_t grace_seconds = 0;
  int64_t ready_seq = 0;  // order in which Pods became Ready (the controller's tie-break)
};

struct FakeDeployment {
  std::string namespace_ = "default";
  std::string name;
  std::map<std::string, std::string> labels;
  int64_t replicas = 1;
  int64_t ready_replicas = 0;
};

struct FakePatch {
  std::string namespace_;
  std::string name;
  std::string body;
};

class FakeApiServer {
 public:
  struct Options {
    std::string token = "test-token";  // "" = no bearer token required
    bool require_client_cert = false;  // a client certificate signed by the CA authenticates
    size_t history = 10000;            // watch events kept for resuming
    uint16_t port = 0;                 // 0: OS-chosen
    bool gone_as_http_status = false;  // 410 as the watch's HTTP status instead of an event
  };
  explicit FakeApiServer(Options options);
  FakeApiServer() : FakeApiServer(Options{}) {}
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  const TlsMaterial& tls() const { return tls_; }
  // A kubeconfig reaching this server with the bearer token (or the client certificate).
  std::string kubeconfig(bool client_cert = false) const;

  // Objects. Every change is one watch event.
  void upsertPod(FakePod pod);
  void setPodReady(const std::string& ns, const std::string& name, bool ready);
  void setPodLabel(const std::string& ns, const std::string& name, const std::string& key,
                   const std::string& value);  // value "" removes the label
  // grace_seconds > 0: deletionTimestamp now (MODIFIED), removal left to removePod(); 0: DELETED.
  void deletePod(const std::string& ns, const std::string& name, int64_t grace_seconds);
  void removePod(const std::string& ns, const std::string& name);
  std::vector<FakePod> pods();
  bool findPod(const std::string& ns, const std::string& name, FakePod& out);
  void upsertDeployment(FakeDeployment deployment);
  void setNodeLabels(const std::string& node, std::map<std::string, std::string> labels);
  // The ReplicaSet controller: sets the Deployment's replicas; when it shrinks, marks the
  // victims deleting (grace period `grace_seconds`) and returns their names.
  std::vector<std::string> scaleDeployment(const std::string& ns, const std::string& name,
                                           int64_t replicas, int64_t grace_seconds,
                                           bool honour_deletion_cost);

  // Faults.
  void setToken(std::string token);
  void setDelay(std::chrono::milliseconds delay);  // every answer waits this long first
  void setDown(bool down);                          // close every connection on accept
  void failLists(int count, int status);            // the next `count` lists answer `status`
  void cutWatches();                                // reset every open watch connection
  void compactHistory();                            // watches from any older version get 410
  void sendBookmarks();                             // a BOOKMARK on every open watch
  void sendGarbage();                               // a malformed line on every open watch

  // Observations.
  std::vector<FakePatch> patches();
  int openWatches();
  int64_t lists();
  int64_t watchRequests();
  int64_t unauthorized();
  std::string resourceVersion();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  TlsMaterial tls_;
  uint16_t port_ = 0;
};

}  // namespace switchyard::testing
