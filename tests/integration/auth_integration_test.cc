// API keys end to end: `switchyard keys` manages the file, the gateway answers 401, 404 and 429
// as OpenAI does with the x-ratelimit-* headers, reloads the file while running, names keys (and
// never shows them) in metrics, logs, decisions and traces, keeps the client's credentials from
// the engines and sends each replica its own, and locks the admin listener.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gateway_harness.h"
#include "loopback_server.h"

namespace switchyard::testing {
namespace {

// Runs `switchyard ARGS…` to completion; its exit code and every stdout line.
struct CommandResult {
  std::optional<int> exit;
  std::vector<std::string> out;
};
CommandResult runCommand(std::vector<std::string> args) {
  auto child = spawnSwitchyard(std::move(args));
  CommandResult r;
  r.exit = child->waitExit(deadlineIn(20s));
  r.out = child->allStdoutLines(deadlineIn(5s));
  return r;
}

std::string addKey(const std::string& file, const std::string& name, const std::string& models,
                   int rpm = 0, int tpm = 0) {
  const CommandResult r =
      runCommand({"keys", "add", "--file", file, "--name", name, "--models", models, "--rpm",
                  std::to_string(rpm), "--tpm", std::to_string(tpm)});
  EXPECT_EQ(r.exit, std::optional<int>(0));
  EXPECT_EQ(r.out.size(), 1u);
  return r.out.empty() ? std::string() : r.out[0];
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Headers bearer(const std::string& key) {
  return {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + key}};
}

std::string chat(std::string_view model, int max_tokens = 8, std::string_view content = "hi") {
  return "{\"model\":\"" + std::string(model) +
         "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + std::string(content) +
         "\"}],\"max_tokens\":" + std::to_string(max_tokens) + "}";
}

// A temporary directory for keys files (keys add creates the file and a lock file beside it).
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/switchyard-keys-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class AuthTest : public ::testing::Test {
 protected:
  // Two models on one engine each: llama2-7b and mistral-7b.
  void SetUp() override {
    engines_.push_back(startEngine("A100"));
    engines_.push_back(std::make_unique<Process>(std::vector<std::string>{
        "engine", "--gpu", "A100", "--model", "mistral-7b", "--listen", "127.0.0.1:0"}));
    keys_ = dir_.file("keys.yaml");
  }
  std::string models(const std::string& model_extra = "") const {
    return "models:\n  - name: llama2-7b\n" + model_extra + "    replicas:\n" +
           replicaLine(engines_[0]->port(), "A100") + "  - name: mistral-7b\n    replicas:\n" +
           replicaLine(engines_[1]->port(), "A100");
  }
  void startGateway(const std::string& top, const std::string& model_extra = "") {
    config_ = std::make_unique<TempFile>(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
        "reload_poll_interval_ms: 100\nlogging: { access_log: true }\n" +
            top + models(model_extra),
        ".yaml");
    gateway_ = std::make_unique<Process>(
        std::vector<std::string>{"gateway", "--config", config_->path()});
    ASSERT_NE(gateway_->port(1), 0);
  }
  uint16_t port() const { return gateway_->port(0); }
  uint16_t admin() const { return gateway_->port(1); }
  std::string metrics() { return httpRequest(admin(), "GET", "/metrics").body; }
  std::string logs() {
    std::string all;
    for (const std::string& line : gateway_->child().stdoutLines()) all += line + "\n";
    return all;
  }

  TempDir dir_;
  std::string keys_;
  std::vector<std::unique_ptr<Process>> engines_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
};

TEST_F(AuthTest, KeysCommandPrintsTheKeyOnceAndStoresOnlyItsDigest) {
  const std::string key = addKey(keys_, "alice", "llama2-7b,mistral-7b", 60, 1000);
  ASSERT_TRUE(key.starts_with("sk-sy-")) << key;
  const std::string file = readFile(keys_);
  EXPECT_EQ(file.find(key), std::string::npos);
  EXPECT_EQ(file.find(key.substr(6, 20)), std::string::npos);
  EXPECT_NE(file.find("name: alice"), std::string::npos);
  EXPECT_EQ(std::filesystem::status(keys_).permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);

  const CommandResult list = runCommand({"keys", "list", "--file", keys_});
  EXPECT_EQ(list.exit, std::optional<int>(0));
  std::string listed;
  for (const auto& line : list.out) listed += line + "\n";
  EXPECT_NE(listed.find("alice"), std::string::npos);
  EXPECT_NE(listed.find("llama2-7b,mistral-7b"), std::string::npos);
  EXPECT_EQ(listed.find(key.substr(6, 12)), std::string::npos) << listed;

  // A second key under the same name is refused; another name is fine.
  EXPECT_EQ(runCommand({"keys", "add", "--file", keys_, "--name", "alice", "--models", "*"}).exit,
            std::optional<int>(1));
  const std::string bob = addKey(keys_, "bob", "*");
  EXPECT_NE(bob, key);
  EXPECT_EQ(runCommand({"keys", "revoke", "--file", keys_, "--name", "alice"}).exit,
            std::optional<int>(0));
  EXPECT_EQ(readFile(keys_).find("name: alice"), std::string::npos);
  EXPECT_EQ(runCommand({"keys", "revoke", "--file", keys_, "--name", "alice"}).exit,
            std::optional<int>(1));
  // Bad input is refused with an exit code, never written.
  EXPECT_EQ(runCommand({"keys", "add", "--file", keys_, "--name", "bad name", "--models", "*"})
                .exit,
            std::optional<int>(2));
}

TEST_F(AuthTest, MissingOrWrongKeysAre401InvalidApiKey) {
  const std::string key = addKey(keys_, "alice", "*");
  startGateway("auth: { keys_file: " + keys_ + " }\n");
  const HttpResult missing = httpRequest(port(), "POST", "/v1/chat/completions", chat("llama2-7b"),
                                         kJson);
  EXPECT_EQ(missing.status, 401);
  EXPECT_NE(missing.body.find("\"code\":\"invalid_api_key\""), std::string::npos) << missing.body;
  EXPECT_NE(missing.header("WWW-Authenticate").find("Bearer"), std::string::npos);
  const HttpResult wrong = httpRequest(port(), "POST", "/v1/chat/completions",
                                       chat("llama2-7b"), bearer(key + "x"));
  EXPECT_EQ(wrong.status, 401);
  EXPECT_NE(wrong.body.find("invalid_api_key"), std::string::npos);
  EXPECT_EQ(wrong.body.find(key), std::string::npos);  // never echoed
  const HttpResult basic = httpRequest(port(), "GET", "/v1/models", {},
                                       {{"Authorization", "Basic YWxpY2U6cGFzcw=="}});
  EXPECT_EQ(basic.status, 401);
  // An unauthenticated client learns nothing about models: an unknown one is 401 too.
  EXPECT_EQ(httpRequest(port(), "POST", "/v1/chat/completions", chat("nope"), kJson).status, 401);

  const HttpResult ok = httpRequest(port(), "POST", "/v1/chat/completions", chat("llama2-7b"),
                                    bearer(key));
  EXPECT_EQ(ok.status, 200) << ok.body;
  const std::string m = metrics();
  EXPECT_EQ(metricSample(m, "switchyard_auth_failures_total{reason=\"missing\"}"), 2);
  EXPECT_EQ(metricSample(m, "switchyard_auth_failures_total{reason=\"invalid\"}"), 2);
  EXPECT_EQ(metricSample(m, "switchyard_key_requests_total{key=\"alice\",outcome=\"allowed\"}"),
            1);
}

TEST_F(AuthTest, AModelTheKeyMayNotUseIsAnsweredLikeOneThatDoesNotExist) {
  const std::string key = addKey(keys_, "alice", "llama2-7b");
  startGateway("auth: { keys_file: " + keys_ + " }\n");
  const HttpResult denied = httpRequest(port(), "POST", "/v1/chat/completions",
                                        chat("mistral-7b"), bearer(key));
  const HttpResult unknown = httpRequest(port(), "POST", "/v1/chat/completions",
                                         chat("mistral-8b"), bearer(key));
  EXPECT_EQ(denied.status, 404);
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(denied.body.find("\"code\":\"model_not_found\""), std::string::npos);
  // The same answer but for the name: a key cannot tell a hidden model from a missing one.
  std::string masked = denied.body;
  masked.replace(masked.find("mistral-7b"), 10, "mistral-8b");
  EXPECT_EQ(masked, unknown.body);
  EXPECT_EQ(httpRequest(port(), "POST", "/v1/chat/completions", chat("llama2-7b"), bearer(key))
                .status,
            200);
  // /v1/models lists the key's models only.
  const HttpResult listed = httpRequest(port(), "GET", "/v1/models", {}, bearer(key));
  EXPECT_EQ(listed.status, 200);
  EXPECT_NE(listed.body.find("llama2-7b"), std::string::npos);
  EXPECT_EQ(listed.body.find("mistral-7b"), std::string::npos) << listed.body;
  EXPECT_EQ(metricSample(metrics(),
                         "switchyard_key_requests_total{key=\"alice\",outcome=\"model_denied\"}"),
            1);
}

TEST_F(AuthTest, RequestAndTokenBudgetsAnswer429WithTheLimitAndRateLimitHeaders) {
  const std::string few = addKey(keys_, "few-requests", "*", /*rpm=*/3, /*tpm=*/0);
  const std::string thin = addKey(keys_, "few-tokens", "*", /*rpm=*/0, /*tpm=*/100);
  startGateway("auth: { keys_file: " + keys_ + " }\n");
  for (int i = 0; i < 3; ++i) {
    const HttpResult r = httpRequest(port(), "POST", "/v1/chat/completions", chat("llama2-7b"),
                                     bearer(few));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-ratelimit-limit-requests"), "3");
    EXPECT_EQ(r.header("x-ratelimit-remaining-requests"), std::to_string(2 - i));
    EXPECT_FALSE(r.header("x-ratelimit-reset-requests").empty());
    EXPECT_FALSE(r.hasHeader("x-ratelimit-limit-tokens"));  // no token budget
  }
  const HttpResult limited = httpRequest(port(), "POST", "/v1/chat/completions",
                                         chat("llama2-7b"), bearer(few));
  EXPECT_EQ(limited.status, 429);
  EXPECT_NE(limited.body.find("\"type\":\"requests\""), std::string::npos) << limited.body;
  EXPECT_NE(limited.body.find("\"code\":\"rate_limit_exceeded\""), std::string::npos);
  EXPECT_NE(limited.body.find("requests per min"), std::string::npos);
  const int retry = std::atoi(limited.header("Retry-After").c_str());
  EXPECT_GE(retry, 1);
  EXPECT_LE(retry, 20);
  EXPECT_EQ(limited.header("x-ratelimit-limit-requests"), "3");
  EXPECT_EQ(limited.header("x-ratelimit-remaining-requests"), "0");

  // Tokens: the first request's estimate fits a full bucket; its usage (the emulator produces
  // max_tokens) then leaves too little. One connection: the usage is settled before the next
  // request is read.
  HttpClient client(port());
  const HttpResult first = client.request("POST", "/v1/chat/completions", chat("llama2-7b", 64),
                                          bearer(thin));
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.header("x-ratelimit-limit-tokens"), "100");
  EXPECT_FALSE(first.hasHeader("x-ratelimit-limit-requests"));
  const HttpResult out = client.request("POST", "/v1/chat/completions", chat("llama2-7b", 64),
                                        bearer(thin));
  EXPECT_EQ(out.status, 429) << out.body;
  EXPECT_NE(out.body.find("\"type\":\"tokens\""), std::string::npos) << out.body;
  EXPECT_NE(out.body.find("tokens per min"), std::string::npos);
  EXPECT_FALSE(out.header("Retry-After").empty());
  EXPECT_EQ(out.header("x-ratelimit-limit-tokens"), "100");
  EXPECT_FALSE(out.header("x-ratelimit-remaining-tokens").empty());

