// Tests of the serve library: the JSON request and reward contracts, and
// `ptxforge serve`'s HTTP layer end to end on the emulator (a Service and an
// HttpServer in this process, on a free loopback port, talked to with a
// cpp-httplib client): verdicts, malformed and oversized requests, a full
// queue and each client's share of it, clients taking turns, deadlines, API
// keys, a hung kernel that costs its worker process, and clients that hang up
// while their checks wait or run.
#include "serve/Http.h"
#include "serve/Remote.h"
#include "tasks/Reference.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

namespace ptxforge::serve {
namespace {

using namespace std::chrono_literals;

const std::string &referencePtx() {
  static const std::string ptx = [] {
    Result<tasks::Suite> suite = loadSuite({});
    EXPECT_TRUE(suite.ok());
    Result<const tasks::TaskSpec *> task = findTask(*suite, "vector_add");
    EXPECT_TRUE(task.ok());
    Result<tasks::CompiledReference> reference = tasks::compileReference(**task, "sm_90");
    EXPECT_TRUE(reference.ok()) << (reference.ok() ? "" : reference.error().message);
    return reference.ok() ? reference->ptx : std::string();
  }();
  return ptx;
}

std::string replaced(std::string text, const std::string &from, const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// a - b instead of a + b.
std::string wrongPtx() { return replaced(referencePtx(), "add.f32", "sub.f32"); }
/// Every thread spins at the end for ever.
std::string hangingPtx() { return replaced(referencePtx(), "$L__BB0_2:\n\tret;", "$L__BB0_2:\n\tbra.uni \t$L__BB0_2;"); }

// --- CheckRequest and the reward -------------------------------------------------

TEST(CheckRequestTest, ReadsEveryKeyAndRefusesTyposAndWrongTypes) {
  Result<CheckRequest> request = CheckRequest::fromJson(
      {{"task", "saxpy"}, {"answer", "text"}, {"shapes", "small"}, {"extra_shapes", {"n=7"}}, {"seed", 5},
       {"trials", 2}, {"drawn_shapes", 0}, {"timing_rounds", 3}, {"timeout_ms", 100}, {"arch", "sm_90"},
       {"bench", false}, {"lint", false}, {"sanitizer", false}});
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ(request->task, "saxpy");
  EXPECT_EQ(request->seed, 5u);
  EXPECT_EQ(request->trials, 2);
  EXPECT_EQ(request->extraShapes, std::vector<std::string>{"n=7"});
  EXPECT_FALSE(request->benchmark);

  auto message = [](const nlohmann::json &body) {
    Result<CheckRequest> r = CheckRequest::fromJson(body);
    EXPECT_FALSE(r);
    return r ? std::string() : r.error().code + ": " + r.error().message;
  };
  EXPECT_NE(message({{"task", "saxpy"}, {"ptx", "x"}, {"trails", 3}}).find("unknown key 'trails'"), std::string::npos);
  EXPECT_NE(message({{"task", "saxpy"}, {"ptx", 3}}).find("'ptx' must be a string"), std::string::npos);
  EXPECT_NE(message({{"task", "saxpy"}}).find("'ptx'"), std::string::npos);
  EXPECT_NE(message({{"ptx", "x"}}).find("'task' is missing"), std::string::npos);
  EXPECT_NE(message({{"task", "saxpy"}, {"ptx", "x"}, {"answer", "y"}}).find("not both"), std::string::npos);
  EXPECT_NE(message({{"task", "saxpy"}, {"ptx", "x"}, {"trials", 0}}).find("'trials' must be in [1, 100]"),
            std::string::npos);
  EXPECT_NE(message({{"task", "saxpy"}, {"ptx", "x"}, {"seed", -1}}).find("'seed'"), std::string::npos);
  EXPECT_NE(message(nlohmann::json::array()).find("JSON object"), std::string::npos);
  EXPECT_EQ(message({{"task", "saxpy"}, {"ptx", "x"}, {"bench", "yes"}}).rfind("bad-request", 0), 0u);
}

AnswerCheck resultWith(verify::Verdict verdict, bool compiled, std::optional<double> speedupLow = std::nullopt) {
  AnswerCheck check;
  check.result.verdict = verdict;
  if (compiled) {
    check.result.compile.emplace();
    check.result.compile->ok = true;
  }
  if (speedupLow) {
    verify::BenchmarkReport bench;
    bench.baseline.median = 1.0;
    bench.speedup = *speedupLow * 1.1;
    bench.speedupLow = *speedupLow;
    bench.speedupHigh = *speedupLow * 1.2;
    check.result.benchmarks.push_back(bench);
  }
  return check;
}

TEST(CompileRouteTest, ArchSpecificPtxIsCompiledForItsTarget) {
  // POST /v1/compile with no arch: the wgmma kernel's `.target sm_90a` is what it is compiled for.
  std::ifstream file(std::string(PTXFORGE_SOURCE_DIR) + "/tests/hopper/bf16_gemm_wgmma.ptx");
  std::stringstream text;
  text << file.rdbuf();
  Reply reply = compileJson({{"ptx", text.str()}});
  ASSERT_EQ(reply.status, 200) << reply.body.dump();
  EXPECT_EQ(reply.body.at("ok"), true) << reply.body.dump();
  EXPECT_EQ(reply.body.at("arch"), "sm_90a");
}

TEST(RewardTest, EachStageEarnsItsWeightAndSpeedNeedsTheNoiseBandAboveOne) {
  RewardWeights weights;
  auto reward = [&](const AnswerCheck &check) { return rewardJson(check, weights)["reward"].get<double>(); };
  EXPECT_DOUBLE_EQ(reward(resultWith(verify::Verdict::NoPtx, false)), 0.0);
  EXPECT_DOUBLE_EQ(reward(resultWith(verify::Verdict::LintError, false)), 0.05);
  EXPECT_DOUBLE_EQ(reward(resultWith(verify::Verdict::CompileError, false)), 0.10);
  EXPECT_NEAR(reward(resultWith(verify::Verdict::Wrong, true)), 0.20, 1e-12);
  EXPECT_NEAR(reward(resultWith(verify::Verdict::Correct, true)), 0.80, 1e-12);
  // Slower than nvcc, or a speedup inside the noise: no speed reward.
  EXPECT_NEAR(reward(resultWith(verify::Verdict::Correct, true, 0.9)), 0.80, 1e-12);
  // 2x at the band's lower end: half of `speed` (log2(2) / log2(4)); 8x: all of it.
  EXPECT_NEAR(reward(resultWith(verify::Verdict::Correct, true, 2.0)), 0.90, 1e-12);
  EXPECT_NEAR(reward(resultWith(verify::Verdict::Correct, true, 8.0)), 1.00, 1e-12);
  nlohmann::json json = rewardJson(resultWith(verify::Verdict::Correct, true, 2.0), weights);
  EXPECT_NEAR(json["speedup_low"].get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(json["stages"]["speed"].get<double>(), 0.1, 1e-12);

  Result<RewardWeights> custom = RewardWeights::fromJson({{"rejected", -1.0}, {"correct", 1.0}});
  ASSERT_TRUE(custom);
  weights = *custom;
  EXPECT_NEAR(reward(resultWith(verify::Verdict::Rejected, true)), 0.2 - 1.0, 1e-12);
  EXPECT_FALSE(RewardWeights::fromJson({{"corect", 1.0}}));
  EXPECT_FALSE(RewardWeights::fromJson({{"speed_cap", 1.0}}));
  EXPECT_FALSE(RewardWeights::fromJson({{"speed", "high"}}));
}

// --- HTTP end to end on the emulator --------------------------------------------------

/// A Service and its HttpServer on a free loopback port.
class Served {
public:
  explicit Served(ServiceOptions options = {}, HttpOptions http = {}) {
    if (options.executor == "auto") options.executor = "emu";
    if (options.emulatorWorkers == 0) options.emulatorWorkers = 2;
    Result<std::unique_ptr<Service>> created = Service::create(options);
    if (!created) {
      ADD_FAILURE() << created.error().message;
      return;
    }
    service_ = std::move(*created);
    http.port = 0;
    server_ = std::make_unique<HttpServer>(*service_, http);
    Result<int> port = server_->bind();
    if (!port) {
      ADD_FAILURE() << port.error().message;
      return;
    }
    port_ = *port;
    thread_ = std::thread([this] { server_->listen(); });
  }
  ~Served() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    if (service_) service_->shutdown();
  }

  httplib::Client client(std::chrono::seconds readTimeout = 120s) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(readTimeout);
    return c;
  }
  Service &service() { return *service_; }
  int port() const { return port_; }

private:
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

nlohmann::json parsed(const httplib::Result &result) {
  EXPECT_TRUE(result) << "no HTTP answer";
  if (!result) return nullptr;
  nlohmann::json body = nlohmann::json::parse(result->body, nullptr, false);
  EXPECT_FALSE(body.is_discarded()) << result->body;
  return body;
}

httplib::Result post(httplib::Client &client, const std::string &path, const nlohmann::json &body,
                     const httplib::Headers &headers = {}) {
  return client.Post(path.c_str(), headers, body.dump(), "application/json");
}

nlohmann::json fastCheck(const std::string &ptx) {
  return {{"task", "vector_add"}, {"ptx", ptx}, {"bench", false}, {"drawn_shapes", 0}, {"trials", 1}};
}

TEST(ServeHttpTest, VerdictsRewardsTasksHealthAndMetrics) {
  Served served;
  httplib::Client client = served.client();

  httplib::Result correct = post(client, "/v1/check", fastCheck(referencePtx()));
  ASSERT_TRUE(correct);
  EXPECT_EQ(correct->status, 200) << correct->body;
  nlohmann::json doc = parsed(correct);
  EXPECT_EQ(doc["verdict"], "correct") << doc["summary"];
  EXPECT_TRUE(doc["timings_ms"].is_object());
  EXPECT_TRUE(doc["provenance"]["seed"].is_number_unsigned());

  nlohmann::json wrong = parsed(post(client, "/v1/check", fastCheck(wrongPtx())));
  EXPECT_EQ(wrong["verdict"], "wrong") << wrong["summary"];

  // A model's answer: the module is taken out of it, and the reward is staged.
  nlohmann::json answer = fastCheck("");
  answer.erase("ptx");
  answer["answer"] = "Here is my kernel.\n```ptx\n" + referencePtx() + "```\nDone.";
  nlohmann::json reward = parsed(post(client, "/v1/reward", answer));
  EXPECT_NEAR(reward["reward"].get<double>(), 0.8, 1e-9) << reward.dump();
  EXPECT_EQ(reward["check"]["verdict"], "correct");
  EXPECT_EQ(reward["check"]["extracted"]["source"], "ptx-fence");

  answer["answer"] = "I could not write this kernel.";
  nlohmann::json none = parsed(post(client, "/v1/reward", answer));
  EXPECT_EQ(none["verdict"], "no-ptx");
  EXPECT_EQ(none["reward"].get<double>(), 0.0);

  nlohmann::json batch = parsed(post(client, "/v1/check/batch",
                                     {{"requests", {fastCheck(referencePtx()), fastCheck(wrongPtx()),
                                                    {{"task", "nope"}, {"ptx", "x"}}}}}));
  ASSERT_EQ(batch["results"].size(), 3u) << batch.dump();
  EXPECT_EQ(batch["results"][0]["verdict"], "correct");
  EXPECT_EQ(batch["results"][1]["verdict"], "wrong");
  EXPECT_EQ(batch["results"][2]["status"], 404);
  EXPECT_EQ(batch["results"][2]["error"]["code"], "unknown-task");

  nlohmann::json tasks = parsed(client.Get("/v1/tasks"));
  EXPECT_GE(tasks["tasks"].size(), 21u);
  nlohmann::json task = parsed(client.Get("/v1/tasks/saxpy"));
  EXPECT_EQ(task["kernel"], "saxpy");
  httplib::Result unknown = client.Get("/v1/tasks/saxpi");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_NE(unknown->body.find("did you mean 'saxpy'"), std::string::npos) << unknown->body;

  nlohmann::json health = parsed(client.Get("/healthz"));
  EXPECT_EQ(health["status"], "ok");
  EXPECT_EQ(health["workers"].size(), 2u);

  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("ptxforge_verdicts_total{verdict=\"correct\"} 3"), std::string::npos) << metrics->body;
  EXPECT_NE(metrics->body.find("ptxforge_verdicts_total{verdict=\"wrong\"} 2"), std::string::npos);
  EXPECT_NE(metrics->body.find("ptxforge_requests_total{route=\"check\",status=\"200\"} 2"), std::string::npos);
  EXPECT_NE(metrics->body.find("ptxforge_stage_seconds_bucket{stage=\"compile\",le=\"+Inf\"}"), std::string::npos);
}

TEST(ServeHttpTest, MalformedAndOversizedRequestsGetLocatedErrors) {
  HttpOptions http;
  http.maxBodyBytes = 64 * 1024;
  http.maxBatch = 2;
  Served served({}, http);
  httplib::Client client = served.client();
  auto expectError = [&](const httplib::Result &result, int status, const std::string &code) {
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, status) << result->body;
    nlohmann::json body = nlohmann::json::parse(result->body, nullptr, false);
    ASSERT_FALSE(body.is_discarded()) << result->body;
    EXPECT_EQ(body["error"]["code"], code) << result->body;
  };
  expectError(client.Post("/v1/check", "{\"task\": ", "application/json"), 400, "bad-json");
  expectError(client.Post("/v1/check", "[1, 2]", "application/json"), 400, "bad-request");
  expectError(post(client, "/v1/check", {{"task", "vector_add"}, {"ptx", "x"}, {"trails", 2}}), 400, "bad-request");
  expectError(post(client, "/v1/check", {{"task", "vector_ad"}, {"ptx", "x"}}), 404, "unknown-task");
  expectError(post(client, "/v1/check", {{"task", "vector_add"}, {"ptx", "x"}, {"deadline_ms", -5}}), 400,
              "bad-request");
  expectError(post(client, "/v1/check", {{"task", "vector_add"}, {"ptx", "x"}, {"shapes", "9"}}), 400, "");
  expectError(post(client, "/v1/check", {{"task", "vector_add"}, {"ptx", std::string(100 * 1024, 'x')}}), 413,
              "body-too-large");
  expectError(post(client, "/v1/check/batch", {{"requests", {fastCheck("a"), fastCheck("b"), fastCheck("c")}}}), 413,
              "batch-too-large");
  expectError(post(client, "/v1/check/batch", {{"requests", nlohmann::json::array()}}), 400, "bad-request");
  expectError(client.Get("/v2/nothing"), 404, "no-route");
  expectError(post(client, "/v1/lint", {{"source", "x"}}), 400, "bad-request");
  // PTX that does not parse is a verdict, not an error of the request.
  nlohmann::json lint = parsed(post(client, "/v1/check", fastCheck(".version 9.0\n.target sm_90\n{{{")));
  EXPECT_EQ(lint["verdict"], "lint-error");
  // The service is still there.
  EXPECT_EQ(parsed(post(client, "/v1/check", fastCheck(referencePtx())))["verdict"], "correct");
}

TEST(ServeHttpTest, AFullQueueAnswers429AndAStaleJobAnswers504) {
  ServiceOptions options;
  options.emulatorWorkers = 1;
  options.queueCapacity = 1;
  Served served(options);
  // The only worker spins on a hanging kernel until its 3 s launch deadline.
  nlohmann::json hang = fastCheck(hangingPtx());
  hang["timeout_ms"] = 3000;
  auto slow = std::async(std::launch::async, [&] {
    httplib::Client c = served.client();
    return parsed(post(c, "/v1/check", hang));
  });
  for (int i = 0; i < 200 && served.service().running() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(served.service().running(), 1u);
  // One check may wait; it has a deadline it cannot meet.
  nlohmann::json stale = fastCheck(referencePtx());
  stale["deadline_ms"] = 50;
  auto waiting = std::async(std::launch::async, [&] {
    httplib::Client c = served.client();
    httplib::Result result = post(c, "/v1/check", stale);
    return result ? result->status : -1;
  });
  for (int i = 0; i < 200 && served.service().queueDepth() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(served.service().queueDepth(), 1u);
  httplib::Client client = served.client();
  httplib::Result full = post(client, "/v1/check", fastCheck(referencePtx()));
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429) << full->body;
  EXPECT_TRUE(full->has_header("Retry-After"));
  EXPECT_GE(std::stoi(full->get_header_value("Retry-After")), 1);

  // The hang cost its worker process, not the service: a verdict, then the next check runs.
  nlohmann::json hung = slow.get();
  EXPECT_EQ(hung["verdict"], "timeout") << hung.dump();
  EXPECT_EQ(waiting.get(), 504);
  EXPECT_EQ(parsed(post(client, "/v1/check", fastCheck(referencePtx())))["verdict"], "correct");
}

TEST(ServeHttpTest, AClientThatGoesAwayCostsOnlyItsOwnCheck) {
  ServiceOptions options;
  options.emulatorWorkers = 1;
  Served served(options);
  {
    httplib::Client impatient = served.client(1s);
    nlohmann::json hang = fastCheck(hangingPtx());
    hang["timeout_ms"] = 2000;
    httplib::Result gone = post(impatient, "/v1/check", hang);
    EXPECT_FALSE(gone); // read timeout: the client hung up mid-request
  }
  httplib::Client client = served.client();
  EXPECT_EQ(parsed(post(client, "/v1/check", fastCheck(referencePtx())))["verdict"], "correct");
  EXPECT_EQ(parsed(client.Get("/healthz"))["status"], "ok");
}

/// Waits (at most 5 s) until `condition` holds.
template <typename Condition> bool eventually(Condition condition) {
  for (int i = 0; i < 500; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

/// The value of one metric line ("name{labels}") of /metrics, or -1.
double metricValue(const std::string &metrics, const std::string &line) {
  size_t at = metrics.find(line + " ");
  return at == std::string::npos ? -1 : std::stod(metrics.substr(at + line.size() + 1));
}

TEST(ServiceTest, ClientsTakeTurnsSoThatABatchDoesNotStarveASingleCheck) {
  ServiceOptions options;
  options.executor = "emu";
  options.emulatorWorkers = 1;
  Result<std::unique_ptr<Service>> created = Service::create(options);
  ASSERT_TRUE(created);
  Service &service = **created;
  // Client "a" queues 8 checks at once, then "b" one. First come first served
  // would run all of a's first; in turns, b's runs after at most two of them
  // (the one running when b arrived and the one whose turn came first).
  std::stop_source stopA;
  std::vector<nlohmann::json> batch(8, fastCheck(referencePtx()));
  Result<std::vector<std::future<Reply>>> a =
      service.submitAll(Service::Op::Check, batch, {.client = "a", .deadline = std::nullopt, .stop = stopA.get_token()});
  ASSERT_TRUE(a);
  Result<std::future<Reply>> b = service.submit(Service::Op::Check, fastCheck(referencePtx()), {.client = "b", .deadline = std::nullopt, .stop = {}});
  ASSERT_TRUE(b);
  Reply single = b->get();
  EXPECT_EQ(single.status, 200) << single.body.dump();
  EXPECT_EQ(single.body["verdict"], "correct");
  // What of a's is still waiting or running is dropped: only what ran before b's finished is answered 200.
  stopA.request_stop();
  service.dropCancelled();
  int ranBefore = 0, dropped = 0;
  for (std::future<Reply> &future : *a) {
    Reply reply = future.get();
    if (reply.status == 200) ++ranBefore;
    if (reply.status == 499) {
      ++dropped;
      EXPECT_EQ(reply.body["error"]["code"], "client-gone");
    }
  }
  EXPECT_LE(ranBefore, 2);
  EXPECT_EQ(ranBefore + dropped, 8);
  EXPECT_EQ(service.queueDepth(), 0u);
  const std::string metrics = service.metrics().render(0, 0, 1);
  // Every dropped check was counted once, queued or running; at most one of
  // a's can have been running when its client went (the worker took it as b's
  // finished), the rest were still queued.
  const double queued = metricValue(metrics, "ptxforge_cancelled_total{when=\"queued\"}");
  const double running = metricValue(metrics, "ptxforge_cancelled_total{when=\"running\"}");
  EXPECT_EQ(queued + std::max(running, 0.0), dropped) << metrics;
  EXPECT_GE(queued, dropped - 1) << metrics;
}

TEST(ServeHttpTest, EachClientHasItsShareOfTheQueueAndTheQueueItsBound) {
  ServiceOptions options;
  options.emulatorWorkers = 1;
  options.queueCapacity = 3;
  options.clientQueueCapacity = 2;
  Served served(options);
  // The only worker spins on a hanging kernel (client "x") while the queue fills.
  nlohmann::json hang = fastCheck(hangingPtx());
  hang["timeout_ms"] = 1500;
  hang["client"] = "x";
  auto blocker = std::async(std::launch::async, [&] {
    httplib::Client c = served.client();
    return parsed(post(c, "/v1/check", hang));
  });
  ASSERT_TRUE(eventually([&] { return served.service().running() == 1; }));
  auto queued = [&](const std::string &client) {
    return std::async(std::launch::async, [&served, client] {
      httplib::Client c = served.client();
      nlohmann::json body = fastCheck(referencePtx());
      body["client"] = client;
      httplib::Result result = post(c, "/v1/check", body);
      return result ? result->status : -1;
    });
  };
  auto a1 = queued("a");
  auto a2 = queued("a");
  ASSERT_TRUE(eventually([&] { return served.service().queueDepth("client:a") == 2; }));
  httplib::Client client = served.client();
  nlohmann::json body = fastCheck(referencePtx());
  body["client"] = "a";
  httplib::Result third = post(client, "/v1/check", body);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 429) << third->body;
  EXPECT_EQ(parsed(third)["error"]["code"], "client-queue-full");
  EXPECT_GE(std::stoi(third->get_header_value("Retry-After")), 1);
  // Another client still gets in, up to the queue's own bound.
  auto b1 = queued("b");
  ASSERT_TRUE(eventually([&] { return served.service().queueDepth() == 3; }));
  EXPECT_EQ(served.service().queueClients(), 2u);
  body["client"] = "c";
  httplib::Result full = post(client, "/v1/check", body);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 429) << full->body;
  EXPECT_EQ(parsed(full)["error"]["code"], "queue-full");
  // A declared name must be a name.
  body["client"] = std::string("a\nb");
  httplib::Result badName = post(client, "/v1/check", body);
  ASSERT_TRUE(badName);
  EXPECT_EQ(badName->status, 400);
  nlohmann::json health = parsed(client.Get("/healthz"));
  EXPECT_EQ(health["client_queue_capacity"], 2);
  EXPECT_EQ(health["queue_clients"], 2);

  blocker.get(); // its verdict is AFullQueueAnswers429AndAStaleJobAnswers504's business
  EXPECT_EQ(a1.get(), 200);
  EXPECT_EQ(a2.get(), 200);
  EXPECT_EQ(b1.get(), 200);
}

TEST(ServeHttpTest, AClientThatHangsUpIsDroppedWhileQueuedAndCountedWhileRunning) {
  ServiceOptions options;
  options.emulatorWorkers = 1;
  Served served(options);
  // A check that hangs until its 1.5 s launch deadline; its client gives up
  // after 300 ms, while the check runs.
  auto impatient = [&](const nlohmann::json &body) {
    return std::async(std::launch::async, [&served, body] {
      httplib::Client c("127.0.0.1", served.port());
      c.set_read_timeout(0, 300'000);
      return static_cast<bool>(post(c, "/v1/check", body));
    });
  };
  nlohmann::json hang = fastCheck(hangingPtx());
  hang["timeout_ms"] = 1500;
  auto running = impatient(hang);
  ASSERT_TRUE(eventually([&] { return served.service().running() == 1; }));
  // A second impatient client waits behind it and hangs up while queued.
  auto queued = impatient(fastCheck(referencePtx()));
  EXPECT_FALSE(running.get());
  EXPECT_FALSE(queued.get());
  // Its check leaves the queue without running, while the hang still runs.
  EXPECT_TRUE(eventually([&] { return served.service().queueDepth() == 0; }));
  EXPECT_EQ(served.service().running(), 1u);
  httplib::Client client = served.client();
  ASSERT_TRUE(eventually([&] { return served.service().running() == 0; }));
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metricValue(metrics->body, "ptxforge_cancelled_total{when=\"queued\"}"), 1.0) << metrics->body;
  EXPECT_EQ(metricValue(metrics->body, "ptxforge_cancelled_total{when=\"running\"}"), 1.0) << metrics->body;
  EXPECT_EQ(metricValue(metrics->body, "ptxforge_requests_total{route=\"check\",status=\"499\"}"), 2.0);
  // The queued check never ran: no verdict of it was counted.
  EXPECT_EQ(metrics->body.find("ptxforge_verdicts_total{verdict=\"correct\"}"), std::string::npos);
  EXPECT_EQ(parsed(post(client, "/v1/check", fastCheck(referencePtx())))["verdict"], "correct");
}

TEST(ServeHttpTest, AnApiKeyGuardsEveryRouteButHealth) {
  HttpOptions http;
  http.apiKey = "s3cret-key";
  ServiceOptions options;
  options.emulatorWorkers = 1;
  Served served(options, http);
  httplib::Client client = served.client();
  httplib::Result none = client.Get("/v1/tasks");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->body.find("s3cret"), std::string::npos);
  httplib::Result wrong = client.Get("/v1/tasks", {{"Authorization", "Bearer s3cret-kez"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  httplib::Result right = client.Get("/v1/tasks", {{"Authorization", "Bearer s3cret-key"}});
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  httplib::Result health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(ServeHttpTest, AReachableAddressNeedsAnApiKey) {
  EXPECT_TRUE(isLoopback("127.0.0.1"));
  EXPECT_TRUE(isLoopback("127.8.0.1"));
  EXPECT_TRUE(isLoopback("localhost"));
  EXPECT_FALSE(isLoopback("0.0.0.0"));
  EXPECT_FALSE(isLoopback("10.1.2.3"));
  ServiceOptions options;
  options.executor = "emu";
  options.emulatorWorkers = 1;
  Result<std::unique_ptr<Service>> service = Service::create(options);
  ASSERT_TRUE(service);
  HttpOptions http;
  http.host = "0.0.0.0";
  http.port = 0;
  HttpServer server(**service, http);
  Result<int> port = server.bind();
  ASSERT_FALSE(port);
  EXPECT_EQ(port.error().code, "api-key-required");
}

TEST(RemoteGateTest, AServiceChecksForThisProcessAndItsAnswerDecodesToTheSameResult) {
  ServiceOptions options;
  options.emulatorWorkers = 1;
  HttpOptions http;
  Served served(options, http);
  Result<tasks::Suite> suite = loadSuite({});
  ASSERT_TRUE(suite);
  Result<const tasks::TaskSpec *> task = findTask(*suite, "vector_add");
  ASSERT_TRUE(task);
  const std::string url = "http://127.0.0.1:" + std::to_string(served.port());
  RemoteGate gate({.url = url});
  Result<nlohmann::json> health = gate.health();
  ASSERT_TRUE(health) << health.error().message;
  EXPECT_EQ((*health)["status"], "ok");

  verify::CheckOptions check;
  check.seed = 77;
  check.trials = 1;
  check.drawnShapes = 0;
  check.benchmark = false;
  check.shapeIndices = {3};
  Result<verify::CheckResult> correct = gate.check(**task, referencePtx(), check);
  ASSERT_TRUE(correct) << correct.error().message;
  EXPECT_EQ(correct->verdict, verify::Verdict::Correct) << correct->summary;
  EXPECT_EQ(correct->seed, 77u);
  EXPECT_EQ(correct->shapeIndices, std::vector<size_t>{3});
  Result<verify::CheckResult> wrong = gate.check(**task, wrongPtx(), check);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->verdict, verify::Verdict::Wrong);

  // A shape the task lacks is refused, not retried.
  check.shapeIndices = {99};
  Result<verify::CheckResult> refused = gate.check(**task, referencePtx(), check);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("answered 400"), std::string::npos) << refused.error().message;

  // Nobody listening: retried, then an error that says so.
  RemoteGate nowhere({.url = "http://127.0.0.1:1", .maxRetries = 1, .maxRetryWait = std::chrono::milliseconds(50)});
  Result<verify::CheckResult> lost = nowhere.check(**task, referencePtx(), check);
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().code, "gate-unreachable");
  EXPECT_FALSE(nowhere.health());
}

TEST(ServiceTest, WorkersPerGpuIsBounded) {
  ServiceOptions options;
  options.executor = "emu";
  options.emulatorWorkers = 1;
  for (int bad : {0, 65}) {
    options.workersPerGpu = bad;
    Result<std::unique_ptr<Service>> created = Service::create(options);
    ASSERT_FALSE(created) << bad;
    EXPECT_EQ(created.error().code, "bad-option");
    EXPECT_NE(created.error().message.find("workers per GPU"), std::string::npos) << created.error().message;
  }
}

TEST(ServiceTest, ShutdownAnswersQueuedJobsAndRefusesNewOnes) {
  ServiceOptions options;
  options.executor = "emu";
  options.emulatorWorkers = 1;
  options.queueCapacity = 4;
  Result<std::unique_ptr<Service>> created = Service::create(options);
  ASSERT_TRUE(created);
  Service &service = **created;
  nlohmann::json hang = fastCheck(hangingPtx());
  hang["timeout_ms"] = 1500;
  Result<std::future<Reply>> running = service.submit(Service::Op::Check, hang);
  ASSERT_TRUE(running);
  for (int i = 0; i < 200 && service.running() == 0; ++i) std::this_thread::sleep_for(10ms);
  Result<std::future<Reply>> queued = service.submit(Service::Op::Check, fastCheck(referencePtx()));
  ASSERT_TRUE(queued);
  service.shutdown();
  EXPECT_EQ(queued->get().status, 503);
  Reply finished = running->get();
  EXPECT_EQ(finished.status, 200) << finished.body.dump(); // the running check finished
  EXPECT_FALSE(service.submit(Service::Op::Check, fastCheck(referencePtx())));
}

} // namespace
} // namespace ptxforge::serve
