// Micro-benchmark for the multipart/form-data reader the gateway runs over audio uploads:
// ns/op, bytes/s and allocs/op for a form with the model field after a file of 64 KiB and 1 MiB
// (random bytes, so CRs appear as often as in compressed audio).
// Run: build/release/micro_bench --benchmark_filter=Multipart
#include <benchmark/benchmark.h>

#include <string>

#include "alloc_counter.h"
#include "api/multipart_reader.h"
#include "core/rng.h"

namespace switchyard {
namespace {

constexpr std::string_view kType = "multipart/form-data; boundary=----formdata-undici-0123456789";

std::string audioForm(size_t file_bytes) {
  const std::string dash = "------formdata-undici-0123456789";
  std::string body = dash + "\r\nContent-Disposition: form-data; name=\"file\"; "
                            "filename=\"speech.mp3\"\r\nContent-Type: audio/mpeg\r\n\r\n";
  Rng rng(42);
  for (size_t i = 0; i < file_bytes; ++i) body.push_back(static_cast<char>(rng.next() & 0xFF));
  body += "\r\n" + dash + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1";
  body += "\r\n" + dash + "--\r\n";
  return body;
}

void readForm(benchmark::State& state, size_t file_bytes) {
  const std::string body = audioForm(file_bytes);
  api::MultipartReader reader;
  bench::AllocCounter allocs;
  for (auto _ : state) {
    reader.start(kType);
    reader.feed(body);
    const api::MultipartError error = reader.finish();
    benchmark::DoNotOptimize(error);
    if (reader.model() != "whisper-1") state.SkipWithError("model not found");
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

void BM_MultipartAudio64K(benchmark::State& state) { readForm(state, 64 << 10); }
void BM_MultipartAudio1M(benchmark::State& state) { readForm(state, 1 << 20); }
BENCHMARK(BM_MultipartAudio64K);
BENCHMARK(BM_MultipartAudio1M);

}  // namespace
}  // namespace switchyard
