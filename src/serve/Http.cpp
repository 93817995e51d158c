// The HTTP layer of `ptxforge serve` (Service.h): routes, limits, API keys,
// who a request is from (for the service's per-client turns), and noticing a
// client that hangs up while its checks wait or run. Every answer is JSON
// except GET /metrics; every error is {"error": {"kind", "code", "message"}}
// with a status that says whose fault it was (docs/serve.md lists them).
#include "serve/Http.h"

#include "support/Sha256.h"

#include <httplib.h>

#include <fmt/format.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>

namespace ptxforge::serve {

bool isLoopback(const std::string &host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr address{};
  if (::inet_pton(AF_INET, host.c_str(), &address) == 1) return (ntohl(address.s_addr) >> 24) == 127;
  return false;
}

namespace {

/// Compares without an early exit, so that the time taken says nothing of the key.
bool sameKey(const std::string &given, const std::string &expected) {
  unsigned char difference = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    difference |= static_cast<unsigned char>(given[i] ^ expected[i % std::max<size_t>(1, expected.size())]);
  return difference == 0;
}

void send(httplib::Response &response, const Reply &reply) {
  response.status = reply.status;
  response.set_content(reply.body.dump(), "application/json");
}

/// The body as JSON, or the 400 that says why it is not.
std::optional<nlohmann::json> parseBody(const httplib::Request &request, httplib::Response &response) {
  nlohmann::json body = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    send(response, errorReply(400, "bad-json", "the request body is not valid JSON"));
    return std::nullopt;
  }
  if (!body.is_object()) {
    send(response, errorReply(400, "bad-request", fmt::format("the request must be a JSON object, not {}", body.type_name())));
    return std::nullopt;
  }
  return body;
}

/// How often a handler whose checks wait looks whether its client hung up.
constexpr std::chrono::milliseconds kHangUpPoll{50};

/// The numeric host and the port of a socket address, as cpp-httplib writes
/// a request's remote_addr and local_addr (getnameinfo, NI_NUMERICHOST).
std::optional<std::pair<std::string, int>> hostAndPort(const sockaddr_storage &address, socklen_t length) {
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr *>(&address), length, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return std::nullopt;
  return std::make_pair(std::string(host), std::atoi(port));
}

/// Whether descriptor `fd` is a TCP socket whose two ends are the request's.
bool isConnectionOf(int fd, const httplib::Request &request) {
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode)) return false;
  sockaddr_storage local{}, peer{};
  socklen_t localLength = sizeof local, peerLength = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &localLength) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &peerLength) != 0)
    return false;
  if (local.ss_family != AF_INET && local.ss_family != AF_INET6) return false;
  auto localEnd = hostAndPort(local, localLength);
  auto peerEnd = hostAndPort(peer, peerLength);
  return localEnd && peerEnd && localEnd->second == request.local_port && peerEnd->second == request.remote_port &&
         localEnd->first == request.local_addr && peerEnd->first == request.remote_addr;
}

