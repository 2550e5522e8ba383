#include "support/fake_kube/fake_api_server.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <simdjson.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <future>
#include <list>
#include <set>
#include <thread>

#include "api/openai_error.h"
#include "core/url_text.h"

namespace switchyard::testing {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
using Stream = beast::ssl_stream<beast::tcp_stream>;
using Labels = std::map<std::string, std::string>;

std::string jsonString(std::string_view text) {
  std::string out = "\"";
  api::appendJsonEscaped(out, text);
  out.push_back('"');
  return out;
}

std::string mapJson(const Labels& labels) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out.push_back(',');
    first = false;
    out += jsonString(k) + ":" + jsonString(v);
  }
  return out + "}";
}

std::string statusJson(int code, std::string_view reason, std::string_view message) {
  return fmt::format(
      R"({{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":{},)"
      R"("reason":"{}","code":{}}})",
      jsonString(message), reason, code);
}

std::map<std::string, std::string> parseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    out[urlDecode(pair.substr(0, eq), true)] =
        eq == std::string_view::npos ? std::string() : urlDecode(pair.substr(eq + 1), true);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

// A label selector: key, !key, key=v, key==v, key!=v, key in (a,b), key notin (a,b).
struct Requirement {
  enum Op { kExists, kNotExists, kEquals, kNotEquals, kIn, kNotIn } op;
  std::string key;
  std::vector<std::string> values;
};

std::string trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(s);
}