  const std::string m = metrics();
  EXPECT_EQ(metricSample(
                m, "switchyard_key_requests_total{key=\"few-requests\",outcome=\"request_limited\"}"),
            1);
  EXPECT_EQ(metricSample(
                m, "switchyard_key_requests_total{key=\"few-tokens\",outcome=\"token_limited\"}"),
            1);
  EXPECT_GT(metricSample(m, "switchyard_key_tokens_total{key=\"few-tokens\",kind=\"completion\"}"),
            0);
  EXPECT_EQ(metricSample(m, "switchyard_rejected_requests_total{limit=\"user_rate\"}"), 1);
  EXPECT_EQ(metricSample(m, "switchyard_rejected_requests_total{limit=\"token_rate\"}"), 1);
}

TEST_F(AuthTest, KeysAddedAndRevokedWhileRunningTakeEffectWithoutARestart) {
  const std::string alice = addKey(keys_, "alice", "*");
  startGateway("auth: { keys_file: " + keys_ + " }\n");
  const std::string bob = addKey(keys_, "bob", "*");  // written while the gateway runs
  EXPECT_TRUE(waitUntil(
      [&] {
        return httpRequest(port(), "GET", "/v1/models", {}, bearer(bob)).status == 200;
      },
      5s));
  EXPECT_EQ(runCommand({"keys", "revoke", "--file", keys_, "--name", "alice"}).exit,
            std::optional<int>(0));
  EXPECT_TRUE(waitUntil(
      [&] {
        return httpRequest(port(), "GET", "/v1/models", {}, bearer(alice)).status == 401;
      },
      5s));
  EXPECT_EQ(httpRequest(port(), "GET", "/v1/models", {}, bearer(bob)).status, 200);
  // A broken file is refused and the keys in force stay.
  { std::ofstream(keys_) << "hash_key: nothex\n"; }
  EXPECT_TRUE(waitUntil(
      [&] {
        return metricSample(metrics(),
                            "switchyard_keys_file_reloads_total{file=\"keys\",result=\"error\"}") >=
               1;
      },
      5s));
  EXPECT_EQ(httpRequest(port(), "GET", "/v1/models", {}, bearer(bob)).status, 200);
}

TEST_F(AuthTest, TheKeysFileMayComeFromTheEnvironment) {
  const std::string key = addKey(keys_, "env-key", "*");
  ::setenv("SWITCHYARD_KEYS_FILE", keys_.c_str(), 1);
  startGateway("");
  ::unsetenv("SWITCHYARD_KEYS_FILE");
  EXPECT_EQ(httpRequest(port(), "GET", "/v1/models").status, 401);
  EXPECT_EQ(httpRequest(port(), "GET", "/v1/models", {}, bearer(key)).status, 200);
}

TEST_F(AuthTest, KeysAreNamedButNeverShownInLogsMetricsDecisionsAndTraces) {
  LoopbackServer collector("{}");
  const std::string key = addKey(keys_, "tenant-a", "*", 100, 100000);
  startGateway("auth: { keys_file: " + keys_ + " }\n"
               "tracing: { otlp_endpoint: http://127.0.0.1:" +
               std::to_string(collector.port()) +
               ", sampling_ratio: 1.0, export_interval_ms: 100 }\n");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(httpRequest(port(), "POST", "/v1/chat/completions", chat("llama2-7b"),
                          bearer(key))
                  .status,
              200);
  }
  EXPECT_EQ(httpRequest(port(), "POST", "/v1/chat/completions", chat("llama2-7b"),
                        bearer(key + "-tampered"))
                .status,
            401);
  ASSERT_TRUE(waitUntil([&] { return collector.requests("/v1/traces").size() >= 1; }, 5s));
  std::string traces;
  for (const auto& r : collector.requests("/v1/traces")) traces += r.body;
  const std::string decisions = httpRequest(admin(), "GET", "/debug/decisions").body;
  const std::string everything = logs() + metrics() + decisions + traces;
  const std::string secret = key.substr(6);  // the random part
  EXPECT_EQ(everything.find(secret), std::string::npos);
  EXPECT_EQ(everything.find(secret.substr(0, 16)), std::string::npos);
  EXPECT_EQ(everything.find("Bearer"), std::string::npos);
  // The name is there instead.
  EXPECT_NE(logs().find("key=tenant-a"), std::string::npos);
  EXPECT_NE(decisions.find("\"key\":\"tenant-a\""), std::string::npos) << decisions;
  EXPECT_NE(traces.find("tenant-a"), std::string::npos);
  EXPECT_NE(metrics().find("key=\"tenant-a\""), std::string::npos);
}

