/**
 * The Lua scripts that keep the shared invariants atomic, one per invariant. Times are the caller's epoch ms
 * (replicas share a clock closely enough for windows seconds long). Every write renews the key's TTL.
 */

/**
 * What a write the replicas must agree on checks first: that the store is still the one whose epoch (and so
 * whose rebuild) the replica checked before sending it. A store emptied in between (a flush, a failover to an
 * empty node behind the same address) answers `stale`, and the replica rebuilds before it tries again.
 */
const inEpoch = (epochKey: number, epochArg: number, stale: string) =>
  `if redis.call("HGET", KEYS[${epochKey}], "id") ~= ARGV[${epochArg}] then return ${stale} end`;

/** In both budget scripts: drops grants a window old (never answered), starts a new window past the reset. */
const ROLL_WINDOW = `
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now - 60000)
local inflight = redis.call("ZCARD", KEYS[2])
if seeded and now >= resetAt then
  remaining = math.max(0, limit - inflight)
  resetAt = now + 60000
end`;

/**
 * budget_take: grants one request, or says how long to wait, by the local TokenBucketBudget's rules: before
 * any header, requests spaced evenly at the assumed limit; once seeded, foreground calls may spend every
 * token, background polls only those above the reserve, spread over what is left of the window.
 * KEYS: budget hash, in-flight sorted set. ARGV: now, background (0/1), reserve fraction, assumed limit,
 * grant id, ttl ms. Returns 0 when granted, else the milliseconds to wait.
 */
export const BUDGET_TAKE = `
local now = tonumber(ARGV[1])
local background = ARGV[2] == "1"
local reserveFraction = tonumber(ARGV[3])
local ttl = tonumber(ARGV[6])
local b = redis.call("HMGET", KEYS[1], "limit", "seeded", "remaining", "reset_at", "next_paced_at", "last_bg_at")
local limit = tonumber(b[1]) or tonumber(ARGV[4])
local seeded = b[2] == "1"
local remaining = tonumber(b[3]) or 0
local resetAt = tonumber(b[4]) or 0
local nextPaced = tonumber(b[5]) or 0
local lastBg = tonumber(b[6]) or -1e15
${ROLL_WINDOW}
local at
if not seeded then
  at = math.max(now, nextPaced)
else
  local reserve = math.min(limit - 1, math.max(1, math.ceil(limit * reserveFraction)))
  local usable = remaining
  if background then usable = remaining - reserve end
  if usable < 1 then
    at = math.max(resetAt, now + 1)
  elseif not background then
    at = now
  else
    at = math.max(now, lastBg + math.max(0, resetAt - now) / usable)
  end
end
if at <= now then
  redis.call("ZADD", KEYS[2], now, ARGV[5])
  if seeded then remaining = remaining - 1 else nextPaced = now + 60000 / limit end
  if background then lastBg = now end
end
redis.call("HSET", KEYS[1], "limit", limit, "seeded", seeded and "1" or "0", "remaining", remaining,
  "reset_at", resetAt, "next_paced_at", nextPaced, "last_bg_at", lastBg)
redis.call("PEXPIRE", KEYS[1], ttl)
redis.call("PEXPIRE", KEYS[2], ttl)
if at <= now then return 0 end
return math.ceil(at - now)
`;

/**
 * budget_observe: feeds one answer back. ARGV: now, grant id, status (0 = no answer), header limit, header
 * remaining, reset epoch ms (-1 = none), ttl ms. A 429 empties the window until the reset; a remaining count
 * seeds or lowers the tokens, less the requests in flight on every replica.
 */
