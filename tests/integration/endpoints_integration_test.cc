// The rest of the OpenAI surface through `switchyard gateway` to emulated engines: rerank and
// score (vLLM's), images, audio transcriptions and translations (multipart/form-data, with every
// kind of bad form), and videos as async jobs followed up on the replica that owns them.
#include <simdjson.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway_harness.h"

namespace switchyard::testing {
namespace {

constexpr std::string_view kBoundary = "----switchyard-test-7f3a";

// A form with an audio file of `file_bytes` (holding CRs, LFs and near-boundaries) and the given
// text fields; `close` false leaves the closing boundary out.
std::string audioForm(const std::vector<std::pair<std::string, std::string>>& fields,
                      size_t file_bytes, bool close = true) {
  std::string body;
  const std::string dash = "--" + std::string(kBoundary);
  body += dash + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"speech.wav\"\r\n"
                 "Content-Type: audio/wav\r\n\r\n";
  std::string file = "RIFF\r\n" + dash.substr(0, dash.size() - 1) + "\r\n";
  while (file.size() < file_bytes) file += "\x01\x02\r\n--data";
  file.resize(file_bytes);
  body += file;
  for (const auto& [name, value] : fields) {
    body += "\r\n" + dash + "\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" +
            value;
  }
  if (close) body += "\r\n" + dash + "--\r\n";
  return body;
}

Headers formHeaders() {
  return {{"Content-Type", "multipart/form-data; boundary=" + std::string(kBoundary)}};
}

class EndpointsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    a100_ = startEngine("A100").release();
    l20_ = startEngine("L20").release();
  }
  static void TearDownTestSuite() {
    delete a100_;
    delete l20_;
  }
  void SetUp() override {
    config_ = std::make_unique<TempFile>(
        "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 2\n"
        "limits: { max_body_bytes: 65536 }\n"
        "models:\n  - name: llama2-7b\n    routing_strategy: round-robin\n    replicas:\n" +
            replicaLine(a100_->port(), "A100") + replicaLine(l20_->port(), "L20"),
        ".yaml");
    gateway_ = std::make_unique<Process>(
        std::vector<std::string>{"gateway", "--config", config_->path()});
    ASSERT_NE(gateway_->port(0), 0);
  }
  uint16_t port() const { return gateway_->port(0); }
  HttpResult post(std::string_view path, const std::string& body, Headers headers = kJson) {
    return httpRequest(port(), "POST", path, body, std::move(headers));
  }
  HttpResult get(std::string_view path) { return httpRequest(port(), "GET", path); }

  static Process* a100_;
  static Process* l20_;
  std::unique_ptr<TempFile> config_;
  std::unique_ptr<Process> gateway_;
  simdjson::dom::parser parser_;
};

Process* EndpointsTest::a100_ = nullptr;
Process* EndpointsTest::l20_ = nullptr;

// An OpenAI error envelope with this status and, when given, code and param.
void expectError(const HttpResult& r, int status, std::string_view code = {},
                 std::string_view param = {}) {
  EXPECT_EQ(r.status, status) << r.body;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(r.body).get(root), simdjson::SUCCESS) << r.body;
  std::string_view message;
  EXPECT_EQ(root["error"]["message"].get(message), simdjson::SUCCESS) << r.body;
  EXPECT_FALSE(message.empty());
  std::string_view value;
  if (!code.empty()) {
    EXPECT_EQ(root["error"]["code"].get(value), simdjson::SUCCESS) << r.body;
    EXPECT_EQ(value, code);
  }
  if (!param.empty()) {
    EXPECT_EQ(root["error"]["param"].get(value), simdjson::SUCCESS) << r.body;
    EXPECT_EQ(value, param);
  }
}