TEST_F(AuthTest, EnginesGetTheirOwnKeyNeverTheClients) {
  // An engine started with --api-key; the replica's key is configured for it.
  auto guarded = std::make_unique<Process>(std::vector<std::string>{
      "engine", "--gpu", "A100", "--model", "llama2-7b", "--listen", "127.0.0.1:0", "--api-key",
      "engine-secret"});
  const std::string client_key = addKey(keys_, "alice", "*");
  const auto config = [&](const std::string& replica_extra, const std::string& auth_extra) {
    return "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
           "auth: { keys_file: " + keys_ + auth_extra + " }\n"
           "models:\n  - name: llama2-7b\n    replicas:\n      - address: 127.0.0.1:" +
           std::to_string(guarded->port()) + "\n" + replica_extra;
  };
  {
    TempFile file(config("        api_key: engine-secret\n", ""), ".yaml");
    Process gateway({"gateway", "--config", file.path()});
    EXPECT_EQ(httpRequest(gateway.port(0), "POST", "/v1/chat/completions", chat("llama2-7b"),
                          bearer(client_key))
                  .status,
              200);
  }
  {
    // No key for the replica: the client's is not passed on, so the engine refuses.
    TempFile file(config("", ""), ".yaml");
    Process gateway({"gateway", "--config", file.path()});
    EXPECT_EQ(httpRequest(gateway.port(0), "POST", "/v1/chat/completions", chat("llama2-7b"),
                          bearer(client_key))
                  .status,
              401);
  }
  {
    // Without gateway keys and with forwarding asked for, the client's credentials go through.
    TempFile file("listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
                  "auth: { forward_client_authorization: true }\n"
                  "models:\n  - name: llama2-7b\n    replicas:\n      - 127.0.0.1:" +
                      std::to_string(guarded->port()) + "\n",
                  ".yaml");
    Process gateway({"gateway", "--config", file.path()});
    EXPECT_EQ(httpRequest(gateway.port(0), "POST", "/v1/chat/completions", chat("llama2-7b"),
                          bearer("engine-secret"))
                  .status,
              200);
  }
}