std::vector<Requirement> parseSelector(std::string_view text) {
  std::vector<Requirement> out;
  size_t depth = 0, start = 0;
  std::vector<std::string> parts;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '(') ++depth;
    if (i < text.size() && text[i] == ')') --depth;
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      if (i > start) parts.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  for (const std::string& part : parts) {
    Requirement r;
    if (const size_t in = part.find(" notin "); in != std::string::npos) {
      r.op = Requirement::kNotIn;
      r.key = trim(part.substr(0, in));
    } else if (const size_t in2 = part.find(" in "); in2 != std::string::npos) {
      r.op = Requirement::kIn;
      r.key = trim(part.substr(0, in2));
    } else if (const size_t ne = part.find("!="); ne != std::string::npos) {
      r.op = Requirement::kNotEquals;
      r.key = trim(part.substr(0, ne));
      r.values.push_back(trim(part.substr(ne + 2)));
    } else if (const size_t eq = part.find('='); eq != std::string::npos) {
      r.op = Requirement::kEquals;
      r.key = trim(part.substr(0, eq));
      r.values.push_back(trim(part.substr(part[eq + 1] == '=' ? eq + 2 : eq + 1)));
    } else if (part.starts_with('!')) {
      r.op = Requirement::kNotExists;
      r.key = trim(part.substr(1));
    } else {
      r.op = Requirement::kExists;
      r.key = part;
    }
    if (r.op == Requirement::kIn || r.op == Requirement::kNotIn) {
      const size_t open = part.find('('), close = part.find(')');
      std::string_view list(part.data() + open + 1, close - open - 1);
      while (!list.empty()) {
        const size_t comma = list.find(',');
        r.values.push_back(trim(list.substr(0, comma)));
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool matches(const std::vector<Requirement>& selector, const Labels& labels) {
  for (const Requirement& r : selector) {
    const auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const auto in = [&] {
      return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    };
    switch (r.op) {
      case Requirement::kExists: if (!has) return false; break;
      case Requirement::kNotExists: if (has) return false; break;
      case Requirement::kEquals: if (!in()) return false; break;
      case Requirement::kNotEquals: if (in()) return false; break;
      case Requirement::kIn: if (!in()) return false; break;
      case Requirement::kNotIn: if (in()) return false; break;
    }
  }
  return true;
}

enum class Kind { kPod, kDeployment };

struct Event {
  int64_t rv = 0;
  Kind kind = Kind::kPod;
  std::string ns;
  std::string json;  // the object after the change (before it, for a deletion)
  bool existed_before = false;
  bool exists_after = false;
  Labels before, after;
};

struct Watcher {
  std::shared_ptr<Stream> stream;
  std::shared_ptr<asio::steady_timer> wake;
  bool cut = false;
  bool bookmark = false;
  bool garbage = false;
};

}  // namespace

struct FakeApiServer::Impl : std::enable_shared_from_this<FakeApiServer::Impl> {
  Impl(Options options_in, const TlsMaterial& tls)
      : options(std::move(options_in)),
        ctx(ssl::context::tls_server),
        acceptor(io),
        token(options.token) {
    ctx.use_certificate_chain(asio::buffer(tls.server_cert_pem));
    ctx.use_private_key(asio::buffer(tls.server_key_pem), ssl::context::pem);
    if (options.require_client_cert) {
      ctx.add_certificate_authority(asio::buffer(tls.ca_pem));
      ctx.set_verify_mode(ssl::verify_peer);  // asked for, checked per request (tokens work too)
      ctx.set_verify_callback([](bool, ssl::verify_context&) { return true; });
    }
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), options.port);
    acceptor.open(endpoint.protocol());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen();
  }

  asio::io_context io{1};
  Options options;
  ssl::context ctx;
  tcp::acceptor acceptor;
  std::thread thread;
  std::string token;
  std::map<std::string, FakePod> pods;  // ns/name
  std::map<std::string, int64_t> pod_rv;
  std::map<std::string, FakeDeployment> deployments;
  std::map<std::string, int64_t> deployment_rv;
  std::map<std::string, Labels> nodes;
  int64_t rv = 1000;
  int64_t min_valid_rv = 0;  // a watch from a version below this gets 410
  int64_t next_uid = 1;
  int64_t ready_seq = 0;
  std::deque<Event> history;
  std::list<std::shared_ptr<Watcher>> watchers;
  // Every connection being served, so that the destructor can close them: each serve coroutine
  // holds the server alive, and a coroutine left suspended in a stopped io_context would keep
  // it (and the io_context) alive forever.
  std::list<std::weak_ptr<Stream>> streams;
  std::chrono::milliseconds delay{0};
  bool down = false;
  int fail_lists = 0;
  int fail_status = 500;
  std::vector<FakePatch> patch_log;
  int64_t list_count = 0;
  int64_t watch_count = 0;
  int64_t unauthorized_count = 0;

  template <class F>
  auto run(F f) -> decltype(f()) {
    using R = decltype(f());
    std::promise<R> promise;
    asio::post(io, [&] {
      if constexpr (std::is_void_v<R>) {
        f();
        promise.set_value();
      } else {
        promise.set_value(f());
      }
    });
    return promise.get_future().get();
  }

  // ---- objects -------------------------------------------------------------------------

  std::string podJson(const FakePod& p, int64_t version) const {
    std::string owner;
    if (!p.owner_replica_set.empty()) {
      owner = fmt::format(
          R"(,"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":{},)"
          R"("uid":"rs-{}","controller":true,"blockOwnerDeletion":true}}])",
          jsonString(p.owner_replica_set), p.owner_replica_set);
    }
    std::string deletion;
    if (p.deleting) {
      deletion = fmt::format(R"(,"deletionTimestamp":"2025-01-01T00:00:00Z",)"
                             R"("deletionGracePeriodSeconds":{})",
                             p.grace_seconds);
    }
    return fmt::format(
        R"({{"kind":"Pod","apiVersion":"v1","metadata":{{"name":{},"namespace":{},"uid":"{}",)"
        R"("resourceVersion":"{}","creationTimestamp":"2025-01-01T00:00:00Z","labels":{},)"
        R"("annotations":{}{}{}}},"spec":{{"nodeName":{},"containers":[{{"name":"engine",)"
        R"("image":"vllm","ports":[{{"name":"http","containerPort":{},"protocol":"TCP"}}]}}]}},)"
        R"("status":{{"phase":"Running","podIP":{},"conditions":[{{"type":"Ready",)"
        R"("status":"{}","lastTransitionTime":"2025-01-01T00:00:00Z"}}]}}}})",
        jsonString(p.name), jsonString(p.namespace_), p.uid, version, mapJson(p.labels),
        mapJson(p.annotations), owner, deletion, jsonString(p.node), p.port, jsonString(p.ip),
        p.ready ? "True" : "False");
  }

  std::string deploymentJson(const FakeDeployment& d, int64_t version) const {
    return fmt::format(
        R"({{"kind":"Deployment","apiVersion":"apps/v1","metadata":{{"name":{},"namespace":{},)"
        R"("uid":"dep-{}","resourceVersion":"{}","labels":{}}},"spec":{{"replicas":{}}},)"
        R"("status":{{"replicas":{},"readyReplicas":{}}}}})",
        jsonString(d.name), jsonString(d.namespace_), d.name, version, mapJson(d.labels), d.replicas,
        d.replicas, d.ready_replicas);
  }

  void wakeAll() {
    for (auto& w : watchers) w->wake->cancel();
  }

  void record(Event event) {
    history.push_back(std::move(event));
    while (history.size() > options.history) {
      min_valid_rv = history.front().rv;
      history.pop_front();
    }
    wakeAll();
  }

  void putPod(FakePod pod) {
    const std::string key = pod.namespace_ + "/" + pod.name;
    Event e;
    e.kind = Kind::kPod;
    e.ns = pod.namespace_;
    if (auto it = pods.find(key); it != pods.end()) {
      e.existed_before = true;
      e.before = it->second.labels;
      if (pod.uid.empty()) pod.uid = it->second.uid;
      if (pod.ready && !it->second.ready) pod.ready_seq = ++ready_seq;
      else if (pod.ready_seq == 0) pod.ready_seq = it->second.ready_seq;
    } else {
      if (pod.uid.empty()) pod.uid = fmt::format("uid-{}", next_uid++);
      if (pod.ready) pod.ready_seq = ++ready_seq;
    }
    e.rv = ++rv;
    e.exists_after = true;
    e.after = pod.labels;
    e.json = podJson(pod, e.rv);
    pod_rv[key] = e.rv;
    pods[key] = std::move(pod);
    record(std::move(e));
  }

  void dropPod(const std::string& key) {
    auto it = pods.find(key);
    if (it == pods.end()) return;
    Event e;
    e.kind = Kind::kPod;
    e.ns = it->second.namespace_;
    e.existed_before = true;
    e.before = e.after = it->second.labels;
    e.rv = ++rv;
    e.json = podJson(it->second, e.rv);
    pods.erase(it);
    pod_rv.erase(key);
    record(std::move(e));
  }

  void putDeployment(FakeDeployment d) {
    const std::string key = d.namespace_ + "/" + d.name;
    Event e;
    e.kind = Kind::kDeployment;
    e.ns = d.namespace_;
    if (auto it = deployments.find(key); it != deployments.end()) {
      e.existed_before = true;
      e.before = it->second.labels;
    }
    e.rv = ++rv;
    e.exists_after = true;
    e.after = d.labels;
    e.json = deploymentJson(d, e.rv);
    deployment_rv[key] = e.rv;
    deployments[key] = std::move(d);
    record(std::move(e));
  }

  std::vector<std::string> scale(const std::string& ns, const std::string& name, int64_t replicas,
                                 int64_t grace, bool honour_cost) {
    const std::string key = ns + "/" + name;
    auto dep = deployments.find(key);
    FakeDeployment d = dep != deployments.end() ? dep->second : FakeDeployment{ns, name, {}, 0, 0};
    d.replicas = replicas;
    std::vector<FakePod*> owned;
    for (auto& [k, pod] : pods) {
      if (pod.namespace_ == ns && !pod.deleting && pod.owner_replica_set.starts_with(name + "-")) {
        owned.push_back(&pod);
      }
    }
    // ReplicaSet controller's ranking (getPodsToDelete): not ready first, then lower
    // deletion cost, then ready for less time (newer), then name.
    auto cost = [&](const FakePod* p) {
      if (!honour_cost) return int64_t{0};
      auto it = p->annotations.find("controller.kubernetes.io/pod-deletion-cost");
      return it == p->annotations.end() ? int64_t{0}
                                        : static_cast<int64_t>(std::stoll(it->second));
    };
    std::sort(owned.begin(), owned.end(), [&](const FakePod* a, const FakePod* b) {
      if (a->ready != b->ready) return !a->ready;
      if (cost(a) != cost(b)) return cost(a) < cost(b);
      if (a->ready_seq != b->ready_seq) return a->ready_seq > b->ready_seq;
      return a->name < b->name;
    });
    std::vector<std::string> victims;
    const int64_t excess = static_cast<int64_t>(owned.size()) - replicas;
    for (int64_t i = 0; i < excess; ++i) victims.push_back(owned[i]->name);
    d.ready_replicas = static_cast<int64_t>(owned.size()) - std::max<int64_t>(0, excess);
    putDeployment(d);
    for (const std::string& victim : victims) deletePodNow(ns, victim, grace);
    return victims;
  }

  void deletePodNow(const std::string& ns, const std::string& name, int64_t grace) {
    const std::string key = ns + "/" + name;
    auto it = pods.find(key);
    if (it == pods.end()) return;
    if (grace <= 0) {
      dropPod(key);
      return;
    }
    FakePod pod = it->second;
    pod.deleting = true;
    pod.grace_seconds = grace;
    putPod(std::move(pod));
  }

  // ---- HTTP ------------------------------------------------------------------------------

  struct Reply {
    unsigned status = 200;
    std::string body;
  };

  bool authorized(Stream& stream, const http::request<http::string_body>& req) const {
    if (options.require_client_cert) {
      X509* peer = SSL_get1_peer_certificate(stream.native_handle());
      const bool ok = peer != nullptr && SSL_get_verify_result(stream.native_handle()) == X509_V_OK;
      if (peer) X509_free(peer);
      if (ok) return true;
    }
    if (token.empty() && !options.require_client_cert) return true;
    const auto auth = req[http::field::authorization];
    return !token.empty() && auth == "Bearer " + token;
  }

  Reply list(Kind kind, const std::string& ns, const std::map<std::string, std::string>& q) {
    ++list_count;
    if (fail_lists > 0) {
      --fail_lists;
      return {static_cast<unsigned>(fail_status),
              statusJson(fail_status, "InternalError", "injected list failure")};
    }
    const auto selector = parseSelector(q.count("labelSelector") ? q.at("labelSelector") : "");
    int64_t version = rv;
    size_t offset = 0;
    if (auto it = q.find("continue"); it != q.end() && !it->second.empty()) {
      const size_t colon = it->second.find(':');
      version = std::stoll(it->second.substr(0, colon));
      offset = std::stoul(it->second.substr(colon + 1));
      if (version < min_valid_rv) {
        return {410, statusJson(410, "Expired", "The provided continue parameter is too old")};
      }
    }
    const size_t limit = q.count("limit") ? std::stoul(q.at("limit")) : 0;
    std::vector<std::string> items;
    if (kind == Kind::kPod) {
      for (const auto& [key, pod] : pods) {
        if ((ns.empty() || pod.namespace_ == ns) && matches(selector, pod.labels)) {
          items.push_back(podJson(pod, pod_rv.at(key)));
        }
      }
    } else {
      for (const auto& [key, d] : deployments) {
        if ((ns.empty() || d.namespace_ == ns) && matches(selector, d.labels)) {
          items.push_back(deploymentJson(d, deployment_rv.at(key)));
        }
      }
    }
    std::string cont;
    size_t end = items.size();
    if (limit > 0 && offset + limit < items.size()) {
      end = offset + limit;
      cont = fmt::format("{}:{}", version, end);
    }
    std::string body = fmt::format(
        R"({{"kind":"{}","apiVersion":"{}","metadata":{{"resourceVersion":"{}","continue":"{}"}},)"
        R"("items":[)",
        kind == Kind::kPod ? "PodList" : "DeploymentList", kind == Kind::kPod ? "v1" : "apps/v1",
        version, cont);
    for (size_t i = std::min(offset, items.size()); i < end; ++i) {
      if (i > offset) body.push_back(',');
      body += items[i];
    }
    body += "]}";
    return {200, std::move(body)};
  }

  Reply patchPod(const std::string& ns, const std::string& name, const std::string& body) {
    auto it = pods.find(ns + "/" + name);
    if (it == pods.end()) return {404, statusJson(404, "NotFound", "pods \"" + name + "\" not found")};
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(body).get(root) != simdjson::SUCCESS) {
      return {400, statusJson(400, "BadRequest", "malformed patch")};
    }
    FakePod pod = it->second;
    for (const char* field : {"annotations", "labels"}) {
      simdjson::dom::object map;
      if (root["metadata"][field].get(map) != simdjson::SUCCESS) continue;
      Labels& target = std::string_view(field) == "labels" ? pod.labels : pod.annotations;
      for (auto [k, v] : map) {
        if (v.is_null()) {
          target.erase(std::string(k));
        } else if (v.is_string()) {
          target[std::string(k)] = std::string(v.get_string().value());
        }
      }
    }
    patch_log.push_back({ns, name, body});
    putPod(pod);
    return {200, podJson(pods.at(ns + "/" + name), pod_rv.at(ns + "/" + name))};
  }

  // Control endpoints for scripts (the scale-down benchmark): /fake/...
  Reply control(http::verb method, const std::vector<std::string>& parts, const std::string& body) {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    const bool has_body = !body.empty() && parser.parse(body).get(root) == simdjson::SUCCESS;
    auto str = [&](const char* key, std::string fallback = {}) {
      std::string_view v;
      if (has_body && root[key].get(v) == simdjson::SUCCESS) return std::string(v);
      return fallback;
    };
    auto num = [&](const char* key, int64_t fallback) {
      int64_t v = 0;
      if (has_body && root[key].get(v) == simdjson::SUCCESS) return v;
      return fallback;
    };
    auto flag = [&](const char* key, bool fallback) {
      bool v = false;
      if (has_body && root[key].get(v) == simdjson::SUCCESS) return v;
      return fallback;
    };
    auto labels = [&](const char* key) {
      Labels out;
      simdjson::dom::object map;
      if (has_body && root[key].get(map) == simdjson::SUCCESS) {
        for (auto [k, v] : map) {
          if (v.is_string()) out[std::string(k)] = std::string(v.get_string().value());
        }
      }
      return out;
    };
    const std::string what = parts.size() > 1 ? parts[1] : "";
    if (what == "pods" && method == http::verb::get) {
      std::string out = R"({"pods":[)";
      bool first = true;
      for (const auto& [key, p] : pods) {
        if (!first) out.push_back(',');
        first = false;
        out += fmt::format(R"({{"namespace":{},"name":{},"port":{},"ready":{},"deleting":{},)"
                           R"("labels":{},"annotations":{}}})",
                           jsonString(p.namespace_), jsonString(p.name), p.port, p.ready, p.deleting,
                           mapJson(p.labels), mapJson(p.annotations));
      }
      return {200, out + "]}"};
    }
    if (method != http::verb::post) return {405, statusJson(405, "MethodNotAllowed", "POST")};
    if (what == "pods" && parts.size() == 2) {
      FakePod p;
      p.namespace_ = str("namespace", "default");
      p.name = str("name");
      p.ip = str("ip", "127.0.0.1");
      p.port = static_cast<int>(num("port", 8000));
      p.ready = flag("ready", true);
      p.node = str("node", "node-1");
      p.owner_replica_set = str("owner_replica_set");
      p.labels = labels("labels");
      p.annotations = labels("annotations");
      if (p.name.empty()) return {400, statusJson(400, "BadRequest", "name required")};
      putPod(std::move(p));
      return {200, "{}"};
    }
    if (what == "pods" && parts.size() == 5) {
      const std::string key = parts[2] + "/" + parts[3];
      auto it = pods.find(key);
      if (it == pods.end()) return {404, statusJson(404, "NotFound", key)};
      if (parts[4] == "ready") {
        FakePod p = it->second;
        p.ready = flag("ready", true);
        putPod(std::move(p));
      } else if (parts[4] == "delete") {
        deletePodNow(parts[2], parts[3], num("grace_seconds", 30));
      } else if (parts[4] == "remove") {
        dropPod(key);
      } else {
        return {404, statusJson(404, "NotFound", parts[4])};
      }
      return {200, "{}"};
    }
    if (what == "deployments") {
      FakeDeployment d;
      d.namespace_ = str("namespace", "default");
      d.name = str("name");
      d.replicas = num("replicas", 1);
      d.ready_replicas = num("ready_replicas", d.replicas);
      d.labels = labels("labels");
      putDeployment(std::move(d));
      return {200, "{}"};
    }
    if (what == "scale") {
      const auto victims = scale(str("namespace", "default"), str("name"), num("replicas", 1),
                                 num("grace_seconds", 30), flag("honour_deletion_cost", true));
      std::string out = R"({"victims":[)";
      for (size_t i = 0; i < victims.size(); ++i) out += (i ? "," : "") + jsonString(victims[i]);
      return {200, out + "]}"};
    }
    if (what == "cut-watches") {
      for (auto& w : watchers) w->cut = true;
      wakeAll();
      return {200, "{}"};
    }
    if (what == "compact") {
      history.clear();
      min_valid_rv = rv;
      return {200, "{}"};
    }
    return {404, statusJson(404, "NotFound", what)};
  }

  asio::awaitable<void> sleepFor(std::chrono::milliseconds d) {
    if (d.count() <= 0) co_return;
    asio::steady_timer t(io, d);
    co_await t.async_wait(kTuple);
  }

  asio::awaitable<bool> writeChunk(Stream& stream, std::string_view data) {
    const std::string head = fmt::format("{:x}\r\n", data.size());
    const std::array<asio::const_buffer, 3> buffers = {asio::buffer(head), asio::buffer(data),
                                                       asio::buffer(std::string_view("\r\n"))};
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    auto [ec, n] = co_await asio::async_write(stream, buffers, kTuple);
    co_return !ec;
  }

  std::string eventLine(std::string_view type, std::string_view object) {
    return fmt::format(R"({{"type":"{}","object":{}}})", type, object) + "\n";
  }

  std::string bookmarkLine(Kind kind) {
    return eventLine("BOOKMARK",
                     fmt::format(R"({{"kind":"{}","apiVersion":"{}","metadata":{{)"
                                 R"("resourceVersion":"{}"}}}})",
                                 kind == Kind::kPod ? "Pod" : "Deployment",
                                 kind == Kind::kPod ? "v1" : "apps/v1", rv));
  }

  asio::awaitable<void> watch(std::shared_ptr<Stream> stream, Kind kind, std::string ns,
                              std::map<std::string, std::string> q) {
    ++watch_count;
    const auto selector = parseSelector(q.count("labelSelector") ? q.at("labelSelector") : "");
    const bool bookmarks = q.count("allowWatchBookmarks") && q.at("allowWatchBookmarks") == "true";
    const int64_t timeout = q.count("timeoutSeconds") ? std::stoll(q.at("timeoutSeconds")) : 1800;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
    int64_t position = 0;
    const std::string from = q.count("resourceVersion") ? q.at("resourceVersion") : "";
    std::vector<std::string> initial;
    if (from.empty() || from == "0") {
      position = rv;
      if (kind == Kind::kPod) {
        for (const auto& [key, pod] : pods) {
          if ((ns.empty() || pod.namespace_ == ns) && matches(selector, pod.labels)) {
            initial.push_back(eventLine("ADDED", podJson(pod, pod_rv.at(key))));
          }
        }
      }
    } else {
      position = std::stoll(from);
    }
    const bool gone = position < min_valid_rv;
    if (gone && options.gone_as_http_status) {
      std::string body = statusJson(410, "Expired", "too old resource version");
      const std::string head = fmt::format(
          "HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
          "Connection: close\r\n\r\n",
          body.size());
      const std::array<asio::const_buffer, 2> buffers = {asio::buffer(head), asio::buffer(body)};
      co_await asio::async_write(*stream, buffers, kTuple);
      co_return;
    }
    static constexpr std::string_view kHead =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        "Cache-Control: no-cache, private\r\n\r\n";
    beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(10));
    auto [hec, hn] = co_await asio::async_write(*stream, asio::buffer(kHead), kTuple);
    if (hec) co_return;
    if (gone) {
      co_await writeChunk(*stream, eventLine("ERROR", statusJson(410, "Expired",
                                                                 fmt::format("too old resource version: {} ({})",
                                                                             position, min_valid_rv))));
      co_await writeChunk(*stream, "");
      co_return;
    }
    for (const std::string& line : initial) {
      if (!co_await writeChunk(*stream, line)) co_return;
    }
    auto watcher = std::make_shared<Watcher>();
    watcher->stream = stream;
    watcher->wake = std::make_shared<asio::steady_timer>(io);
    watchers.push_back(watcher);
    struct Unregister {
      Impl* impl;
      std::shared_ptr<Watcher> w;
      ~Unregister() { impl->watchers.remove(w); }
    } unregister{this, watcher};
    for (;;) {
      if (watcher->cut || down) {
        boost::system::error_code ignored;
        beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
        beast::get_lowest_layer(*stream).close();
        co_return;
      }
      if (watcher->garbage) {
        watcher->garbage = false;
        if (!co_await writeChunk(*stream, "{\"type\":\"MODIFIED\",\"object\":[1,2,3]}\n")) co_return;
      }
      if (position < min_valid_rv) {
        co_await writeChunk(*stream, eventLine("ERROR", statusJson(410, "Expired",
                                                                   "too old resource version")));
        co_await writeChunk(*stream, "");
        co_return;
      }
      std::vector<std::string> lines;
      for (const Event& e : history) {
        if (e.rv <= position) continue;
        position = e.rv;
        if (e.kind != kind || (!ns.empty() && e.ns != ns)) continue;
        const bool was = e.existed_before && matches(selector, e.before);
        const bool is = e.exists_after && matches(selector, e.after);
        if (!was && !is) continue;
        const char* type = !e.exists_after || !is ? "DELETED" : was ? "MODIFIED" : "ADDED";
        lines.push_back(eventLine(type, e.json));
      }
      if (watcher->bookmark) {
        watcher->bookmark = false;
        if (bookmarks) {
          lines.push_back(bookmarkLine(kind));
          position = std::max(position, rv);
        }
      }
      for (const std::string& line : lines) {
        if (!co_await writeChunk(*stream, line)) co_return;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        co_await writeChunk(*stream, "");
        co_return;
      }
      watcher->wake->expires_after(std::min<std::chrono::steady_clock::duration>(
          deadline - std::chrono::steady_clock::now(), std::chrono::seconds(1)));
      co_await watcher->wake->async_wait(kTuple);
    }
  }

  asio::awaitable<void> serve(tcp::socket socket) {
    auto self = shared_from_this();
    auto stream = std::make_shared<Stream>(std::move(socket), ctx);
    streams.remove_if([](const std::weak_ptr<Stream>& s) { return s.expired(); });
    streams.push_back(stream);
    beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(10));
    auto [hec] = co_await stream->async_handshake(ssl::stream_base::server, kTuple);
    if (hec) co_return;
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> req;
      beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(60));
      auto [rec, rn] = co_await http::async_read(*stream, buffer, req, kTuple);
      if (rec) co_return;
      co_await sleepFor(delay);
      if (down) co_return;
      const std::string target(req.target());
      const size_t question = target.find('?');
      const std::string path = target.substr(0, question);
      const auto query =
          parseQuery(question == std::string::npos ? "" : std::string_view(target).substr(question + 1));
      std::vector<std::string> parts;
      for (size_t start = 1; start <= path.size();) {
        const size_t slash = path.find('/', start);
        parts.push_back(path.substr(start, slash - start));
        if (slash == std::string::npos) break;
        start = slash + 1;
      }
      Reply reply{404, statusJson(404, "NotFound", "the server could not find the resource")};
      if (!authorized(*stream, req)) {
        ++unauthorized_count;
        reply = {401, statusJson(401, "Unauthorized", "Unauthorized")};
      } else if (!parts.empty() && parts[0] == "fake") {
        reply = control(req.method(), parts, req.body());
      } else {
        // /api/v1/[namespaces/NS/]pods[/NAME], /apis/apps/v1/[namespaces/NS/]deployments,
        // /api/v1/nodes/NAME
        size_t i = 0;
        std::string ns;
        Kind kind = Kind::kPod;
        bool known = false;
        std::string name;
        if (parts.size() >= 3 && parts[0] == "api" && parts[1] == "v1") {
          i = 2;
        } else if (parts.size() >= 4 && parts[0] == "apis" && parts[1] == "apps" &&
                   parts[2] == "v1") {
          i = 3;
        }
        if (i > 0 && i + 1 < parts.size() && parts[i] == "namespaces") {
          ns = parts[i + 1];
          i += 2;
        }
        if (i > 0 && i < parts.size()) {
          if (parts[i] == "pods" && parts[0] == "api") {
            known = true;
          } else if (parts[i] == "deployments" && parts[0] == "apis") {
            known = true;
            kind = Kind::kDeployment;
          } else if (parts[i] == "nodes" && i + 1 < parts.size()) {
            const auto node = nodes.find(parts[i + 1]);
            reply = node == nodes.end()
                        ? Reply{404, statusJson(404, "NotFound", "node not found")}
                        : Reply{200, fmt::format(R"({{"kind":"Node","apiVersion":"v1","metadata":)"
                                                 R"({{"name":{},"labels":{}}}}})",
                                                 jsonString(node->first), mapJson(node->second))};
          }
          if (known && i + 1 < parts.size()) name = parts[i + 1];
        }
        if (known && name.empty() && req.method() == http::verb::get) {
          const bool is_watch = query.count("watch") &&
                                (query.at("watch") == "1" || query.at("watch") == "true");
          if (is_watch) {
            co_await watch(stream, kind, ns, query);
            boost::system::error_code ignored;
            beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_both,
                                                               ignored);
            co_return;
          }
          reply = list(kind, ns, query);
        } else if (known && !name.empty() && kind == Kind::kPod) {
          if (req.method() == http::verb::patch) {
            reply = patchPod(ns, name, req.body());
          } else if (auto it = pods.find(ns + "/" + name); it != pods.end()) {
            reply = {200, podJson(it->second, pod_rv.at(it->first))};
          }
        }
      }
      http::response<http::string_body> res{static_cast<http::status>(reply.status),
                                             req.version()};
      res.set(http::field::content_type, "application/json");
      res.keep_alive(req.keep_alive());
      res.body() = std::move(reply.body);
      res.prepare_payload();
      beast::get_lowest_layer(*stream).expires_after(std::chrono::seconds(10));
      auto [wec, wn] = co_await http::async_write(*stream, res, kTuple);
      if (wec || !req.keep_alive()) break;
    }
    boost::system::error_code ignored;
    beast::get_lowest_layer(*stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  asio::awaitable<void> acceptLoop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kTuple);
      if (ec) {
        if (!acceptor.is_open()) co_return;
        continue;
      }
      if (down) {
        boost::system::error_code ignored;
        socket.close(ignored);
        continue;
      }
      asio::co_spawn(io, serve(std::move(socket)), asio::detached);
    }
  }
};

