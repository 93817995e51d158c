// The run store on SQLite: one connection behind a mutex, every value bound as a
// parameter, every write its own transaction. Store.h holds the schema and the
// contract; this file is the only one that speaks SQL.
#include "store/Store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <array>
#include <cstddef>
#include <ctime>
#include <limits>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ptxforge::store {

namespace {

constexpr std::array<std::string_view, 6> kRunStatusNames = {"running", "done",   "pending",
                                                              "interrupted", "budget", "failed"};
constexpr std::array<std::string_view, 3> kCompletionStatusNames = {"complete", "pending", "error"};
constexpr std::array<std::string_view, 6> kEvalStatusNames = {"running",     "complete",    "incomplete",
                                                               "interrupted", "infra-error", "pending"};

template <typename Enum, size_t N>
std::optional<Enum> parseName(const std::array<std::string_view, N> &names, std::string_view name) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

constexpr int kSchemaVersion = 2;
constexpr int kBusyTimeoutMs = 10000;

// Run in one transaction on every open of a database older than kSchemaVersion
// (a fresh file is version 0). Every value column that may hold model output is
// TEXT bound with sqlite3_bind_text, which stores bytes verbatim (SQLite does not
// validate UTF-8), so invalid UTF-8 round-trips unchanged.
constexpr const char *kSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id          INTEGER PRIMARY KEY,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  task        TEXT NOT NULL,
  model       TEXT NOT NULL,
  strategies  TEXT NOT NULL,
  status      TEXT NOT NULL,
  parameters  TEXT NOT NULL,
  provenance  TEXT NOT NULL,
  summary     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS prompts (
  id                  INTEGER PRIMARY KEY,
  run_id              INTEGER NOT NULL REFERENCES runs(id),
  round               INTEGER NOT NULL,
  slot                INTEGER NOT NULL,
  kind                TEXT NOT NULL,
  strategies          TEXT NOT NULL,
  tendency            TEXT NOT NULL,
  temperature         REAL,
  parent_candidate_id INTEGER REFERENCES candidates(id),
  request_hash        TEXT NOT NULL,
  request             TEXT NOT NULL,
  UNIQUE(run_id, round, slot, kind)
);
CREATE TABLE IF NOT EXISTS completions (
  id          INTEGER PRIMARY KEY,
  prompt_id   INTEGER NOT NULL UNIQUE REFERENCES prompts(id),
  status      TEXT NOT NULL,
  text        TEXT NOT NULL,
  error       TEXT NOT NULL,
  meta        TEXT NOT NULL,
  created_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS candidates (
  id            INTEGER PRIMARY KEY,
  run_id        INTEGER NOT NULL REFERENCES runs(id),
  prompt_id     INTEGER NOT NULL UNIQUE REFERENCES prompts(id),
  round         INTEGER NOT NULL,
  slot          INTEGER NOT NULL,
  ptx           TEXT NOT NULL,
  ptx_hash      TEXT NOT NULL,
  sass_hash     TEXT NOT NULL,
  duplicate_of  INTEGER REFERENCES candidates(id),
  extract_error TEXT NOT NULL,
  created_at    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
  candidate_id INTEGER PRIMARY KEY REFERENCES candidates(id),
  verdict      TEXT NOT NULL,
  stage        TEXT NOT NULL,
  summary      TEXT NOT NULL,
  speedup      REAL,
  registers    INTEGER,
  result       TEXT NOT NULL,
  created_at   TEXT NOT NULL
);
-- findDuplicate looks a hash up within a run. Prompts need no index of their
-- own: UNIQUE(run_id, round, slot, kind) already serves "WHERE run_id = ?".
CREATE INDEX IF NOT EXISTS candidates_run_ptx_hash ON candidates(run_id, ptx_hash);
CREATE INDEX IF NOT EXISTS candidates_run_sass_hash ON candidates(run_id, sass_hash);
-- Version 2: evals, each a solve run per task of a suite. A version-1 database
-- gets these tables when it is opened; nothing else changes.
CREATE TABLE IF NOT EXISTS evals (
  id            INTEGER PRIMARY KEY,
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL,
  model         TEXT NOT NULL,
  suite         TEXT NOT NULL,
  suite_version TEXT NOT NULL,
  status        TEXT NOT NULL,
  parameters    TEXT NOT NULL,
  provenance    TEXT NOT NULL,
  metrics       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS eval_runs (
  eval_id  INTEGER NOT NULL REFERENCES evals(id),
  position INTEGER NOT NULL,
  task     TEXT NOT NULL,
  run_id   INTEGER NOT NULL REFERENCES runs(id),
  PRIMARY KEY(eval_id, task)
);
PRAGMA user_version = 2; -- kSchemaVersion
)sql";

// Added to a version-2 database when it is opened for writing (Store.h says
// why without a version change).
constexpr const char *kStreamSegmentsSchema = R"sql(
CREATE TABLE IF NOT EXISTS stream_segments (
  prompt_id    INTEGER NOT NULL REFERENCES prompts(id),
  seq          INTEGER NOT NULL,
  mode         TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  text         TEXT NOT NULL,
  cut_at       INTEGER,
  diagnostic   TEXT NOT NULL,
  meta         TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  PRIMARY KEY(prompt_id, seq)
);
)sql";

// Column lists, in the order the readers below expect them.
constexpr std::string_view kEvalColumns =
    "id, created_at, updated_at, model, suite, suite_version, status, parameters, provenance, metrics";
constexpr std::string_view kRunColumns =
    "id, created_at, updated_at, task, model, strategies, status, parameters, provenance, summary";
constexpr std::string_view kPromptColumns =
    "id, run_id, round, slot, kind, strategies, tendency, temperature, parent_candidate_id, request_hash, request";
constexpr std::string_view kCompletionColumns = "id, prompt_id, status, text, error, meta, created_at";
constexpr std::string_view kCandidateColumns = "id, run_id, prompt_id, round, slot, ptx, ptx_hash, sass_hash, "
                                               "duplicate_of, extract_error, created_at";
constexpr std::string_view kResultColumns =
    "candidate_id, verdict, stage, summary, speedup, registers, result, created_at";
constexpr std::string_view kStreamSegmentColumns =
    "prompt_id, seq, mode, request_hash, text, cut_at, diagnostic, meta, created_at";

constexpr int columnCount(std::string_view columns) {
  return static_cast<int>(std::count(columns.begin(), columns.end(), ',')) + 1;
}

/// "a, b" qualified with a table alias: "p.a, p.b" (for the joins of load()).
std::string qualify(std::string_view alias, std::string_view columns) {
  std::string out;
  size_t start = 0;
  while (start <= columns.size()) {
    size_t comma = columns.find(',', start);
    if (comma == std::string_view::npos)
      comma = columns.size();
    std::string_view name = columns.substr(start, comma - start);
    while (!name.empty() && name.front() == ' ')
      name.remove_prefix(1);
    if (!out.empty())
      out += ", ";
    out.append(alias).append(".").append(name);
    start = comma + 1;
  }
  return out;
}

/// JSON as stored: compact, and invalid UTF-8 in a model's output replaced
/// rather than thrown on.
std::string dumpJson(const nlohmann::json &value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct ConnectionCloser {
  // sqlite3_close_v2 cannot fail on a connection whose statements are all
  // finalized, and Statement finalizes each one before the Store goes away.
  void operator()(sqlite3 *db) const { sqlite3_close_v2(db); }
};
using Connection = std::unique_ptr<sqlite3, ConnectionCloser>;

/// A prepared statement: binds values by type and reads columns back.
class Statement {
public:
  explicit Statement(sqlite3_stmt *statement) : statement_(statement) {}
  sqlite3_stmt *get() const { return statement_.get(); }

  int bind(int index, int64_t value) { return sqlite3_bind_int64(get(), index, value); }
  int bind(int index, int value) { return sqlite3_bind_int(get(), index, value); }
  int bind(int index, double value) { return sqlite3_bind_double(get(), index, value); }
  int bind(int index, const std::string &value) {
    return sqlite3_bind_text64(get(), index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  template <typename T> int bind(int index, const std::optional<T> &value) {
    return value ? bind(index, *value) : sqlite3_bind_null(get(), index);
  }

  bool isNull(int column) const { return sqlite3_column_type(get(), column) == SQLITE_NULL; }
  int64_t int64(int column) const { return static_cast<int64_t>(sqlite3_column_int64(get(), column)); }
  int integer(int column) const { return sqlite3_column_int(get(), column); }
  /// The bytes of a TEXT column as stored (NULL reads as "").
  std::string text(int column) const {
    const unsigned char *data = sqlite3_column_text(get(), column);
    // sqlite3_column_bytes after sqlite3_column_text: the length of that text.
    int size = sqlite3_column_bytes(get(), column);
    return data ? std::string(reinterpret_cast<const char *>(data), static_cast<size_t>(size)) : std::string();
  }
  double real(int column) const { return sqlite3_column_double(get(), column); }

private:
  struct Finalizer {
    // sqlite3_finalize repeats the statement's last error, which step() has
    // already reported; it always frees the statement.
    void operator()(sqlite3_stmt *statement) const { sqlite3_finalize(statement); }
  };
  std::unique_ptr<sqlite3_stmt, Finalizer> statement_;
};

template <typename T> struct IsOptional : std::false_type {};
template <typename T> struct IsOptional<std::optional<T>> : std::true_type {};

/// Reads the columns of one row in order, from `first` on, each into a field
/// by the field's type: int64_t, int, double, std::string (NULL reads as 0 or
/// ""), std::optional of those (NULL reads as none), or JSON through json().
/// A JSON column that does not parse is the row's error, kept until result().
/// The one place where columns become record fields, so that the readers list
/// fields in column order and never count column indices.
class RowReader {
public:
  RowReader(const Statement &row, int first, std::string_view storePath)
      : row_(row), next_(first), storePath_(storePath) {}

  template <typename T> RowReader &operator()(T &out) {
    read(next_++, out);
    return *this;
  }

  /// A JSON column; text that is not JSON is an error naming `where` ("runs.summary") and the row's `id`.
  RowReader &json(nlohmann::json &out, std::string_view where, int64_t id) {
    out = nlohmann::json::parse(row_.text(next_++), nullptr, /*allow_exceptions=*/false);
    if (out.is_discarded() && !error_)
      error_ = makeError(ErrorKind::Io, fmt::format("store {}: corrupt JSON in {} of row {}", storePath_, where, id));
    return *this;
  }

  /// `record`, or the first error met while reading it.
  template <typename Record> Result<Record> result(Record record) const {
    if (error_)
      return *error_;
    return record;
  }

private:
  template <typename T> void read(int column, T &out) const {
    if constexpr (IsOptional<T>::value) {
      if (row_.isNull(column)) {
        out.reset();
      } else {
        typename T::value_type value{};
        read(column, value);
        out = std::move(value);
      }
    } else if constexpr (std::is_same_v<T, int64_t>) {
      out = row_.int64(column);
    } else if constexpr (std::is_same_v<T, int>) {
      out = row_.integer(column);
    } else if constexpr (std::is_same_v<T, double>) {
      out = row_.real(column);
    } else {
      static_assert(std::is_same_v<T, std::string>, "RowReader reads int64_t, int, double, std::string or optionals");
      out = row_.text(column);
    }
  }

  const Statement &row_;
  int next_;
  std::string_view storePath_;
  std::optional<Error> error_;
};

} // namespace

struct Store::Impl {
  std::string path;
  Connection db;
  std::mutex mutex; ///< guards db and every statement on it

  Error sqliteError(std::string_view what) const {
    return makeError(ErrorKind::Io, fmt::format("store {}: {}: {}", path, what, sqlite3_errmsg(db.get())));
  }
  Error ioError(std::string_view what) const {
    return makeError(ErrorKind::Io, fmt::format("store {}: {}", path, what));
  }
  Error noRun(int64_t runId) const {
    return makeError(ErrorKind::InvalidInput, fmt::format("no run {} in {}", runId, path));
  }

  /// Prepares `sql` and binds `values` to ?1, ?2, ... in order.
  template <typename... Values>
  Result<Statement> prepare(std::string_view what, std::string_view sql, const Values &...values) {
    sqlite3_stmt *raw = nullptr;
    int rc = sqlite3_prepare_v2(db.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
    Statement statement(raw);
    if (rc != SQLITE_OK)
      return sqliteError(what);
    int index = 0;
    bool bound = true;
    ((bound = bound && statement.bind(++index, values) == SQLITE_OK), ...);
    if (!bound)
      return sqliteError(what);
    return statement;
  }

  /// One step: true with a row to read, false when the statement is done.
  Result<bool> step(Statement &statement, std::string_view what) {
    int rc = sqlite3_step(statement.get());
    if (rc == SQLITE_ROW)
      return true;
    if (rc == SQLITE_DONE)
      return false;
    return sqliteError(what);
  }

  /// Runs a statement that returns no rows (or whose rows do not matter).
  template <typename... Values>
  Result<void> execute(std::string_view what, std::string_view sql, const Values &...values) {
    auto statement = prepare(what, sql, values...);
    if (!statement)
      return statement.error();
    auto row = step(*statement, what);
    if (!row)
      return row.error();
    return {};
  }

  /// The integer in the first column of the first row; an error when there is no row.
  template <typename... Values>
  Result<int64_t> queryId(std::string_view what, std::string_view sql, const Values &...values) {
    auto statement = prepare(what, sql, values...);
    if (!statement)
      return statement.error();
    auto row = step(*statement, what);
    if (!row)
      return row.error();
    if (!*row)
      return ioError(fmt::format("{}: the row just written is missing", what));
    return statement->int64(0);
  }

  /// The first row read by `read`, if any.
  template <typename Record, typename... Values>
  Result<std::optional<Record>> queryOne(std::string_view what,
                                         Result<Record> (Impl::*read)(const Statement &, int) const,
                                         std::string_view sql, const Values &...values) {
    auto statement = prepare(what, sql, values...);
    if (!statement)
      return statement.error();
    auto row = step(*statement, what);
    if (!row)
      return row.error();
    if (!*row)
      return std::optional<Record>();
    auto record = (this->*read)(*statement, 0);
    if (!record)
      return record.error();
    return std::optional<Record>(std::move(*record));
  }

  /// Steps through every row of `statement`, handing each to `onRow` (which
  /// returns Result<void>); stops at the first error, SQLite's or onRow's.
  template <typename OnRow> Result<void> forEachRow(Statement &statement, std::string_view what, OnRow &&onRow) {
    for (;;) {
      auto row = step(statement, what);
      if (!row)
        return row.error();
      if (!*row)
        return {};
      if (Result<void> taken = onRow(statement); !taken)
        return taken.error();
    }
  }

  /// Every row, each read by `read`.
  template <typename Record, typename... Values>
  Result<std::vector<Record>> queryAll(std::string_view what,
                                       Result<Record> (Impl::*read)(const Statement &, int) const,
                                       std::string_view sql, const Values &...values) {
    auto statement = prepare(what, sql, values...);
    if (!statement)
      return statement.error();
    std::vector<Record> records;
    Result<void> all = forEachRow(*statement, what, [&](const Statement &row) -> Result<void> {
      auto record = (this->*read)(row, 0);
      if (!record)
        return record.error();
      records.push_back(std::move(*record));
      return {};
    });
    if (!all)
      return all.error();
    return records;
  }

  /// A transaction that rolls back unless committed.
  class Transaction {
  public:
    explicit Transaction(Impl &impl) : impl_(impl) {}
    ~Transaction() {
      // Only reached with an error already on its way to the caller; a failed
      // rollback leaves nothing more to report (SQLite rolls back on close).
      if (open_)
        sqlite3_exec(impl_.db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    Transaction(const Transaction &) = delete;
    Transaction &operator=(const Transaction &) = delete;

    /// IMMEDIATE for writes: taking the write lock up front lets the busy
    /// timeout apply, where upgrading a read transaction would fail at once.
    Result<void> begin(std::string_view what, bool write) {
      if (sqlite3_exec(impl_.db.get(), write ? "BEGIN IMMEDIATE" : "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK)
        return impl_.sqliteError(what);
      open_ = true;
      return {};
    }
    Result<void> commit(std::string_view what) {
      if (sqlite3_exec(impl_.db.get(), "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
        return impl_.sqliteError(what);
      open_ = false;
      return {};
    }

  private:
    Impl &impl_;
    bool open_ = false;
  };

  RowReader reader(const Statement &row, int first) const { return RowReader(row, first, path); }

  Result<RunRecord> readRun(const Statement &row, int first) const {
    RunRecord run;
    RowReader in = reader(row, first);
    in(run.id)(run.createdAt)(run.updatedAt)(run.task)(run.model)(run.strategies)(run.status);
    in.json(run.parameters, "runs.parameters", run.id)
        .json(run.provenance, "runs.provenance", run.id)
        .json(run.summary, "runs.summary", run.id);
    return in.result(std::move(run));
  }

  Result<EvalRecord> readEval(const Statement &row, int first) const {
    EvalRecord record;
    RowReader in = reader(row, first);
    in(record.id)(record.createdAt)(record.updatedAt)(record.model)(record.suite)(record.suiteVersion)(record.status);
    in.json(record.parameters, "evals.parameters", record.id)
        .json(record.provenance, "evals.provenance", record.id)
        .json(record.metrics, "evals.metrics", record.id);
    return in.result(std::move(record));
  }

  Result<PromptRecord> readPrompt(const Statement &row, int first) const {
    PromptRecord prompt;
    RowReader in = reader(row, first);
    in(prompt.id)(prompt.runId)(prompt.round)(prompt.slot)(prompt.kind)(prompt.strategies)(prompt.tendency);
    in(prompt.temperature)(prompt.parentCandidateId)(prompt.requestHash);
    in.json(prompt.request, "prompts.request", prompt.id);
    return in.result(std::move(prompt));
  }

  Result<CompletionRecord> readCompletion(const Statement &row, int first) const {
    CompletionRecord completion;
    RowReader in = reader(row, first);
    in(completion.id)(completion.promptId)(completion.status)(completion.text)(completion.error);
    in.json(completion.meta, "completions.meta", completion.id)(completion.createdAt);
    return in.result(std::move(completion));
  }

  Result<CandidateRecord> readCandidate(const Statement &row, int first) const {
    CandidateRecord candidate;
    RowReader in = reader(row, first);
    in(candidate.id)(candidate.runId)(candidate.promptId)(candidate.round)(candidate.slot)(candidate.ptx);
    in(candidate.ptxHash)(candidate.sassHash)(candidate.duplicateOf)(candidate.extractError)(candidate.createdAt);
    return in.result(std::move(candidate));
  }

  Result<ResultRecord> readResult(const Statement &row, int first) const {
    ResultRecord result;
    RowReader in = reader(row, first);
    in(result.candidateId)(result.verdict)(result.stage)(result.summary)(result.speedup)(result.registers);
    in.json(result.result, "results.result", result.candidateId)(result.createdAt);
    return in.result(std::move(result));
  }

  Result<StreamSegmentRecord> readStreamSegment(const Statement &row, int first) const {
    StreamSegmentRecord segment;
    RowReader in = reader(row, first);
    in(segment.promptId)(segment.seq)(segment.mode)(segment.requestHash)(segment.text)(segment.cutAt);
    in.json(segment.diagnostic, "stream_segments.diagnostic", segment.promptId)
        .json(segment.meta, "stream_segments.meta", segment.promptId)(segment.createdAt);
    return in.result(std::move(segment));
  }

  Result<EvalRun> readEvalRun(const Statement &row, int first) const {
    EvalRun run;
    RowReader in = reader(row, first);
    in(run.position)(run.task)(run.runId);
    return in.result(std::move(run));
  }

  /// Whether the database has the stream_segments table (a store written
  /// before it existed, opened for reading, has not).
  Result<bool> hasStreamSegments() {
    auto count = queryId("looking for stream_segments",
                         "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'stream_segments'");
    if (!count)
      return count.error();
    return *count > 0;
  }

  Result<void> ensureStreamSegments() {
    auto present = hasStreamSegments();
    if (!present)
      return present.error();
    if (!*present && sqlite3_exec(db.get(), kStreamSegmentsSchema, nullptr, nullptr, nullptr) != SQLITE_OK)
      return sqliteError("adding the stream_segments table");
    return {};
  }

  Result<int> userVersion() {
    // The first read of the file: SQLite checks the header here, so a file
    // that is not a database fails on this statement, before anything is written.
    auto version = queryId("reading the schema version (is it a SQLite database?)", "PRAGMA user_version");
    if (!version)
      return version.error();
    if (*version > kSchemaVersion)
      return ioError(fmt::format("schema version {} is newer than this build of ptxforge knows ({})", *version,
                                 kSchemaVersion));
    return static_cast<int>(*version);
  }

  /// `body` (a write returning a Result) inside one write transaction, committed when it succeeds.
  template <typename Body> auto inTransaction(std::string_view what, Body &&body) -> decltype(body()) {
    Transaction transaction(*this);
    if (auto begun = transaction.begin(what, true); !begun)
      return begun.error();
    auto result = body();
    if (!result)
      return result.error();
    if (auto committed = transaction.commit(what); !committed)
      return committed.error();
    return result;
  }

  /// A connection to `path` opened with `flags`, with the busy timeout set.
  static Result<std::unique_ptr<Impl>> connect(const std::string &path, int flags) {
    auto impl = std::make_unique<Impl>();
    impl->path = path;
    sqlite3 *raw = nullptr;
    // NOMUTEX: Impl::mutex already serializes every use of the connection.
    const int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    impl->db.reset(raw);
    if (rc != SQLITE_OK)
      return raw ? impl->sqliteError("cannot open the database") : impl->ioError("cannot open the database: out of memory");
    if (sqlite3_busy_timeout(raw, kBusyTimeoutMs) != SQLITE_OK)
      return impl->sqliteError("setting the busy timeout");
    return impl;
  }

  /// Creates the schema of a fresh (or older) database, or refuses a newer one.
  Result<void> prepareSchema() {
    auto version = userVersion();
    if (!version)
      return version.error();
    // Checked before switching to WAL so that a database this build refuses is left as it was.
    {
      auto mode = prepare("setting WAL mode", "PRAGMA journal_mode = WAL");
      if (!mode)
        return mode.error();
      // One row with the mode now in effect. A file system without shared
      // memory keeps the rollback journal; the store still works, with less
      // concurrency, so that is not an error.
      if (auto row = step(*mode, "setting WAL mode"); !row)
        return row.error();
    }
    if (auto pragma = execute("enabling foreign keys", "PRAGMA foreign_keys = ON"); !pragma)
      return pragma.error();
    if (*version == kSchemaVersion)
      return ensureStreamSegments();

    Transaction transaction(*this);
    if (auto begun = transaction.begin("creating the schema", true); !begun)
      return begun.error();
    // Another process may have created the schema between the check and the lock.
    if (auto locked = userVersion(); !locked)
      return locked.error();
    if (sqlite3_exec(db.get(), kSchema, nullptr, nullptr, nullptr) != SQLITE_OK)
      return sqliteError("creating the schema");
    if (sqlite3_exec(db.get(), kStreamSegmentsSchema, nullptr, nullptr, nullptr) != SQLITE_OK)
      return sqliteError("adding the stream_segments table");
    return transaction.commit("creating the schema");
  }

  Result<RunRecord> runById(int64_t runId) {
    static const std::string sql = fmt::format("SELECT {} FROM runs WHERE id = ?", kRunColumns);
    auto run = queryOne("reading a run", &Impl::readRun, sql, runId);
    if (!run)
      return run.error();
    if (!*run)
      return noRun(runId);
    return std::move(**run);
  }
};

Store::Store(std::string path, std::unique_ptr<Impl> impl) : path_(std::move(path)), impl_(std::move(impl)) {}

Store::~Store() = default;

Result<std::unique_ptr<Store>> Store::openReadOnly(const std::string &path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    return makeError(ErrorKind::InvalidInput,
                     fmt::format("no run store at {}: nothing has been recorded there (give --store, or set "
                                 "PTXFORGE_STORE)",
                                 path));
  auto impl = Impl::connect(path, SQLITE_OPEN_READONLY);
  if (!impl)
    return impl.error();
  if (auto version = (*impl)->userVersion(); !version)
    return version.error();
  return std::unique_ptr<Store>(new Store(path, std::move(*impl)));
}

Result<std::unique_ptr<Store>> Store::open(const std::string &path) {
  auto impl = Impl::connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!impl)
    return impl.error();
  if (auto schema = (*impl)->prepareSchema(); !schema)
    return schema.error();
  return std::unique_ptr<Store>(new Store(path, std::move(*impl)));
}

Result<int64_t> Store::createRun(const RunRecord &run) {
  std::lock_guard lock(impl_->mutex);
  std::string now = utcNow();
  auto inserted = impl_->execute(
      "creating a run",
      "INSERT INTO runs (created_at, updated_at, task, model, strategies, status, parameters, provenance, summary) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      now, now, run.task, run.model, run.strategies, run.status, dumpJson(run.parameters), dumpJson(run.provenance),
      dumpJson(run.summary));
  if (!inserted)
    return inserted.error();
  return static_cast<int64_t>(sqlite3_last_insert_rowid(impl_->db.get()));
}

Result<void> Store::updateRun(int64_t runId, const std::string &status, const nlohmann::json &summary) {
  std::lock_guard lock(impl_->mutex);
  auto updated = impl_->execute("updating a run", "UPDATE runs SET status = ?, summary = ?, updated_at = ? WHERE id = ?",
                                status, dumpJson(summary), utcNow(), runId);
  if (!updated)
    return updated.error();
  if (sqlite3_changes(impl_->db.get()) == 0)
    return impl_->noRun(runId);
  return {};
}

Result<RunRecord> Store::run(int64_t runId) {
  std::lock_guard lock(impl_->mutex);
  return impl_->runById(runId);
}

Result<std::vector<RunRecord>> Store::runs(size_t limit) {
  std::lock_guard lock(impl_->mutex);
  static const std::string sql = fmt::format("SELECT {} FROM runs ORDER BY id DESC LIMIT ?", kRunColumns);
  // LIMIT -1 is SQLite's "no limit".
  int64_t sqlLimit = limit == 0 ? -1 : static_cast<int64_t>(std::min<size_t>(limit, std::numeric_limits<int64_t>::max()));
  return impl_->queryAll("listing runs", &Impl::readRun, sql, sqlLimit);
}

Result<int64_t> Store::addPrompt(const PromptRecord &prompt) {
  std::lock_guard lock(impl_->mutex);
  constexpr std::string_view what = "adding a prompt";
  return impl_->inTransaction(what, [&]() -> Result<int64_t> {
    auto inserted = impl_->execute(
        what,
        "INSERT INTO prompts (run_id, round, slot, kind, strategies, tendency, temperature, parent_candidate_id, "
        "request_hash, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(run_id, round, slot, kind) DO NOTHING",
        prompt.runId, prompt.round, prompt.slot, prompt.kind, prompt.strategies, prompt.tendency, prompt.temperature,
        prompt.parentCandidateId, prompt.requestHash, dumpJson(prompt.request));
    if (!inserted)
      return inserted.error();
    return impl_->queryId(what, "SELECT id FROM prompts WHERE run_id = ? AND round = ? AND slot = ? AND kind = ?",
                          prompt.runId, prompt.round, prompt.slot, prompt.kind);
  });
}

Result<std::optional<PromptRecord>> Store::findPrompt(int64_t runId, int round, int slot, const std::string &kind) {
  std::lock_guard lock(impl_->mutex);
  static const std::string sql =
      fmt::format("SELECT {} FROM prompts WHERE run_id = ? AND round = ? AND slot = ? AND kind = ?", kPromptColumns);
  return impl_->queryOne("finding a prompt", &Impl::readPrompt, sql, runId, round, slot, kind);
}

Result<int64_t> Store::putCompletion(const CompletionRecord &completion) {
  std::lock_guard lock(impl_->mutex);
  constexpr std::string_view what = "storing a completion";
  return impl_->inTransaction(what, [&]() -> Result<int64_t> {
    // An upsert rather than INSERT OR REPLACE: REPLACE deletes the old row and
    // would give the completion a new id.
    auto stored = impl_->execute(
        what,
        "INSERT INTO completions (prompt_id, status, text, error, meta, created_at) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(prompt_id) DO UPDATE SET status = excluded.status, text = excluded.text, "
        "error = excluded.error, meta = excluded.meta, created_at = excluded.created_at",
        completion.promptId, completion.status, completion.text, completion.error, dumpJson(completion.meta), utcNow());
    if (!stored)
      return stored.error();
    return impl_->queryId(what, "SELECT id FROM completions WHERE prompt_id = ?", completion.promptId);
  });
}

Result<std::optional<CompletionRecord>> Store::findCompletion(int64_t promptId) {
  std::lock_guard lock(impl_->mutex);
  static const std::string sql = fmt::format("SELECT {} FROM completions WHERE prompt_id = ?", kCompletionColumns);
  return impl_->queryOne("finding a completion", &Impl::readCompletion, sql, promptId);
}

Result<void> Store::putStreamSegment(const StreamSegmentRecord &segment) {
  std::lock_guard lock(impl_->mutex);
  // A first segment starts the answer over (a resumed run asks again): the
  // continuations of the earlier try go.
  if (segment.seq == 0)
    if (auto cleared = impl_->execute("storing a stream segment",
                                      "DELETE FROM stream_segments WHERE prompt_id = ? AND seq > 0", segment.promptId);
        !cleared)
      return cleared.error();
  return impl_->execute(
      "storing a stream segment",
      "INSERT INTO stream_segments (prompt_id, seq, mode, request_hash, text, cut_at, diagnostic, meta, created_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT(prompt_id, seq) DO UPDATE SET mode = excluded.mode, request_hash = excluded.request_hash, "
      "text = excluded.text, cut_at = excluded.cut_at, diagnostic = excluded.diagnostic, meta = excluded.meta, "
      "created_at = excluded.created_at",
      segment.promptId, segment.seq, segment.mode, segment.requestHash, segment.text, segment.cutAt,
      dumpJson(segment.diagnostic), dumpJson(segment.meta), utcNow());
}

Result<std::vector<StreamSegmentRecord>> Store::streamSegments(int64_t promptId) {
  std::lock_guard lock(impl_->mutex);
  constexpr std::string_view what = "reading stream segments";
  auto present = impl_->hasStreamSegments();
  if (!present)
    return present.error();
  if (!*present)
    return std::vector<StreamSegmentRecord>();
  static const std::string sql =
      fmt::format("SELECT {} FROM stream_segments WHERE prompt_id = ? ORDER BY seq", kStreamSegmentColumns);
  return impl_->queryAll(what, &Impl::readStreamSegment, sql, promptId);
}

Result<int64_t> Store::addCandidate(const CandidateRecord &candidate) {
  std::lock_guard lock(impl_->mutex);
  constexpr std::string_view what = "adding a candidate";
  return impl_->inTransaction(what, [&]() -> Result<int64_t> {
    auto inserted = impl_->execute(
        what,
        "INSERT INTO candidates (run_id, prompt_id, round, slot, ptx, ptx_hash, sass_hash, duplicate_of, "
        "extract_error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(prompt_id) DO NOTHING",
        candidate.runId, candidate.promptId, candidate.round, candidate.slot, candidate.ptx, candidate.ptxHash,
        candidate.sassHash, candidate.duplicateOf, candidate.extractError, utcNow());
    if (!inserted)
      return inserted.error();
    return impl_->queryId(what, "SELECT id FROM candidates WHERE prompt_id = ?", candidate.promptId);
  });
}

Result<std::optional<CandidateRecord>> Store::findCandidate(int64_t promptId) {
  std::lock_guard lock(impl_->mutex);
  static const std::string sql = fmt::format("SELECT {} FROM candidates WHERE prompt_id = ?", kCandidateColumns);
  return impl_->queryOne("finding a candidate", &Impl::readCandidate, sql, promptId);
}

Result<std::optional<CandidateRecord>> Store::candidate(int64_t candidateId) {
  std::lock_guard lock(impl_->mutex);
  static const std::string sql = fmt::format("SELECT {} FROM candidates WHERE id = ?", kCandidateColumns);
  return impl_->queryOne("reading a candidate", &Impl::readCandidate, sql, candidateId);
}

Result<std::optional<CandidateRecord>> Store::findDuplicate(int64_t runId, const std::string &ptxHash,
                                                            const std::string &sassHash) {
  std::lock_guard lock(impl_->mutex);
  // Only a candidate the gate has judged can stand in for another, and only an
  // original: a duplicate's own result is a copy of its original's.
  static const std::string sql = fmt::format(
      "SELECT {} FROM candidates AS k WHERE k.run_id = ?1 "
      "AND ((k.ptx_hash = ?2 AND k.ptx_hash != '') OR (k.sass_hash = ?3 AND ?3 != '')) "
      "AND k.duplicate_of IS NULL "
      "AND EXISTS (SELECT 1 FROM results AS r WHERE r.candidate_id = k.id) "
      "ORDER BY k.id LIMIT 1",
      qualify("k", kCandidateColumns));
  return impl_->queryOne("finding a duplicate", &Impl::readCandidate, sql, runId, ptxHash, sassHash);
}

Result<void> Store::putResult(const ResultRecord &result) {
  std::lock_guard lock(impl_->mutex);
  return impl_->execute(
      "storing a result",
      "INSERT INTO results (candidate_id, verdict, stage, summary, speedup, registers, result, created_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT(candidate_id) DO UPDATE SET verdict = excluded.verdict, stage = excluded.stage, "
      "summary = excluded.summary, speedup = excluded.speedup, registers = excluded.registers, "
      "result = excluded.result, created_at = excluded.created_at",
      result.candidateId, result.verdict, result.stage, result.summary, result.speedup, result.registers,
      dumpJson(result.result), utcNow());
}

Result<std::optional<ResultRecord>> Store::findResult(int64_t candidateId) {
  std::lock_guard lock(impl_->mutex);
  static const std::string sql = fmt::format("SELECT {} FROM results WHERE candidate_id = ?", kResultColumns);
  return impl_->queryOne("finding a result", &Impl::readResult, sql, candidateId);
}

Result<RunData> Store::load(int64_t runId) {
  std::lock_guard lock(impl_->mutex);
  constexpr std::string_view what = "loading a run";
  // One read transaction: the run and its attempts come from one snapshot even
  // while another process writes.
  Impl::Transaction transaction(*impl_);
  if (auto begun = transaction.begin(what, false); !begun)
    return begun.error();
  RunData data;
  auto run = impl_->runById(runId);
  if (!run)
    return run.error();
  data.run = std::move(*run);

  constexpr int completionFirst = columnCount(kPromptColumns);
  constexpr int candidateFirst = completionFirst + columnCount(kCompletionColumns);
  constexpr int resultFirst = candidateFirst + columnCount(kCandidateColumns);
  static const std::string sql = fmt::format(
      "SELECT {}, {}, {}, {} FROM prompts AS p "
      "LEFT JOIN completions AS c ON c.prompt_id = p.id "
      "LEFT JOIN candidates AS k ON k.prompt_id = p.id "
      "LEFT JOIN results AS r ON r.candidate_id = k.id "
      "WHERE p.run_id = ? ORDER BY p.round, p.slot, p.id",
      qualify("p", kPromptColumns), qualify("c", kCompletionColumns), qualify("k", kCandidateColumns),
      qualify("r", kResultColumns));
  {
    auto statement = impl_->prepare(what, sql, runId);
    if (!statement)
      return statement.error();
    Result<void> all = impl_->forEachRow(*statement, what, [&](const Statement &row) -> Result<void> {
      AttemptRow attempt;
      auto prompt = impl_->readPrompt(row, 0);
      if (!prompt)
        return prompt.error();
      attempt.prompt = std::move(*prompt);
      // The first column of each joined table is its key, NULL when the join found no row.
      if (!row.isNull(completionFirst)) {
        auto completion = impl_->readCompletion(row, completionFirst);
        if (!completion)
          return completion.error();
        attempt.completion = std::move(*completion);
      }
      if (!row.isNull(candidateFirst)) {
        auto candidate = impl_->readCandidate(row, candidateFirst);
        if (!candidate)
          return candidate.error();
        attempt.candidate = std::move(*candidate);
      }
      if (!row.isNull(resultFirst)) {
        auto result = impl_->readResult(row, resultFirst);
        if (!result)
          return result.error();
        attempt.result = std::move(*result);
      }
      data.attempts.push_back(std::move(attempt));
      return {};
    });
    if (!all)
      return all.error();
  }
  auto present = impl_->hasStreamSegments();
  if (!present)
    return present.error();
  if (*present) {
    std::map<int64_t, AttemptRow *> byPrompt;
    for (AttemptRow &attempt : data.attempts)
      byPrompt[attempt.prompt.id] = &attempt;
    static const std::string segmentSql = fmt::format(
        "SELECT {} FROM stream_segments AS s JOIN prompts AS p ON p.id = s.prompt_id WHERE p.run_id = ? "
        "ORDER BY s.prompt_id, s.seq",
        qualify("s", kStreamSegmentColumns));
    auto segments = impl_->queryAll(what, &Impl::readStreamSegment, segmentSql, runId);
    if (!segments)
      return segments.error();
    for (StreamSegmentRecord &segment : *segments)
      if (auto owner = byPrompt.find(segment.promptId); owner != byPrompt.end())
        owner->second->segments.push_back(std::move(segment));
  }
  if (auto committed = transaction.commit(what); !committed)
    return committed.error();
  return data;
}

Result<std::map<int64_t, int64_t>> Store::copyAttempts(int64_t runId, const std::vector<AttemptRow> &attempts) {
  std::lock_guard lock(impl_->mutex);
  constexpr std::string_view what = "copying attempts";
  Impl::Transaction transaction(*impl_);
  if (auto begun = transaction.begin(what, true); !begun)
    return begun.error();
  if (auto run = impl_->runById(runId); !run)
    return run.error();
  std::map<int64_t, int64_t> candidates;            // old candidate id -> new
  std::vector<std::pair<int64_t, int64_t>> parents;  // new prompt id -> old parent candidate id
  std::vector<std::pair<int64_t, int64_t>> duplicates; // new candidate id -> old original's id
  for (const AttemptRow &attempt : attempts) {
    const PromptRecord &prompt = attempt.prompt;
    auto taken = impl_->queryOne("checking a prompt", &Impl::readPrompt,
                                 fmt::format("SELECT {} FROM prompts WHERE run_id = ? AND round = ? AND slot = ? AND kind = ?",
                                             kPromptColumns),
                                 runId, prompt.round, prompt.slot, prompt.kind);
    if (!taken)
      return taken.error();
    if (*taken)
      return makeError(ErrorKind::InvalidInput,
                       fmt::format("run {} in {} already has round {} slot {} ({})", runId, impl_->path, prompt.round,
                                   prompt.slot, prompt.kind));
    auto inserted = impl_->execute(
        what,
        "INSERT INTO prompts (run_id, round, slot, kind, strategies, tendency, temperature, parent_candidate_id, "
        "request_hash, request) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
        runId, prompt.round, prompt.slot, prompt.kind, prompt.strategies, prompt.tendency, prompt.temperature,
        prompt.requestHash, dumpJson(prompt.request));
    if (!inserted)
      return inserted.error();
    int64_t promptId = sqlite3_last_insert_rowid(impl_->db.get());
    if (prompt.parentCandidateId)
      parents.emplace_back(promptId, *prompt.parentCandidateId);
    for (const StreamSegmentRecord &segment : attempt.segments) {
      auto copied = impl_->execute(what,
                                   "INSERT INTO stream_segments (prompt_id, seq, mode, request_hash, text, cut_at, "
                                   "diagnostic, meta, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   promptId, segment.seq, segment.mode, segment.requestHash, segment.text,
                                   segment.cutAt, dumpJson(segment.diagnostic), dumpJson(segment.meta),
                                   segment.createdAt);
      if (!copied)
        return copied.error();
    }
    if (attempt.completion) {
      const CompletionRecord &completion = *attempt.completion;
      auto stored = impl_->execute(what,
                                   "INSERT INTO completions (prompt_id, status, text, error, meta, created_at) "
                                   "VALUES (?, ?, ?, ?, ?, ?)",
                                   promptId, completion.status, completion.text, completion.error,
                                   dumpJson(completion.meta), completion.createdAt);
      if (!stored)
        return stored.error();
    }
    if (!attempt.candidate)
      continue;
    const CandidateRecord &candidate = *attempt.candidate;
    auto added = impl_->execute(
        what,
        "INSERT INTO candidates (run_id, prompt_id, round, slot, ptx, ptx_hash, sass_hash, duplicate_of, "
        "extract_error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)",
        runId, promptId, candidate.round, candidate.slot, candidate.ptx, candidate.ptxHash, candidate.sassHash,
        candidate.extractError, candidate.createdAt);
    if (!added)
      return added.error();
    int64_t candidateId = sqlite3_last_insert_rowid(impl_->db.get());
    candidates[candidate.id] = candidateId;
    if (candidate.duplicateOf)
      duplicates.emplace_back(candidateId, *candidate.duplicateOf);
    if (attempt.result) {
      const ResultRecord &result = *attempt.result;
      auto put = impl_->execute(
          what,
          "INSERT INTO results (candidate_id, verdict, stage, summary, speedup, registers, result, created_at) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
          candidateId, result.verdict, result.stage, result.summary, result.speedup, result.registers,
          dumpJson(result.result), result.createdAt);
      if (!put)
        return put.error();
    }
  }
  // The links, once every candidate has its new id (a duplicate's original
  // may come later in (round, slot) order than the duplicate).
  for (const auto &[promptId, parent] : parents)
    if (auto found = candidates.find(parent); found != candidates.end())
      if (auto linked = impl_->execute(what, "UPDATE prompts SET parent_candidate_id = ? WHERE id = ?", found->second,
                                       promptId);
          !linked)
        return linked.error();
  for (const auto &[candidateId, original] : duplicates)
    if (auto found = candidates.find(original); found != candidates.end())
      if (auto linked = impl_->execute(what, "UPDATE candidates SET duplicate_of = ? WHERE id = ?", found->second,
                                       candidateId);
          !linked)
        return linked.error();
  if (auto committed = transaction.commit(what); !committed)
    return committed.error();
  return candidates;
}

Result<int64_t> Store::createEval(const EvalRecord &record) {
  std::lock_guard lock(impl_->mutex);
  std::string now = utcNow();
  auto inserted = impl_->execute(
      "creating an eval",
      "INSERT INTO evals (created_at, updated_at, model, suite, suite_version, status, parameters, provenance, "
      "metrics) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      now, now, record.model, record.suite, record.suiteVersion, record.status, dumpJson(record.parameters),
      dumpJson(record.provenance), dumpJson(record.metrics));
  if (!inserted)
    return inserted.error();
  return static_cast<int64_t>(sqlite3_last_insert_rowid(impl_->db.get()));
}

Result<void> Store::updateEval(int64_t evalId, EvalStatus status, const nlohmann::json &metrics) {
  std::lock_guard lock(impl_->mutex);
  auto updated = impl_->execute("updating an eval",
                                "UPDATE evals SET status = ?, metrics = ?, updated_at = ? WHERE id = ?",
                                evalStatusName(status), dumpJson(metrics), utcNow(), evalId);
  if (!updated)
    return updated.error();
  if (sqlite3_changes(impl_->db.get()) == 0)
    return makeError(ErrorKind::InvalidInput, fmt::format("no eval {} in {}", evalId, impl_->path));
  return {};
}

Result<EvalRecord> Store::evalRecord(int64_t evalId) {
  std::lock_guard lock(impl_->mutex);
  static const std::string sql = fmt::format("SELECT {} FROM evals WHERE id = ?", kEvalColumns);
  auto record = impl_->queryOne("reading an eval", &Impl::readEval, sql, evalId);
  if (!record)
    return record.error();
  if (!*record)
    return makeError(ErrorKind::InvalidInput, fmt::format("no eval {} in {}", evalId, impl_->path));
  return std::move(**record);
}

Result<std::vector<EvalRecord>> Store::evals(size_t limit) {
  std::lock_guard lock(impl_->mutex);
  static const std::string sql = fmt::format("SELECT {} FROM evals ORDER BY id DESC LIMIT ?", kEvalColumns);
  int64_t sqlLimit = limit == 0 ? -1 : static_cast<int64_t>(std::min<size_t>(limit, std::numeric_limits<int64_t>::max()));
  return impl_->queryAll("listing evals", &Impl::readEval, sql, sqlLimit);
}

Result<void> Store::linkEvalRun(int64_t evalId, int position, const std::string &task, int64_t runId) {
  std::lock_guard lock(impl_->mutex);
  return impl_->execute("linking a run to an eval",
                        "INSERT INTO eval_runs (eval_id, position, task, run_id) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT(eval_id, task) DO UPDATE SET run_id = excluded.run_id, position = excluded.position",
                        evalId, position, task, runId);
}

Result<std::vector<EvalRun>> Store::evalRuns(int64_t evalId) {
  std::lock_guard lock(impl_->mutex);
  return impl_->queryAll("listing an eval's runs", &Impl::readEvalRun,
                         "SELECT position, task, run_id FROM eval_runs WHERE eval_id = ? ORDER BY position", evalId);
}

const char *runStatusName(RunStatus status) { return kRunStatusNames[static_cast<size_t>(status)].data(); }
std::optional<RunStatus> parseRunStatus(std::string_view name) { return parseName<RunStatus>(kRunStatusNames, name); }
const char *completionStatusName(CompletionStatus status) {
  return kCompletionStatusNames[static_cast<size_t>(status)].data();
}
std::optional<CompletionStatus> parseCompletionStatus(std::string_view name) {
  return parseName<CompletionStatus>(kCompletionStatusNames, name);
}

const char *evalStatusName(EvalStatus status) { return kEvalStatusNames[static_cast<size_t>(status)].data(); }
std::optional<EvalStatus> parseEvalStatus(std::string_view name) {
  return parseName<EvalStatus>(kEvalStatusNames, name);
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return std::string(text, length);
}

} // namespace ptxforge::store
