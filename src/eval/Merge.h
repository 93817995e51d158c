// Merging the shards of an eval (`ptxforge eval merge`): shards run with
// `eval --shard I/N`, on one machine or many, into one store or several,
// become one eval whose figures are those the unsharded eval would give.
//
// Each task's runs (one per shard that had samples of it) are copied into
// one run in the target store: their attempts keep their slots, rounds and
// timestamps, so the merged run is what one unsharded run would have
// recorded (its duplicates of another shard's candidates were checked on
// their own, with the same seed, so they carry the same verdict). The merged
// eval links those runs and is scored like any other: the figures come from
// the store, and the leaderboard ranks it (never its shards).
//
// Refused, naming what differs: shards of different models, suites or suite
// versions, options (anything but -j), executors, devices or timing; two
// evals of one shard; a missing shard; an eval that is not a shard; a shard
// that is still running, interrupted or pending (resume it first); and
// shards merged before into the target store (that eval is named).
#pragma once

#include "eval/Eval.h"
#include "store/Store.h"
#include "support/Result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ptxforge::eval {

/// One shard to merge: an eval in a store.
struct ShardSource {
  store::Store *store = nullptr;
  int64_t evalId = 0;
};

struct MergeOutcome {
  int64_t evalId = 0; ///< the merged eval, in the target store
  store::EvalStatus status =
      store::EvalStatus::Running; ///< complete, incomplete or infra-error
  nlohmann::json document;        ///< its eval document (EvalReport.h)
};

/// Every shard eval of `store` (an eval whose parameters have a shard), oldest
/// first.
Result<std::vector<int64_t>> shardEvals(store::Store &store);

/// Merges the shards into one eval in `into` (which may be one of the shards'
/// stores). `provenance` is merged into the new eval's (tool versions). The
/// new eval's provenance lists its shards under "merged_from" ({"shard",
/// "eval", "store", "device", "created_at"} each), its runs' provenance
/// their source runs.
Result<MergeOutcome>
mergeShards(const std::vector<ShardSource> &shards, store::Store &into,
            const nlohmann::json &provenance = nlohmann::json::object());

} // namespace ptxforge::eval
