// See ServeCommand.h.
#include "ServeCommand.h"

#include "Output.h"
#include "serve/Http.h"

#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace ptxforge::cli {
namespace {

struct ServeCli {
  std::string host = serve::HttpOptions{}.host;
  int port = serve::HttpOptions{}.port;
  std::string executor = "auto";
  std::string devices; ///< "0,1"; empty: every GPU
  int workers = 0;
  int workersPerGpu = 1;
  size_t queue = serve::ServiceOptions{}.queueCapacity;
  size_t clientQueue = 0; ///< 0: the whole queue
  size_t maxBodyMb = serve::HttpOptions{}.maxBodyBytes >> 20;
  size_t maxBatch = serve::HttpOptions{}.maxBatch;
  bool noSanitizer = false;
  std::vector<std::string> tasksDirs;
};

Result<std::vector<int>> parseDevices(const std::string &text) {
  std::vector<int> devices;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char *end = nullptr;
    long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 0 || value > 255)
      return makeError(ErrorKind::InvalidInput, fmt::format("--devices: '{}' is not a GPU ordinal", item));
    devices.push_back(static_cast<int>(value));
  }
  return devices;
}

int runServe(const ServeCli &cli) {
  serve::ServiceOptions options;
  options.executor = cli.executor;
  options.emulatorWorkers = cli.workers;
  options.workersPerGpu = cli.workersPerGpu;
  options.queueCapacity = cli.queue;
  options.clientQueueCapacity = cli.clientQueue;
  options.sanitizer = !cli.noSanitizer;
  options.tasksDirs = cli.tasksDirs;
  if (!cli.devices.empty()) {
    Result<std::vector<int>> devices = parseDevices(cli.devices);
    if (!devices) return fail("text", devices.error());
    options.devices = *devices;
  }
  serve::HttpOptions http;
  http.host = cli.host;
  http.port = cli.port;
  http.maxBodyBytes = cli.maxBodyMb << 20;
  http.maxBatch = cli.maxBatch;
  if (const char *key = std::getenv("PTXFORGE_SERVE_API_KEY"); key && *key) http.apiKey = key;
  // Refuse a reachable address without a key before starting any worker.
  if (!serve::isLoopback(http.host) && http.apiKey.empty())
    return fail("text", makeError(ErrorKind::InvalidInput, "api-key-required",
                                  fmt::format("--host {} is reachable from other machines: set PTXFORGE_SERVE_API_KEY "
                                              "(clients send 'Authorization: Bearer KEY'), or bind 127.0.0.1",
                                              http.host)));

  // SIGINT and SIGTERM go to a thread of their own (blocked everywhere else),
  // which stops the server; workers finish what runs and refuse what waits.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Result<std::unique_ptr<serve::Service>> service = serve::Service::create(options);
  if (!service) return fail("text", service.error());
  serve::HttpServer server(**service, http);
  Result<int> port = server.bind();
  if (!port) return fail("text", port.error());

  std::thread stopper([&] {
    int received = 0;
    sigwait(&signals, &received);
    fmt::print(stderr, "ptxforge serve: {} received, stopping\n", received == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
  });
  stopper.detach();

  const nlohmann::json health = (*service)->health();
  fmt::print(stderr, "ptxforge serve: listening on http://{}:{} ({} worker{} on {}; queue {}; {} tasks)\n", http.host,
             *port, (*service)->workerCount(), (*service)->workerCount() == 1 ? "" : "s",
             health["workers"].empty() ? std::string("nothing") : health["workers"][0]["device"].get<std::string>(),
             options.queueCapacity, (*service)->suite().tasks.size());
  server.listen();
  (*service)->shutdown();
  return kExitOk;
}

} // namespace

void registerServeCommand(CLI::App &app, int &exitCode) {
  static ServeCli cli;
  CLI::App *command = app.add_subcommand(
      "serve", "Serve the gate over HTTP/JSON: POST /v1/check, /v1/check/batch, /v1/reward; GET /v1/tasks, "
               "/healthz, /metrics (docs/serve.md)");
  command->add_option("--host", cli.host, "Address to listen on; beyond loopback needs PTXFORGE_SERVE_API_KEY")
      ->capture_default_str();
  command->add_option("--port", cli.port, "Port; 0 picks a free one (printed on stderr)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  command->add_option("--executor", cli.executor, "gpu, emu (the CPU emulator), or auto (every GPU, else emu)")
      ->check(CLI::IsMember({"gpu", "emu", "auto"}))
      ->envname("PTXFORGE_EXECUTOR")
      ->capture_default_str();
  command->add_option("--devices", cli.devices, "GPU ordinals to use, e.g. 0,1 (default: every GPU; one worker each)");
  command->add_option("--workers", cli.workers, "Emulator workers (default: one per core)")->check(CLI::Range(1, 1024));
  command
      ->add_option("--workers-per-gpu", cli.workersPerGpu,
                   "Checks at once on each GPU: their host work overlaps, timings stay one at a time (default 1)")
      ->check(CLI::Range(1, 64));
  command->add_option("--queue", cli.queue, "Checks that may wait for a worker before requests get 429")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command
      ->add_option("--client-queue", cli.clientQueue,
                   "Checks one client may have waiting before its requests get 429 (default: the whole --queue); "
                   "clients take turns (docs/serve.md)")
      ->check(CLI::Range(1, 100000));
  command->add_option("--max-body-mb", cli.maxBodyMb, "Largest request body, in MiB (413 above)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  command->add_option("--max-batch", cli.maxBatch, "Most requests in one POST /v1/check/batch")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  command->add_flag("--no-sanitizer", cli.noSanitizer, "On GPUs, do not also run the emulator's sanitizers");
  command->add_option("--tasks-dir", cli.tasksDirs, "Extra folder of tasks (repeatable)");
  command->callback([&exitCode] { exitCode = runServe(cli); });
}

} // namespace ptxforge::cli