TEST_F(AuthTest, TheAdminListenerNeedsATokenAndLogsEveryWriteWithItsAuthor) {
  const std::string admin_keys = dir_.file("admin.yaml");
  const std::string ops = addKey(admin_keys, "ops", "*");
  addKey(keys_, "alice", "*");
  startGateway("auth: { keys_file: " + keys_ + " }\nadmin_auth: { keys_file: " + admin_keys +
               " }\n");
  EXPECT_EQ(httpRequest(admin(), "GET", "/metrics").status, 401);
  EXPECT_EQ(httpRequest(admin(), "GET", "/debug/decisions").status, 401);
  EXPECT_EQ(httpRequest(admin(), "GET", "/dashboard").status, 401);
  EXPECT_EQ(httpRequest(admin(), "GET", "/healthz").status, 200);  // probes stay open
  EXPECT_EQ(httpRequest(admin(), "GET", "/metrics", {}, {{"Authorization", "Bearer " + ops}})
                .status,
            200);
  const HttpResult write = httpRequest(admin(), "POST", "/debug/decisions", "{}",
                                       {{"Authorization", "Bearer " + ops}});
  const HttpResult anonymous_write = httpRequest(admin(), "PUT", "/scale/x", "{}");
  EXPECT_EQ(anonymous_write.status, 401);
  EXPECT_TRUE(waitUntil(
      [&] {
        const std::string l = logs();
        return l.find("admin: POST /debug/decisions by token:ops from 127.0.0.1") !=
                   std::string::npos &&
               l.find("admin: PUT /scale/x by anonymous from 127.0.0.1: 401") !=
                   std::string::npos;
      },
      5s))
      << logs();
  EXPECT_EQ(logs().find(ops.substr(6, 16)), std::string::npos);
  const std::string m = httpRequest(admin(), "GET", "/metrics", {}, bearer(ops)).body;
  EXPECT_GE(metricSample(m, "switchyard_admin_requests_total{result=\"denied\"}"), 4);
}

