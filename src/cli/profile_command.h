// `switchyard profile`: the profiling sweep against any OpenAI-compatible endpoint, writing raw
// measurements (resumable). `switchyard gen-profile`: a profile from raw measurements, or from
// the engine model on a virtual clock (`--emulated GPU`), to a file or to Redis.
// See docs/optimizer.md.
#pragma once

namespace CLI {
class App;
}

namespace switchyard::cli {

// Registers both subcommands; when one of them runs, `exit_code` gets its result.
void addProfileCommands(CLI::App& app, int& exit_code);

}  // namespace switchyard::cli
