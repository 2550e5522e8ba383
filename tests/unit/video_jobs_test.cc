#include "engine/video_jobs.h"

#include <gtest/gtest.h>

#include <string>

namespace switchyard::engine {
namespace {

std::string idOf(const std::string& body) {
  const size_t at = body.find("\"id\":\"") + 6;
  return body.substr(at, body.find('"', at) - at);
}

TEST(VideoJobsTest, QueuedThenInProgressThenCompletedWithContent) {
  VideoJobs jobs({.model = "m", .replica_identity = "127.0.0.1:1"});
  const JobReply created = jobs.handle(
      "POST", "/v1/videos", "application/json",
      R"({"model":"m","prompt":"p","seconds":"4","size":"1280x720"})", 0, 1000);
  ASSERT_EQ(created.status, 200u) << created.body;
  EXPECT_NE(created.body.find("\"status\":\"queued\""), std::string::npos);
  const std::string id = idOf(created.body);
  EXPECT_EQ(id.rfind("video_", 0), 0u);
  // 100 ms queued, then 4 × 250 ms.
  const JobReply half = jobs.handle("GET", "/v1/videos/" + id, "", "", 600 * kNsPerMs, 1000);
  EXPECT_NE(half.body.find("\"status\":\"in_progress\",\"progress\":50"), std::string::npos)
      << half.body;
  EXPECT_EQ(jobs.handle("GET", "/v1/videos/" + id + "/content", "", "", 600 * kNsPerMs, 1000)
                .status,
            400u);
  const JobReply done = jobs.handle("GET", "/v1/videos/" + id, "", "", 1100 * kNsPerMs, 1001);
  EXPECT_NE(done.body.find("\"status\":\"completed\""), std::string::npos) << done.body;
  const JobReply content =
      jobs.handle("GET", "/v1/videos/" + id + "/content", "", "", 1100 * kNsPerMs, 1001);
  EXPECT_EQ(content.status, 200u);
  EXPECT_EQ(content.content_type, "video/mp4");
  EXPECT_EQ(content.body.substr(4, 4), "ftyp");
  EXPECT_EQ(jobs.handle("DELETE", "/v1/videos/" + id, "", "", 0, 0).status, 200u);
  EXPECT_EQ(jobs.handle("GET", "/v1/videos/" + id, "", "", 0, 0).status, 404u);
}

TEST(VideoJobsTest, FormCreationAndBadRequests) {
  VideoJobs jobs({.model = "m", .replica_identity = "127.0.0.1:1"});
  const std::string form =
      "--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\ncat\r\n"
      "--b\r\nContent-Disposition: form-data; name=\"seconds\"\r\n\r\n8\r\n"
      "--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n--b--\r\n";
  const JobReply created =
      jobs.handle("POST", "/v1/videos", "multipart/form-data; boundary=b", form, 0, 0);
  ASSERT_EQ(created.status, 200u) << created.body;
  EXPECT_NE(created.body.find("\"seconds\":\"8\""), std::string::npos);
  EXPECT_EQ(jobs.handle("POST", "/v1/videos", "", R"({"prompt":"p","model":"x"})", 0, 0).status,
            404u);
  EXPECT_EQ(jobs.handle("POST", "/v1/videos", "", R"({"model":"m"})", 0, 0).status, 400u);
  EXPECT_EQ(jobs.handle("POST", "/v1/videos", "", R"({"prompt":"p","seconds":"0"})", 0, 0).status,
            400u);
  EXPECT_EQ(jobs.handle("POST", "/v1/videos", "", R"({"prompt":"p","size":"big"})", 0, 0).status,
            400u);
  EXPECT_EQ(jobs.handle("POST", "/v1/videos", "multipart/form-data; boundary=b",
                        form.substr(0, 20), 0, 0)
                .status,
            400u);
  EXPECT_EQ(jobs.handle("PUT", "/v1/videos", "", "", 0, 0).status, 405u);
  const JobReply list = jobs.handle("GET", "/v1/videos", "", "", 0, 0);
  EXPECT_NE(list.body.find(idOf(created.body)), std::string::npos);
}

}  // namespace
}  // namespace switchyard::engine