// A Pod's preStop hook against gateways whose admin port requires a token (the Kubernetes
// manifests' setting): refused without one, drains with one.
TEST_F(AuthTest, DrainWaitPresentsItsAdminToken) {
  const std::string admin_keys = dir_.file("admin.yaml");
  const std::string ops = addKey(admin_keys, "ops", "*");
  startGateway("admin_auth: { keys_file: " + admin_keys + " }\n");
  const std::string gateway = "http://127.0.0.1:" + std::to_string(admin());
  const std::string replica = "127.0.0.1:" + std::to_string(engines_[0]->port());
  auto refused = spawnSwitchyard({"drain-wait", "--gateway", gateway, "--pod", replica,
                                  "--timeout", "5s"});
  EXPECT_EQ(refused->waitExit(deadlineIn(10s)), std::optional<int>(2));
  auto missing = spawnSwitchyard({"drain-wait", "--gateway", gateway, "--pod", replica,
                                  "--token-file", dir_.file("absent")});
  EXPECT_EQ(missing->waitExit(deadlineIn(10s)), std::optional<int>(2));
  TempFile wrong("sk-sy-not-a-key\n");
  auto rejected = spawnSwitchyard({"drain-wait", "--gateway", gateway, "--pod", replica,
                                   "--token-file", wrong.path(), "--timeout", "5s"});
  EXPECT_EQ(rejected->waitExit(deadlineIn(10s)), std::optional<int>(2));
  EXPECT_EQ(httpRequest(admin(), "GET", "/admin/drain", {}, bearer(ops)).body.find(replica),
            std::string::npos);
  TempFile token("  " + ops + "\n");
  auto drained = spawnSwitchyard({"drain-wait", "--gateway", gateway, "--pod", replica,
                                  "--token-file", token.path(), "--timeout", "10s"});
  EXPECT_EQ(drained->waitExit(deadlineIn(15s)), std::optional<int>(0));
  const HttpResult list = httpRequest(admin(), "GET", "/admin/drain", {}, bearer(ops));
  EXPECT_EQ(list.status, 200);
  EXPECT_NE(list.body.find(replica), std::string::npos) << list.body;
}