FakeApiServer::FakeApiServer(Options options) : tls_(makeTlsMaterial()) {
  impl_ = std::make_shared<Impl>(std::move(options), tls_);
  port_ = impl_->acceptor.local_endpoint().port();
  asio::co_spawn(impl_->io, impl_->acceptLoop(), asio::detached);
  impl_->thread = std::thread([impl = impl_] { impl->io.run(); });
}

FakeApiServer::~FakeApiServer() {
  // Let every coroutine end: each connection's holds the server alive, and one left suspended
  // in a stopped io_context would keep it (and the io_context) alive for good. Once none is
  // left the io_context runs out of work and its thread returns, dropping its reference.
  impl_->run([&] {
    boost::system::error_code ignored;
    impl_->acceptor.close(ignored);
    for (auto& w : impl_->watchers) {
      w->cut = true;
      w->wake->cancel();
    }
    for (auto& weak : impl_->streams) {
      if (auto stream = weak.lock()) beast::get_lowest_layer(*stream).socket().close(ignored);
    }
    impl_->streams.clear();
  });
  for (int i = 0; i < 300 && impl_.use_count() > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded: 3 s at most
  }
  impl_->io.stop();
  impl_->thread.join();
}

std::string FakeApiServer::kubeconfig(bool client_cert) const {
  auto b64 = [](const std::string& data) {
    static constexpr char kChars[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < data.size(); i += 3) {
      const uint32_t v = (uint8_t(data[i]) << 16) | (uint8_t(data[i + 1]) << 8) | uint8_t(data[i + 2]);
      out += {kChars[v >> 18], kChars[(v >> 12) & 63], kChars[(v >> 6) & 63], kChars[v & 63]};
    }
    if (i + 1 == data.size()) {
      const uint32_t v = uint8_t(data[i]) << 16;
      out += {kChars[v >> 18], kChars[(v >> 12) & 63], '=', '='};
    } else if (i + 2 == data.size()) {
      const uint32_t v = (uint8_t(data[i]) << 16) | (uint8_t(data[i + 1]) << 8);
      out += {kChars[v >> 18], kChars[(v >> 12) & 63], kChars[(v >> 6) & 63], '='};
    }
    return out;
  };
  std::string user = client_cert ? fmt::format("    client-certificate-data: {}\n"
                                               "    client-key-data: {}\n",
                                               b64(tls_.client_cert_pem), b64(tls_.client_key_pem))
                                 : fmt::format("    token: {}\n", impl_->options.token);
  return fmt::format(
      "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n  cluster:\n"
      "    server: {}\n    certificate-authority-data: {}\ncontexts:\n- name: fake\n  context:\n"
      "    cluster: fake\n    user: tester\n    namespace: default\nusers:\n- name: tester\n"
      "  user:\n{}",
      url(), b64(tls_.ca_pem), user);
}

