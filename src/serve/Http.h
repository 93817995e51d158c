// Http: `ptxforge serve`'s HTTP layer over a Service (cpp-httplib): the
// routes of docs/serve.md, body and batch limits, API keys. A library of its
// own (serve_http) so that the Python package links no HTTP server.
#pragma once

#include "serve/Service.h"

#include <memory>
#include <string>

namespace ptxforge::serve {

/// `ptxforge serve`'s HTTP layer.
struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8177;                ///< 0: any free port
  size_t maxBodyBytes = 8u << 20; ///< 413 above this
  size_t maxBatch = 256;          ///< requests per POST /v1/check/batch
  /// Required as `Authorization: Bearer KEY` on every route but /healthz when
  /// set. Must be set when `host` is not a loopback address.
  std::string apiKey;
  int threads = 0; ///< HTTP threads; 0: workers + queue capacity (at most 512) + 8
};

/// Whether `host` names the loopback interface only.
bool isLoopback(const std::string &host);

/// Serves `service` until stop() is called (from a signal handler's thread or
/// a test). Not copyable; one per port.
class HttpServer {
public:
  HttpServer(Service &service, HttpOptions options);
  ~HttpServer();
  /// Binds; returns the port (the one picked for port 0). Errors: the address
  /// is in use, or an API key is missing for a non-loopback host.
  Result<int> bind();
  /// Serves until stop(); call after bind().
  void listen();
  void stop();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace ptxforge::serve