TEST_F(EndpointsTest, RerankAndScoreAreRoutedByModel) {
  const HttpResult rerank = post(
      "/v1/rerank",
      R"({"model":"llama2-7b","query":"fast routing","documents":["a","b c","d e f"],"top_n":2})");
  ASSERT_EQ(rerank.status, 200) << rerank.body;
  EXPECT_FALSE(rerank.header("target-pod").empty());
  simdjson::dom::element root = parser_.parse(rerank.body);
  simdjson::dom::array results = root["results"].get_array();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_GE(double(results.at(0)["relevance_score"]), double(results.at(1)["relevance_score"]));
  EXPECT_GT(int64_t(root["usage"]["total_tokens"]), 0);

  const HttpResult score =
      post("/v1/score", R"({"model":"llama2-7b","text_1":"query","text_2":["x","y","z"]})");
  ASSERT_EQ(score.status, 200) << score.body;
  root = parser_.parse(score.body);
  EXPECT_EQ(root["data"].get_array().size(), 3u);
  EXPECT_EQ(std::string_view(root["data"].at(0)["object"]), "score");

  expectError(post("/v1/rerank", R"({"query":"q","documents":["a"]})"), 400, {}, "model");
  expectError(post("/v1/score", R"({"model":"nope","text_1":"a","text_2":"b"})"), 404,
              "model_not_found");
  expectError(post("/v1/score", R"({"model":"llama2-7b","text_1":["a","b"],"text_2":["c"]})"),
              400);  // the engine's own refusal, relayed
  expectError(get("/v1/rerank"), 405);
}

// Load-balance's capacity for tokenless work counts the documents a rerank scores, not the
// requests: 16 documents a request are learned at about 16 ÷ latency, far above 1 ÷ latency.
TEST_F(EndpointsTest, RerankCapacityIsLearnedPerDocument) {
  std::string documents = "[";
  for (int i = 0; i < 16; ++i) documents += std::string(i ? "," : "") + "\"document text\"";
  documents += "]";
  const std::string body =
      R"({"model":"llama2-7b","query":"which one","documents":)" + documents + "}";
  const std::string replica = "127.0.0.1:" + std::to_string(a100_->port());
  Headers pinned = kJson;
  pinned.emplace_back("x-switchyard-gpu", "A100");  // one replica, so its latency is known
  double latency_total = 0;
  int requests = 0;
  double decode = 0;
  const bool learned = waitUntil(
      [&] {
        const auto t0 = std::chrono::steady_clock::now();
        const HttpResult r = post("/v1/rerank", body, pinned);
        latency_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                             .count();
        ++requests;
        EXPECT_EQ(r.status, 200) << r.body;
        const std::string capacity = fleetField(gateway_->port(1), replica, "capacity");
        if (capacity.find("\"unit\":\"units/s\"") == std::string::npos) return false;
        simdjson::dom::parser p;
        return p.parse(capacity)["decode"].get_double().get(decode) == simdjson::SUCCESS &&
               decode > 0;
      },
      20s);
  ASSERT_TRUE(learned) << fleetField(gateway_->port(1), replica, "capacity");
  const double per_request = requests / latency_total;  // 1 ÷ mean client-side latency
  EXPECT_GT(decode, 8 * per_request) << "decode " << decode << " vs " << per_request;
}

TEST_F(EndpointsTest, ImagesGenerations) {
  const HttpResult r = post(
      "/v1/images/generations",
      R"({"model":"llama2-7b","prompt":"a switchyard at dawn","n":3,"size":"256x256"})");
  ASSERT_EQ(r.status, 200) << r.body;
  simdjson::dom::element root = parser_.parse(r.body);
  ASSERT_EQ(root["data"].get_array().size(), 3u);
  EXPECT_FALSE(std::string_view(root["data"].at(0)["b64_json"]).empty());
  expectError(post("/v1/images/generations", R"({"prompt":"p"})"), 400, {}, "model");
  expectError(post("/v1/images/generations", R"({"model":"llama2-7b","prompt":"p","n":99})"),
              400);
}

TEST_F(EndpointsTest, AudioTranscriptionsAndTranslationsReadTheModelFromTheForm) {
  // The model field comes after a 20 KiB file: found by the streaming reader.
  const HttpResult json = post("/v1/audio/transcriptions",
                               audioForm({{"model", "llama2-7b"}}, 20000), formHeaders());
  ASSERT_EQ(json.status, 200) << json.body;
  EXPECT_FALSE(json.header("target-pod").empty());
  EXPECT_FALSE(std::string_view(parser_.parse(json.body)["text"]).empty());

  const HttpResult text =
      post("/v1/audio/transcriptions",
           audioForm({{"model", "llama2-7b"}, {"response_format", "text"}}, 4000), formHeaders());
  ASSERT_EQ(text.status, 200) << text.body;
  EXPECT_EQ(text.header("content-type").substr(0, 10), "text/plain");

  const HttpResult translated = post(
      "/v1/audio/translations",
      audioForm({{"model", "llama2-7b"}, {"response_format", "verbose_json"}}, 8000),
      formHeaders());
  ASSERT_EQ(translated.status, 200) << translated.body;
  EXPECT_EQ(std::string_view(parser_.parse(translated.body)["task"]), "translate");
}