void FakeApiServer::upsertPod(FakePod pod) {
  impl_->run([&] { impl_->putPod(std::move(pod)); });
}

void FakeApiServer::setPodReady(const std::string& ns, const std::string& name, bool ready) {
  impl_->run([&] {
    auto it = impl_->pods.find(ns + "/" + name);
    if (it == impl_->pods.end()) return;
    FakePod pod = it->second;
    pod.ready = ready;
    impl_->putPod(std::move(pod));
  });
}

void FakeApiServer::setPodLabel(const std::string& ns, const std::string& name,
                                const std::string& key, const std::string& value) {
  impl_->run([&] {
    auto it = impl_->pods.find(ns + "/" + name);
    if (it == impl_->pods.end()) return;
    FakePod pod = it->second;
    if (value.empty()) {
      pod.labels.erase(key);
    } else {
      pod.labels[key] = value;
    }
    impl_->putPod(std::move(pod));
  });
}

void FakeApiServer::deletePod(const std::string& ns, const std::string& name,
                              int64_t grace_seconds) {
  impl_->run([&] { impl_->deletePodNow(ns, name, grace_seconds); });
}

void FakeApiServer::removePod(const std::string& ns, const std::string& name) {
  impl_->run([&] { impl_->dropPod(ns + "/" + name); });
}