/// The socket of the connection `request` came on, or -1. cpp-httplib 0.11
/// hands a handler no socket, so it is found among this process's
/// descriptors by its two ends (the request's local and remote address and
/// port: unique among open TCP sockets). The handler runs on the
/// connection's own thread, which closes the socket only after the handler
/// returns, so the descriptor stays this connection's while the handler
/// waits. Only polled, never read: the HTTP library keeps the stream.
int connectionSocket(const httplib::Request &request) {
  if (request.remote_port <= 0 || request.local_port <= 0) return -1;
  // A kept-alive connection sends its requests to the same thread: the
  // socket found for the previous one is tried before the scan.
  thread_local int lastFound = -1;
  if (lastFound >= 0 && isConnectionOf(lastFound, request)) return lastFound;
  DIR *directory = ::opendir("/proc/self/fd");
  if (!directory) return -1;
  int found = -1;
  while (dirent *entry = ::readdir(directory)) {
    char *end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(directory)) continue;
    if (isConnectionOf(static_cast<int>(fd), request)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  ::closedir(directory);
  lastFound = found;
  return found;
}

/// Whether the client closed its end: the peer's FIN (POLLRDHUP), a reset or
/// an error. Like Go's net/http, a client that shuts down its sending side
/// while it waits counts as gone: HTTP/1.1 clients do not half-close.
bool clientHungUp(int socket) {
  if (socket < 0) return false;
  pollfd watched{socket, POLLRDHUP, 0};
  return ::poll(&watched, 1, 0) > 0 && (watched.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/// A client's name declared in a body ("client"): 1 to 128 printable ASCII
/// characters. Absent: empty.
std::optional<std::string> declaredClient(const nlohmann::json &body, Reply &bad) {
  auto it = body.find("client");
  if (it == body.end()) return std::string();
  if (!it->is_string() || it->get<std::string>().empty() || it->get<std::string>().size() > 128) {
    bad = errorReply(400, "bad-request", "'client' must be a name of 1 to 128 printable characters");
    return std::nullopt;
  }
  for (char c : it->get<std::string>())
    if (c < 0x20 || c > 0x7e) {
      bad = errorReply(400, "bad-request", "'client' must be a name of 1 to 128 printable characters");
      return std::nullopt;
    }
  return it->get<std::string>();
}

/// "deadline_ms" of a body: a positive integer, or none.
std::optional<std::chrono::steady_clock::time_point> deadlineOf(const nlohmann::json &body, Reply &bad) {
  auto it = body.find("deadline_ms");
  if (it == body.end()) return std::nullopt;
  if (!it->is_number_integer() || it->get<long long>() <= 0 || it->get<long long>() > 86'400'000) {
    bad = errorReply(400, "bad-request", "'deadline_ms' must be a positive integer of milliseconds (at most a day)");
    return std::nullopt;
  }
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(it->get<long long>());
}

} // namespace

struct HttpServer::Impl {
  Service &service;
  HttpOptions options;
  httplib::Server server;
  int port = 0;

  std::string keyClient; ///< the client name of the API key's holders: "key:" and a fingerprint of the key

  Impl(Service &s, HttpOptions o) : service(s), options(std::move(o)) {
    if (!options.apiKey.empty()) keyClient = "key:" + sha256Hex(options.apiKey).substr(0, 12);
  }

  /// Whose turn a request waits for: the name the body declares, else the
  /// API key when one is configured, else the peer's address.
  std::optional<std::string> clientOf(const httplib::Request &request, const nlohmann::json &body,
                                      httplib::Response &response) {
    Reply bad;
    std::optional<std::string> declared = declaredClient(body, bad);
    if (!declared) {
      send(response, bad);
      return std::nullopt;
    }
    if (!declared->empty()) return "client:" + *declared;
    if (!keyClient.empty()) return keyClient;
    return "peer:" + request.remote_addr;
  }

  void refuse(httplib::Response &response, const Error &why, const std::string &client) {
    if (why.code == "shutting-down") return send(response, errorReply(503, why.code, why.message));
    const int seconds = service.retryAfterSeconds(client);
    response.set_header("Retry-After", std::to_string(seconds));
    send(response, errorReply(429, why.code, fmt::format("{}; retry after {} s", why.message, seconds)));
  }

  /// Waits for `futures` while watching the connection; the replies, or
  /// nullopt when the client hung up first (its queued jobs are then
  /// dropped and its running ones told to stop; nobody waits for them).
  std::optional<std::vector<Reply>> await(std::vector<std::future<Reply>> &futures, std::stop_source &stop,
                                          int socket) {
    std::vector<Reply> replies;
    for (std::future<Reply> &future : futures) {
      while (future.wait_for(kHangUpPoll) != std::future_status::ready) {
        if (clientHungUp(socket)) {
          stop.request_stop();
          service.dropCancelled();
          return std::nullopt;
        }
      }
      replies.push_back(future.get());
    }
    return replies;
  }

  /// The 499 of a client that hung up (nobody reads it; the metrics count it).
  void sendGone(httplib::Response &response) {
    send(response, errorReply(499, "client-gone", "the client closed its connection before the answer"));
  }

  /// Queues `bodies` for `client` and waits for them, or answers why not.
  std::optional<std::vector<Reply>> run(Service::Op op, std::vector<nlohmann::json> bodies, const std::string &client,
                                        std::optional<std::chrono::steady_clock::time_point> deadline,
                                        const httplib::Request &request, httplib::Response &response) {
    const int socket = connectionSocket(request);
    // Read from the socket after its client left (the request was still in
    // its buffer): nothing is queued.
    if (clientHungUp(socket)) {
      for (size_t i = 0; i < bodies.size(); ++i) service.metrics().countCancelled("queued");
      sendGone(response);
      return std::nullopt;
    }
    std::stop_source stop;
    Result<std::vector<std::future<Reply>>> futures =
        service.submitAll(op, std::move(bodies), {.client = client, .deadline = deadline, .stop = stop.get_token()});
    if (!futures) {
      refuse(response, futures.error(), client);
      return std::nullopt;
    }
    std::optional<std::vector<Reply>> replies = await(*futures, stop, socket);
    if (!replies) sendGone(response);
    return replies;
  }

  void route(const char *name, httplib::Response &response, const std::function<void()> &handle) {
    try {
      handle();
    } catch (const std::exception &e) {
      send(response, errorReply(500, "internal", fmt::format("the service failed on this request: {}", e.what())));
    }
    service.metrics().countRequest(name, response.status);
  }

  void checkOrReward(Service::Op op, const httplib::Request &request, httplib::Response &response) {
    std::optional<nlohmann::json> body = parseBody(request, response);
    if (!body) return;
    Reply bad;
    std::optional<std::chrono::steady_clock::time_point> deadline = deadlineOf(*body, bad);
    if (!bad.ok()) return send(response, bad);
    std::optional<std::string> client = clientOf(request, *body, response);
    if (!client) return;
    std::vector<nlohmann::json> bodies;
    bodies.push_back(std::move(*body));
    std::optional<std::vector<Reply>> replies = run(op, std::move(bodies), *client, deadline, request, response);
    if (replies) send(response, replies->front());
  }

  void batch(const httplib::Request &request, httplib::Response &response) {
    std::optional<nlohmann::json> body = parseBody(request, response);
    if (!body) return;
    for (const auto &[key, value] : body->items())
      if (key != "requests" && key != "deadline_ms" && key != "client")
        return send(response, errorReply(400, "bad-request",
                                          fmt::format("unknown key '{}' (known: requests, deadline_ms, client)", key)));
    auto it = body->find("requests");
    if (it == body->end() || !it->is_array() || it->empty())
      return send(response, errorReply(400, "bad-request", "'requests' must be a non-empty array of check requests"));
    if (it->size() > options.maxBatch)
      return send(response, errorReply(413, "batch-too-large",
                                       fmt::format("{} requests in one batch; at most {}", it->size(), options.maxBatch)));
    Reply bad;
    std::optional<std::chrono::steady_clock::time_point> deadline = deadlineOf(*body, bad);
    if (!bad.ok()) return send(response, bad);
    for (const nlohmann::json &item : *it)
      for (const char *key : {"client", "deadline_ms"})
        if (item.is_object() && item.contains(key))
          return send(response, errorReply(400, "bad-request",
                                           fmt::format("'{}' belongs to the whole batch, beside 'requests', not to "
                                                       "one of them",
                                                       key)));
    std::optional<std::string> client = clientOf(request, *body, response);
    if (!client) return;
    std::vector<nlohmann::json> bodies(it->begin(), it->end());
    std::optional<std::vector<Reply>> replies =
        run(Service::Op::Check, std::move(bodies), *client, deadline, request, response);
    if (!replies) return;
    nlohmann::json results = nlohmann::json::array();
    for (Reply &reply : *replies) {
      nlohmann::json item = std::move(reply.body);
      if (!reply.ok()) item["status"] = reply.status;
      results.push_back(std::move(item));
    }
    send(response, {200, {{"results", std::move(results)}}});
  }

  void install() {
    server.set_payload_max_length(options.maxBodyBytes);
    // Every check that may wait in the queue holds an HTTP thread while it
    // waits; fewer threads would leave connections unread in the library's
    // own queue, where no per-client turn applies.
    const int threads = options.threads > 0
                            ? options.threads
                            : static_cast<int>(std::min<size_t>(service.workerCount() + service.queueCapacity(), 512)) + 8;
    server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    server.set_read_timeout(30, 0);
    server.set_write_timeout(30, 0);

    server.set_pre_routing_handler([this](const httplib::Request &request, httplib::Response &response) {
      if (options.apiKey.empty() || request.path == "/healthz") return httplib::Server::HandlerResponse::Unhandled;
      const std::string header = request.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      if (header.rfind(prefix, 0) == 0 && sameKey(header.substr(prefix.size()), options.apiKey))
        return httplib::Server::HandlerResponse::Unhandled;
      response.set_header("WWW-Authenticate", "Bearer");
      send(response, errorReply(401, "unauthorized", "this service needs 'Authorization: Bearer KEY' (PTXFORGE_SERVE_API_KEY)"));
      service.metrics().countRequest("unauthorized", 401);
      return httplib::Server::HandlerResponse::Handled;
    });
    server.set_error_handler([this](const httplib::Request &, httplib::Response &response) {
      // Statuses httplib sets itself (413 for a body over the limit, 404 for no route, 400 for a bad request line).
      if (!response.body.empty()) return;
      Reply reply;
      if (response.status == 413)
        reply = errorReply(413, "body-too-large", fmt::format("the request body is over {} bytes", options.maxBodyBytes));
      else if (response.status == 404)
        reply = errorReply(404, "no-route", "no such route; see docs/serve.md (POST /v1/check, GET /v1/tasks, ...)");
      else
        reply = errorReply(response.status, "http-error", fmt::format("HTTP status {}", response.status));
      send(response, reply);
      service.metrics().countRequest("error", response.status);
    });

    server.Post("/v1/check", [this](const httplib::Request &q, httplib::Response &r) {
      route("check", r, [&] { checkOrReward(Service::Op::Check, q, r); });
    });
    server.Post("/v1/reward", [this](const httplib::Request &q, httplib::Response &r) {
      route("reward", r, [&] { checkOrReward(Service::Op::Reward, q, r); });
    });
    server.Post("/v1/check/batch", [this](const httplib::Request &q, httplib::Response &r) {
      route("check_batch", r, [&] { batch(q, r); });
    });
    server.Post("/v1/lint", [this](const httplib::Request &q, httplib::Response &r) {
      route("lint", r, [&] {
        if (std::optional<nlohmann::json> body = parseBody(q, r)) send(r, lintJson(*body));
      });
    });
    server.Post("/v1/compile", [this](const httplib::Request &q, httplib::Response &r) {
      route("compile", r, [&] {
        if (std::optional<nlohmann::json> body = parseBody(q, r)) send(r, compileJson(*body));
      });
    });
    server.Post("/v1/extract", [this](const httplib::Request &q, httplib::Response &r) {
      route("extract", r, [&] {
        if (std::optional<nlohmann::json> body = parseBody(q, r)) send(r, extractJson(*body));
      });
    });
    server.Get("/v1/tasks", [this](const httplib::Request &, httplib::Response &r) {
      route("tasks", r, [&] { send(r, {200, tasksJson(service.suite())}); });
    });
    server.Get(R"(/v1/tasks/([A-Za-z0-9_.\-]+))", [this](const httplib::Request &q, httplib::Response &r) {
      route("task", r, [&] {
        Result<const tasks::TaskSpec *> task = findTask(service.suite(), q.matches[1].str());
        if (!task) return send(r, errorReply(task.error()));
        send(r, {200, nlohmann::json::parse(taskJson(**task).dump())});
      });
    });
    server.Get("/healthz", [this](const httplib::Request &, httplib::Response &r) {
      route("healthz", r, [&] { send(r, {200, service.health()}); });
    });
    server.Get("/metrics", [this](const httplib::Request &, httplib::Response &r) {
      route("metrics", r, [&] {
        r.status = 200;
        r.set_content(service.metrics().render(service.queueDepth(), service.running(), service.workerCount(),
                                               service.queueClients()),
                      "text/plain; version=0.0.4");
      });
    });
  }
};

HttpServer::HttpServer(Service &service, HttpOptions options) : impl_(std::make_unique<Impl>(service, std::move(options))) {
  impl_->install();
}

HttpServer::~HttpServer() { stop(); }

Result<int> HttpServer::bind() {
  const HttpOptions &options = impl_->options;
  if (!isLoopback(options.host) && options.apiKey.empty())
    return makeError(ErrorKind::InvalidInput, "api-key-required",
                     fmt::format("--host {} is reachable from other machines: set PTXFORGE_SERVE_API_KEY (clients send "
                                 "'Authorization: Bearer KEY'), or bind 127.0.0.1",
                                 options.host));
  int port = options.port;
  if (port == 0) {
    port = impl_->server.bind_to_any_port(options.host);
  } else if (!impl_->server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port <= 0)
    return makeError(ErrorKind::Io, "bind-failed",
                     fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)", options.host,
                                 options.port));
  impl_->port = port;
  return port;
}

void HttpServer::listen() { impl_->server.listen_after_bind(); }

void HttpServer::stop() {
  if (impl_ && impl_->server.is_running()) impl_->server.stop();
}

} // namespace ptxforge::serve
