// fake-kube-apiserver: the tests' fake Kubernetes API server as a process, for scripts (the
// scale-down benchmark). Writes a kubeconfig, the CA and the token into --out, prints
// `listening 127.0.0.1:PORT`, and serves until SIGTERM/SIGINT. Objects are created and changed
// through its /fake/... endpoints (same port, same token; see fake_api_server.cc).
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>

#include "support/fake_kube/fake_api_server.h"

int main(int argc, char** argv) {
  CLI::App app{"A fake Kubernetes API server for tests and benchmarks"};
  std::string out_dir;
  switchyard::testing::FakeApiServer::Options options;
  app.add_option("--out", out_dir, "directory for kubeconfig, ca.crt and token")->required();
  app.add_option("--port", options.port, "port (0: OS-chosen)");
  app.add_option("--token", options.token, "bearer token required");
  app.add_option("--history", options.history, "watch events kept for resuming");
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // the server's thread inherits the mask

  switchyard::testing::FakeApiServer server(options);
  std::ofstream(out_dir + "/kubeconfig") << server.kubeconfig();
  std::ofstream(out_dir + "/ca.crt") << server.tls().ca_pem;
  std::ofstream(out_dir + "/token") << options.token;
  std::printf("listening 127.0.0.1:%u\n", server.port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  return 0;
}
