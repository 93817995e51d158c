// The exec backend: run the program (support/Process.h feeds stdin, drains
// stdout/stderr and enforces the time limit), and interpret the answer.
#include "llm/ExecBackend.h"

#include "llm/RequestHash.h"
#include "support/Process.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstring>
#include <sys/wait.h>

namespace ptxforge::llm {

namespace {


constexpr size_t kMaxStdoutBytes = 64u << 20;
constexpr size_t kStderrTailBytes = 2000;

std::string stderrNote(const std::string &tail) {
  std::string_view text = tail;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.empty())
    return "; stderr was empty";
  return "; stderr ends with:\n" + std::string(text);
}

} // namespace

Result<std::vector<std::string>> splitCommandLine(std::string_view commandLine) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  for (size_t i = 0; i < commandLine.size(); ++i) {
    char c = commandLine[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (inWord)
        words.push_back(std::move(word));
      word.clear();
      inWord = false;
      continue;
    }
    inWord = true;
    if (c == '\\' && i + 1 < commandLine.size()) {
      word.push_back(commandLine[++i]);
    } else if (c == '\'' || c == '"') {
      size_t close = i + 1;
      for (; close < commandLine.size() && commandLine[close] != c; ++close) {
        if (c == '"' && commandLine[close] == '\\' && close + 1 < commandLine.size() &&
            (commandLine[close + 1] == '"' || commandLine[close + 1] == '\\'))
          ++close;
        word.push_back(commandLine[close]);
      }
      if (close >= commandLine.size())
        return makeError(ErrorKind::InvalidInput,
                         "exec: unterminated " + std::string(1, c) + " quote in `" + std::string(commandLine) + "`");
      i = close;
    } else {
      word.push_back(c);
    }
  }
  if (inWord)
    words.push_back(std::move(word));
  return words;
}

nlohmann::json execRequestJson(const Request &request, const std::string &hash) {
  nlohmann::json json = canonicalRequestJson(request);
  json["request_hash"] = hash;
  json["stream"] = request.stream;
  return json;
}

Result<Completion> parseExecOutput(std::string_view standardOutput) {
  std::string_view trimmed = standardOutput;
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front())))
    trimmed.remove_prefix(1);
  if (!trimmed.starts_with('{')) {
    Completion completion;
    completion.text = std::string(standardOutput);
    return completion;
  }
  nlohmann::json json = nlohmann::json::parse(trimmed, nullptr, false);
  if (!json.is_object())
    return makeError(ErrorKind::Io, "stdout starts with '{' but is not a JSON object; print plain text, or one "
                                    "object {\"text\": ...}");
  if (auto error = json.find("error"); error != json.end() && !error->is_null()) {
    std::string message = error->is_string() ? error->get<std::string>() : dumpJson(*error);
    return makeError(ErrorKind::Io, "the model reported an error: " + message);
  }
  Result<Completion> completion = completionFromJson(json);
  if (!completion)
    return makeError(ErrorKind::Io, "stdout is a JSON object but not a valid answer: " + completion.error().message);
  return completion;
}

Result<std::unique_ptr<Backend>> ExecBackend::create(const std::string &commandLine, const BackendOptions &options) {
  Result<std::vector<std::string>> argv = splitCommandLine(commandLine);
  if (!argv)
    return argv.error();
  if (argv->empty())
    return makeError(ErrorKind::InvalidInput, "exec: no command given (exec:COMMAND [ARG...])");
  const std::string &program = argv->front();
  if (program.find('/') != std::string::npos) {
    if (!isExecutableFile(program))
      return makeError(ErrorKind::InvalidInput, "exec: `" + program + "` is not an executable file");
  } else if (!findOnPath(program)) {
    return makeError(ErrorKind::InvalidInput, "exec: `" + program + "` was not found on PATH");
  }
  return std::unique_ptr<Backend>(new ExecBackend(commandLine, std::move(*argv), options.requestTimeout));
}

Result<Completion> ExecBackend::completeValid(const Request &request, const std::string &hash,
                                              const CallContext &context) {
  std::string input = dumpJson(execRequestJson(request, hash)) + "\n";
  ProcessOptions processOptions;
  processOptions.standardInput = std::move(input);
  processOptions.timeout = timeout_;
  processOptions.stop = context.stop;
  processOptions.maxStdoutBytes = kMaxStdoutBytes;
  processOptions.stderrTailBytes = kStderrTailBytes;
  processOptions.searchPath = true;
  Result<ProcessResult> ran = runProcess(argv_, processOptions);
  auto failure = [&](std::string message) { return makeError(ErrorKind::Io, "exec: `" + commandLine_ + "` " + message); };
  if (!ran)
    return failure(ran.error().message);
  const ProcessResult &child = *ran;
  if (child.cancelled)
    return failure("was cancelled and killed");
  if (child.timedOut)
    return failure("timed out after " + std::to_string(timeout_.count()) + " ms and was killed" +
                   stderrNote(child.standardError));
  if (child.outputTooLarge)
    return failure("printed more than " + std::to_string(kMaxStdoutBytes >> 20) + " MiB and was killed");
  if (WIFSIGNALED(child.waitStatus)) {
    int signal = WTERMSIG(child.waitStatus);
    return failure("was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")" +
                   stderrNote(child.standardError));
  }
  if (!WIFEXITED(child.waitStatus) || WEXITSTATUS(child.waitStatus) != 0)
    return failure("exited with status " + std::to_string(WEXITSTATUS(child.waitStatus)) +
                   stderrNote(child.standardError));

  Result<Completion> completion = parseExecOutput(child.standardOutput);
  if (!completion)
    return failure(completion.error().message);
  completion->backend = "exec";
  completion->latencyMs = child.elapsedMs;
  completion->firstTokenMs.reset();
  completion->attempts = 1;
  if (completion->model.empty())
    completion->model = request.model.empty() ? commandLine_ : request.model;
  if (context.onText && !completion->text.empty())
    context.onText(completion->text);
  return completion;
}

} // namespace ptxforge::llm