std::vector<FakePod> FakeApiServer::pods() {
  return impl_->run([&] {
    std::vector<FakePod> out;
    for (const auto& [key, pod] : impl_->pods) out.push_back(pod);
    return out;
  });
}

bool FakeApiServer::findPod(const std::string& ns, const std::string& name, FakePod& out) {
  return impl_->run([&] {
    auto it = impl_->pods.find(ns + "/" + name);
    if (it == impl_->pods.end()) return false;
    out = it->second;
    return true;
  });
}

void FakeApiServer::upsertDeployment(FakeDeployment deployment) {
  impl_->run([&] { impl_->putDeployment(std::move(deployment)); });
}

void FakeApiServer::setNodeLabels(const std::string& node,
                                  std::map<std::string, std::string> labels) {
  impl_->run([&] { impl_->nodes[node] = std::move(labels); });
}

std::vector<std::string> FakeApiServer::scaleDeployment(const std::string& ns,
                                                        const std::string& name,
                                                        int64_t replicas, int64_t grace_seconds,
                                                        bool honour_deletion_cost) {
  return impl_->run(
      [&] { return impl_->scale(ns, name, replicas, grace_seconds, honour_deletion_cost); });
}

void FakeApiServer::setToken(std::string token) {
  impl_->run([&] { impl_->token = std::move(token); });
}