export const BUDGET_OBSERVE = `
local now = tonumber(ARGV[1])
local status = tonumber(ARGV[3])
local headerLimit = tonumber(ARGV[4])
local headerRemaining = tonumber(ARGV[5])
local reset = tonumber(ARGV[6])
local ttl = tonumber(ARGV[7])
redis.call("ZREM", KEYS[2], ARGV[2])
if status == 0 then return 0 end
local b = redis.call("HMGET", KEYS[1], "limit", "seeded", "remaining", "reset_at")
local limit = tonumber(b[1]) or 60
if headerLimit > 0 then limit = headerLimit end
local seeded = b[2] == "1"
local remaining = tonumber(b[3]) or 0
local resetAt = tonumber(b[4]) or 0
if status == 429 then
  redis.call("HSET", KEYS[1], "limit", limit, "seeded", "1", "remaining", 0, "reset_at", reset)
elseif headerRemaining < 0 then
  redis.call("HSET", KEYS[1], "limit", limit)
else
  ${ROLL_WINDOW}
  local fromHeader = math.max(0, headerRemaining - inflight)
  if reset < 0 then reset = now + 60000 end
  if (not seeded) or reset > resetAt + 1000 then
    remaining = math.min(fromHeader, limit)
  else
    remaining = math.min(remaining, fromHeader)
  end
  redis.call("HSET", KEYS[1], "limit", limit, "seeded", "1", "remaining", remaining, "reset_at", reset)
end
redis.call("PEXPIRE", KEYS[1], ttl)
return 0
`;

/**
 * take_lease: takes a lease or claim when free, or renews it when already this holder's (a claim whose
 * command timed out may have been written after all). KEYS: the lease. ARGV: holder, ttl ms. 1 when held.
 */
export const TAKE_LEASE = `
local holder = redis.call("GET", KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 1
`;

/** take_lease_in_epoch: take_lease for a start's claim, in the epoch read before. KEYS: the lease, the epoch
 * hash. ARGV: holder, ttl ms, the epoch. 1 when held, 0 when not, -1 when the store is not that epoch's. */
export const TAKE_LEASE_IN_EPOCH = `
${inEpoch(2, 3, "-1")}${TAKE_LEASE}`;

/** set_once_in_epoch: SET NX of "1". KEYS: the key, the epoch hash. ARGV: ttl ms, the epoch. 1 when set
 * now, 0 when it was set before, -1 when the store is not that epoch's. */
export const SET_ONCE_IN_EPOCH = `
${inEpoch(2, 2, "-1")}
if redis.call("SET", KEYS[1], "1", "PX", ARGV[1], "NX") then return 1 end
return 0
`;

/** release_if_owner: deletes a lease or claim only while it is still this owner's. KEYS: key. ARGV: owner. */
export const RELEASE_IF_OWNER = `
if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end
return 0
`;

/** task_finalize: writes the final record (ARGV: record, ttl ms) unless one exists; answers the one held. */
export const TASK_FINALIZE = `
local current = redis.call("GET", KEYS[1])
if current then return current end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return ARGV[1]
`;

/**
 * spend_reserve: adds to the caller's day unless its total would pass the limit. The day is a hash with a
 * field per replica, so each can write its share again after a loss. KEYS: the day hash, the epoch hash.
 * ARGV: amount (hundredths of a credit), limit, ttl ms, the replica's field, the epoch read before. Returns
 * {1 when reserved else 0, total}, or {-1, 0} when the store is not that epoch's (IN_EPOCH).
 */
export const SPEND_RESERVE = `
${inEpoch(2, 5, "{-1, 0}")}
local used = 0
for _, value in ipairs(redis.call("HVALS", KEYS[1])) do used = used + (tonumber(value) or 0) end
local amount = tonumber(ARGV[1])
if used + amount > tonumber(ARGV[2]) then return {0, used} end
redis.call("HINCRBY", KEYS[1], ARGV[4], amount)
redis.call("PEXPIRE", KEYS[1], ARGV[3])
return {1, used + amount}
`;

/** spend_release: gives back from this replica's share, never below zero. ARGV: amount, replica's field. */
export const SPEND_RELEASE = `
local mine = tonumber(redis.call("HGET", KEYS[1], ARGV[2]) or "0") or 0
local left = math.max(0, mine - tonumber(ARGV[1]))
if mine > 0 then redis.call("HSET", KEYS[1], ARGV[2], left) end
return left
`;
