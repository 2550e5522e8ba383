// `switchyard keys add|list|revoke --file FILE`: manages a keys file (auth/keys_file.h).
//
//   keys add --file F --name N --models M1,M2 [--rpm R] [--tpm T]
//       creates F (with a fresh hash key) if needed, adds a key and prints it on stdout: the
//       only time it is ever shown. The file keeps its digest.
//   keys list --file F      names, models, limits, creation time and a digest fingerprint
//   keys revoke --file F --name N
//
// --file defaults to $SWITCHYARD_KEYS_FILE. Writers take an advisory lock (F.lock) so that two
// concurrent commands cannot lose each other's change; a running gateway picks the new file up
// by itself (it watches the file) or on SIGHUP.
#pragma once

namespace CLI {
class App;
}

namespace switchyard::cli {

void addKeysCommand(CLI::App& app, int& exit_code);

}  // namespace switchyard::cli
