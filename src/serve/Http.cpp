// The HTTP layer of `ptxforge serve` (Service.h): routes, limits, API keys.
// Every answer is JSON except GET /metrics; every error is
// {"error": {"kind", "code", "message"}} with a status that says whose fault
// it was (docs/serve.md lists them).
#include "serve/Http.h"

#include <httplib.h>

#include <fmt/format.h>

#include <arpa/inet.h>

#include <chrono>

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

  Impl(Service &s, HttpOptions o) : service(s), options(std::move(o)) {}

  void refuseFull(httplib::Response &response) {
    const int seconds = service.retryAfterSeconds();
    response.set_header("Retry-After", std::to_string(seconds));
    send(response, errorReply(429, "queue-full",
                              fmt::format("the queue is full ({} checks waiting); retry after {} s",
                                          service.queueDepth(), seconds)));
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
    std::optional<std::future<Reply>> future = service.submit(op, std::move(*body), deadline);
    if (!future) return refuseFull(response);
    send(response, future->get());
  }

  void batch(const httplib::Request &request, httplib::Response &response) {
    std::optional<nlohmann::json> body = parseBody(request, response);
    if (!body) return;
    for (const auto &[key, value] : body->items())
      if (key != "requests" && key != "deadline_ms")
        return send(response, errorReply(400, "bad-request",
                                          fmt::format("unknown key '{}' (known: requests, deadline_ms)", key)));
    auto it = body->find("requests");
    if (it == body->end() || !it->is_array() || it->empty())
      return send(response, errorReply(400, "bad-request", "'requests' must be a non-empty array of check requests"));
    if (it->size() > options.maxBatch)
      return send(response, errorReply(413, "batch-too-large",
                                       fmt::format("{} requests in one batch; at most {}", it->size(), options.maxBatch)));
    Reply bad;
    std::optional<std::chrono::steady_clock::time_point> deadline = deadlineOf(*body, bad);
    if (!bad.ok()) return send(response, bad);
    std::vector<nlohmann::json> bodies(it->begin(), it->end());
    std::optional<std::vector<std::future<Reply>>> futures =
        service.submitAll(Service::Op::Check, std::move(bodies), deadline);
    if (!futures) return refuseFull(response);
    nlohmann::json results = nlohmann::json::array();
    for (std::future<Reply> &future : *futures) {
      Reply reply = future.get();
      nlohmann::json item = std::move(reply.body);
      if (!reply.ok()) item["status"] = reply.status;
      results.push_back(std::move(item));
    }
    send(response, {200, {{"results", std::move(results)}}});
  }

  void install() {
    server.set_payload_max_length(options.maxBodyBytes);
    const int threads = options.threads > 0 ? options.threads : static_cast<int>(service.workerCount()) + 8;
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
        r.set_content(service.metrics().render(service.queueDepth(), service.running(), service.workerCount()),
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