TEST_F(EndpointsTest, BadFormsGetTheRightStatus) {
  const std::string path = "/v1/audio/transcriptions";
  // No model field.
  expectError(post(path, audioForm({{"language", "en"}}, 1000), formHeaders()), 400, {},
              "model");
  // The closing boundary never comes.
  expectError(post(path, audioForm({{"model", "llama2-7b"}}, 1000, false), formHeaders()), 400,
              "invalid_multipart");
  // No boundary parameter, or one that is not allowed.
  expectError(post(path, audioForm({{"model", "llama2-7b"}}, 100),
                   {{"Content-Type", "multipart/form-data"}}),
              400, "invalid_multipart");
  expectError(post(path, audioForm({{"model", "llama2-7b"}}, 100),
                   {{"Content-Type", "multipart/form-data; boundary=" + std::string(80, 'b')}}),
              400, "invalid_multipart");
  // A JSON body, or no content type at all: not the media type this endpoint takes.
  expectError(post(path, R"({"model":"llama2-7b"})"), 415, "unsupported_media_type");
  expectError(post(path, audioForm({{"model", "llama2-7b"}}, 100), {}), 415,
              "unsupported_media_type");
  // Larger than the body limit (64 KiB here).
  expectError(post(path, audioForm({{"model", "llama2-7b"}}, 100000), formHeaders()), 413,
              "request_too_large");
  // An unknown model in the form.
  expectError(post(path, audioForm({{"model", "whisper-9"}}, 100), formHeaders()), 404,
              "model_not_found");
  // The gateway still serves.
  EXPECT_EQ(post(path, audioForm({{"model", "llama2-7b"}}, 100), formHeaders()).status, 200);
}

TEST_F(EndpointsTest, VideosAreCreatedPolledAndFetchedFromTheirOwner) {
  const HttpResult created = post(
      "/v1/videos", R"({"model":"llama2-7b","prompt":"trains at night","seconds":"2","size":"320x240"})");
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string owner = created.header("target-pod");
  simdjson::dom::element root = parser_.parse(created.body);
  const std::string id{std::string_view(root["id"])};
  EXPECT_EQ(id.rfind("video_", 0), 0u) << id;
  EXPECT_EQ(std::string_view(root["object"]), "video");

  // Round-robin would send every other request elsewhere: the owner answers each poll.
  std::string status;
  ASSERT_TRUE(waitUntil(
      [&] {
        const HttpResult poll = get("/v1/videos/" + id);
        EXPECT_EQ(poll.status, 200) << poll.body;
        EXPECT_EQ(poll.header("target-pod"), owner);
        simdjson::dom::parser p;
        status = std::string(std::string_view(p.parse(poll.body)["status"]));
        return status == "completed";
      },
      10s))
      << status;
  const HttpResult content = get("/v1/videos/" + id + "/content");
  ASSERT_EQ(content.status, 200) << content.body;
  EXPECT_EQ(content.header("content-type"), "video/mp4");
  EXPECT_EQ(content.body.substr(4, 4), "ftyp");
  EXPECT_EQ(content.header("target-pod"), owner);

  // A form creation reads its model from the form too.
  const std::string dash = "--" + std::string(kBoundary);
  const std::string form = dash + "\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\n"
                                  "a cat\r\n" + dash +
                           "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nllama2-7b"
                           "\r\n" + dash + "--\r\n";
  const HttpResult from_form = post("/v1/videos", form, formHeaders());
  ASSERT_EQ(from_form.status, 200) << from_form.body;
  const std::string form_id{std::string_view(parser_.parse(from_form.body)["id"])};
  EXPECT_EQ(get("/v1/videos/" + form_id).header("target-pod"), from_form.header("target-pod"));
  EXPECT_EQ(httpRequest(port(), "DELETE", "/v1/videos/" + form_id).status, 200);

  expectError(get("/v1/videos/video_unknown"), 404);
  expectError(post("/v1/videos", R"({"model":"llama2-7b"})"), 400);  // no prompt: the engine's
  expectError(post("/v1/videos", form.substr(0, form.size() - 4), formHeaders()), 400,
              "invalid_multipart");
}

}  // namespace
}  // namespace switchyard::testing