void FakeApiServer::setDelay(std::chrono::milliseconds delay) {
  impl_->run([&] { impl_->delay = delay; });
}

void FakeApiServer::setDown(bool down) {
  impl_->run([&] {
    impl_->down = down;
    if (down) impl_->wakeAll();
  });
}

void FakeApiServer::failLists(int count, int status) {
  impl_->run([&] {
    impl_->fail_lists = count;
    impl_->fail_status = status;
  });
}

void FakeApiServer::cutWatches() {
  impl_->run([&] {
    for (auto& w : impl_->watchers) w->cut = true;
    impl_->wakeAll();
  });
}

void FakeApiServer::compactHistory() {
  impl_->run([&] {
    impl_->history.clear();
    impl_->min_valid_rv = impl_->rv;
    impl_->wakeAll();
  });
}

void FakeApiServer::sendBookmarks() {
  impl_->run([&] {
    for (auto& w : impl_->watchers) w->bookmark = true;
    impl_->wakeAll();
  });
}

void FakeApiServer::sendGarbage() {
  impl_->run([&] {
    for (auto& w : impl_->watchers) w->garbage = true;
    impl_->wakeAll();
  });
}

std::vector<FakePatch> FakeApiServer::patches() {
  return impl_->run([&] { return impl_->patch_log; });
}
int FakeApiServer::openWatches() {
  return impl_->run([&] { return static_cast<int>(impl_->watchers.size()); });
}
int64_t FakeApiServer::lists() {
  return impl_->run([&] { return impl_->list_count; });
}
int64_t FakeApiServer::watchRequests() {
  return impl_->run([&] { return impl_->watch_count; });
}
int64_t FakeApiServer::unauthorized() {
  return impl_->run([&] { return impl_->unauthorized_count; });
}
std::string FakeApiServer::resourceVersion() {
  return impl_->run([&] { return std::to_string(impl_->rv); });
}

}  // namespace switchyard::testing