TEST_F(AuthTest, ReadOnlyAdminViewsRefuseWrites) {
  startGateway("");
  for (const char* path : {"/metrics", "/debug/fleet", "/debug/decisions", "/healthz"}) {
    const HttpResult written = httpRequest(admin(), "POST", path, "{}");
    EXPECT_EQ(written.status, 405) << path;
    EXPECT_EQ(written.header("allow"), "GET, HEAD") << path;
    EXPECT_NE(written.body.find("method_not_allowed"), std::string::npos) << written.body;
    EXPECT_EQ(httpRequest(admin(), "DELETE", path).status, 405) << path;
    EXPECT_EQ(httpRequest(admin(), "GET", path).status, 200) << path;
  }
}

TEST_F(AuthTest, AnAdminListenerBeyondLoopbackWithoutAuthRefusesToStart) {
  TempFile file("listen: 127.0.0.1:0\nadmin_listen: 0.0.0.0:0\n" + models(), ".yaml");
  auto gateway = spawnSwitchyard({"gateway", "--config", file.path()});
  EXPECT_EQ(gateway->waitExit(deadlineIn(10s)), std::optional<int>(2));
  auto overridden = spawnSwitchyard({"gateway", "--config", file.path(), "--admin-listen",
                                     "0.0.0.0:0"});
  EXPECT_EQ(overridden->waitExit(deadlineIn(10s)), std::optional<int>(2));
}

TEST_F(AuthTest, AdminViewsNeverShowPromptText) {
  startGateway("decisions: { log_size: 64 }\n");
  const std::string marker = "zebra-quartz-marker-7731";
  const std::string body =
      "{\"model\":\"llama2-7b\",\"user\":\"u1\",\"messages\":[{\"role\":\"user\",\"content\":\"" +
      marker + "\"}],\"max_tokens\":4}";
  EXPECT_EQ(httpRequest(port(), "POST", "/v1/chat/completions", body, kJson).status, 200);
  EXPECT_EQ(httpRequest(port(), "POST", "/v1/completions",
                        "{\"model\":\"llama2-7b\",\"prompt\":\"" + marker +
                            "\",\"max_tokens\":4}",
                        kJson)
                .status,
            200);
  for (const char* view : {"/debug/decisions", "/debug/fleet", "/debug/load", "/dashboard",
                           "/metrics"}) {
    const HttpResult r = httpRequest(admin(), "GET", view);
    EXPECT_EQ(r.status, 200) << view;
    EXPECT_EQ(r.body.find(marker), std::string::npos) << view;
  }
  EXPECT_EQ(logs().find(marker), std::string::npos);
}

}  // namespace
}  // namespace switchyard::testing
