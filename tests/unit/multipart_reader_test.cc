#include "api/multipart_reader.h"

#include <gtest/gtest.h>

#include <string>

#include "api/request_body.h"

namespace switchyard::api {
namespace {

constexpr std::string_view kType = "multipart/form-data; boundary=----sy42";

std::string form(std::string_view model, std::string_view file, bool close = true) {
  std::string body = "------sy42\r\nContent-Disposition: form-data; name=\"file\"; "
                     "filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\n";
  body.append(file);
  if (!model.empty()) {
    body += "\r\n------sy42\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n";
    body.append(model);
  }
  body += "\r\n------sy42\r\nContent-Disposition: form-data; name=\"response_format\"\r\n\r\n"
          "text";
  if (close) body += "\r\n------sy42--\r\n";
  return body;
}

MultipartError readAll(MultipartReader& reader, std::string_view type, std::string_view body) {
  if (MultipartError e = reader.start(type); e != MultipartError::kNone) return e;
  reader.feed(body);
  return reader.finish();
}

TEST(MultipartReaderTest, FindsTheModelAfterTheFileAndCountsTheFile) {
  MultipartReader reader;
  // The file holds CRs, LFs and near-boundaries: all content.
  const std::string file = "RIFF\r\n--\r\n------sy4\r\n-----sy42x\r\r\n";
  ASSERT_EQ(readAll(reader, kType, form("whisper-1", file)), MultipartError::kNone);
  EXPECT_EQ(reader.model(), "whisper-1");
  EXPECT_EQ(reader.fileBytes(), file.size());
  EXPECT_EQ(reader.fileParts(), 1);
  EXPECT_EQ(reader.parts(), 3);
  EXPECT_EQ(reader.field("response_format"), "text");
}

TEST(MultipartReaderTest, EverySplitGivesTheSameResult) {
  const std::string body = form("m-1", std::string(3000, '\r'));
  for (size_t cut = 0; cut <= body.size(); cut += 7) {
    MultipartReader reader;
    ASSERT_EQ(reader.start(kType), MultipartError::kNone);
    reader.feed(std::string_view(body).substr(0, cut));
    reader.feed(std::string_view(body).substr(cut));
    ASSERT_EQ(reader.finish(), MultipartError::kNone) << cut;
    EXPECT_EQ(reader.model(), "m-1");
    EXPECT_EQ(reader.fileBytes(), 3000u);
  }
}

// A part named `model` whose second Content-Disposition line gives a filename is an upload: its
// bytes are counted, and a long one is not a too-long model field, however the body is split.
TEST(MultipartReaderTest, APartWithAFilenameIsAFileWhateverItsOtherLinesSay) {
  const std::string body =
      "------sy42\r\nContent-Disposition: form-data; name=\"model\"\r\n"
      "Content-Disposition: form-data; filename=\"m.bin\"\r\n\r\n" +
      std::string(600, 'm') + "\r\n------sy42--\r\n";
  for (size_t cut : {size_t{0}, size_t{200}, size_t{400}, body.size()}) {
    MultipartReader reader;
    ASSERT_EQ(reader.start(kType), MultipartError::kNone);
    reader.feed(std::string_view(body).substr(0, cut));
    reader.feed(std::string_view(body).substr(cut));
    ASSERT_EQ(reader.finish(), MultipartError::kNone) << cut;
    EXPECT_FALSE(reader.hasModel());
    EXPECT_EQ(reader.fileBytes(), 600u);
    EXPECT_EQ(reader.fileParts(), 1);
  }
}

TEST(MultipartReaderTest, ContentTypeErrors) {
  MultipartReader reader;
  EXPECT_EQ(reader.start(""), MultipartError::kNotMultipart);
  EXPECT_EQ(reader.start("application/json"), MultipartError::kNotMultipart);
  EXPECT_EQ(reader.start("multipart/mixed; boundary=a"), MultipartError::kNotMultipart);
  EXPECT_EQ(reader.start("multipart/form-data"), MultipartError::kBadBoundary);
  EXPECT_EQ(reader.start("multipart/form-data; charset=utf-8"), MultipartError::kBadBoundary);
  EXPECT_EQ(reader.start("multipart/form-data; boundary="), MultipartError::kBadBoundary);
  EXPECT_EQ(reader.start("multipart/form-data; boundary=" + std::string(71, 'a')),
            MultipartError::kBadBoundary);
  EXPECT_EQ(reader.start("multipart/form-data; boundary=a\rb"), MultipartError::kBadBoundary);
  EXPECT_EQ(reader.start("multipart/form-data; boundary=\"unterminated"),
            MultipartError::kBadBoundary);
  EXPECT_EQ(reader.start("Multipart/Form-Data; BOUNDARY=\"a b\""), MultipartError::kNone);
  // After a start error the reader stays failed.
  reader.start("text/plain");
  reader.feed(form("m", "x"));
  EXPECT_EQ(reader.finish(), MultipartError::kNotMultipart);
}

TEST(MultipartReaderTest, BodyErrors) {
  MultipartReader reader;
  EXPECT_EQ(readAll(reader, kType, form("m", "x", /*close=*/false)), MultipartError::kUnclosed);
  EXPECT_EQ(reader.model(), "m");  // found before the end all the same
  EXPECT_EQ(readAll(reader, kType, "no boundary anywhere"), MultipartError::kUnclosed);
  EXPECT_EQ(readAll(reader, kType, ""), MultipartError::kUnclosed);
  EXPECT_EQ(readAll(reader, kType, "------sy42\r\nno colon\r\n\r\nx\r\n------sy42--"),
            MultipartError::kMalformedPart);
  EXPECT_EQ(readAll(reader, kType, "------sy42junk"), MultipartError::kMalformedPart);
  EXPECT_EQ(readAll(reader, kType,
                    "------sy42\r\nX: " + std::string(2000, 'h') + "\r\n\r\n------sy42--"),
            MultipartError::kMalformedPart);
  EXPECT_EQ(readAll(reader, kType, form(std::string(300, 'm'), "x")),
            MultipartError::kFieldTooLong);
  // No model is not the reader's error: the caller decides.
  EXPECT_EQ(readAll(reader, kType, form("", "x")), MultipartError::kNone);
  EXPECT_FALSE(reader.hasModel());
}

TEST(RequestBodyTest, StatusesForEachKindOfBadForm) {
  RequestInspector inspector;
  MultipartReader reader;
  auto read = [&](ApiEndpoint e, std::string_view type, std::string body) {
    return readRequestBody(e, false, type, body, inspector, reader);
  };
  const ApiEndpoint audio = ApiEndpoint::kAudioTranscriptions;
  BodyReading ok = read(audio, kType, form("whisper-1", std::string(4096, 'a')));
  EXPECT_EQ(ok.status, 0u);
  EXPECT_EQ(ok.work_units, 4);  // KiB of audio
  EXPECT_EQ(read(audio, "application/json", R"({"model":"m"})").status, 415u);
  EXPECT_EQ(read(audio, "", "").code, "unsupported_media_type");
  EXPECT_EQ(read(audio, "multipart/form-data", form("m", "x")).code, "invalid_multipart");
  EXPECT_EQ(read(audio, kType, form("m", "x", false)).status, 400u);
  const BodyReading no_model = read(audio, kType, form("", "x"));
  EXPECT_EQ(no_model.status, 400u);
  EXPECT_EQ(no_model.error, InspectError::kMissingModel);
  EXPECT_EQ(no_model.param, "model");
}

TEST(RequestBodyTest, WorkUnitsPerEndpoint) {
  RequestInspector inspector;
  MultipartReader reader;
  auto units = [&](ApiEndpoint e, std::string body) {
    const BodyReading r = readRequestBody(e, false, "application/json", body, inspector, reader);
    EXPECT_EQ(r.status, 0u) << r.message;
    return r.work_units;
  };
  EXPECT_EQ(units(ApiEndpoint::kRerank, R"({"model":"m","query":"q","documents":["a","b","c"]})"),
            3);
  EXPECT_EQ(units(ApiEndpoint::kScore, R"({"model":"m","text_1":"q","text_2":["a","b"]})"), 2);
  EXPECT_EQ(units(ApiEndpoint::kScore, R"({"model":"m","text_1":"q","text_2":"a"})"), 1);
  EXPECT_EQ(units(ApiEndpoint::kImagesGenerations, R"({"model":"m","prompt":"p","n":4})"), 4);
  EXPECT_EQ(units(ApiEndpoint::kImagesGenerations, R"({"model":"m","prompt":"p","n":"x"})"), 1);
  EXPECT_EQ(units(ApiEndpoint::kEmbeddings, R"({"model":"m","input":["a","b"]})"), 1);
}

}  // namespace
}  // namespace switchyard::api
