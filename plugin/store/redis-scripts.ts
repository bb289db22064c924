// Lua for every read-modify-write of the Redis store, registered with ioredis `defineCommand`.
// A grant's records all carry the hash tag {g:<grantId>}: each script touches one slot, so the
// keys it derives from the grant's member set are in the slot of the keys it was given.
// Each script names its arguments in its first lines; the shared functions take theirs explicitly.

// Deletes every record of a grant and announces the revoked access tokens.
const revoke = `
local function revoke(prefix, members, channel)
  local revoked = {}
  for _, member in ipairs(redis.call('SMEMBERS', members)) do
    if redis.call('DEL', prefix .. member) == 1 and string.sub(member, 1, 3) == 'at:' then
      revoked[#revoked + 1] = string.sub(member, 4)
    end
  end
  redis.call('DEL', members)
  if #revoked > 0 then redis.call('PUBLISH', channel, table.concat(revoked, ' ')) end
  return revoked
end
`

// Uses a code or refresh token once: 'missing' when it is gone, 'replayed' (and the whole grant
// revoked) when its flag is already set; otherwise sets the flag and returns nil.
const spend = `
local function spend(key, flag, members, prefix, channel)
  if redis.call('EXISTS', key) == 0 then return 'missing' end
  if redis.call('HEXISTS', key, flag) == 1 then
    revoke(prefix, members, channel)
    return 'replayed'
  end
  redis.call('HSET', key, flag, '1')
  return nil
end
`

// Keeps the member set alive as long as its longest-lived record.
const track = `
local function track(members, member, ttl)
  redis.call('SADD', members, member)
  if redis.call('TTL', members) < ttl then redis.call('EXPIRE', members, ttl) end
end
`

// Saves a token set given as JSON: {prefix, access: {member, record, ttl}, refresh?: {...}}.
const save = `
local function save(members, set)
  local access, refresh = set.access, set.refresh
  redis.call('SET', set.prefix .. access.member, access.record, 'EX', access.ttl)
  track(members, access.member, access.ttl)
  if refresh then
    redis.call('HSET', set.prefix .. refresh.member, 'record', refresh.record)
    redis.call('EXPIRE', set.prefix .. refresh.member, refresh.ttl)
    track(members, refresh.member, refresh.ttl)
  end
end
`

export const scripts = {
  macgateSaveCode: {
    numberOfKeys: 2,
    lua: `${track}
local code, members = KEYS[1], KEYS[2]
local record, ttl, member = ARGV[1], tonumber(ARGV[2]), ARGV[3]
redis.call('HSET', code, 'record', record)
redis.call('EXPIRE', code, ttl)
track(members, member, ttl)`
  },
  macgateRedeemCode: {
    numberOfKeys: 2,
    lua: `${revoke}${spend}${track}${save}
local code, members = KEYS[1], KEYS[2]
local channel, set = ARGV[1], cjson.decode(ARGV[2])
local refused = spend(code, 'used', members, set.prefix, channel)
if refused then return refused end
save(members, set)
return 'ok'`
  },
  macgateRotateRefresh: {
    numberOfKeys: 2,
    lua: `${revoke}${spend}${track}${save}
local refreshToken, members = KEYS[1], KEYS[2]
local channel, set, graceMs, successor, keptMember = ARGV[1], cjson.decode(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
-- Spent within its rotation grace: the successor kept for that (sealed; it expires with the grace).
local kept = set.prefix .. keptMember
if redis.call('HEXISTS', refreshToken, 'spent') == 1 then
  local earlier = redis.call('GET', kept)
  if earlier then return {'grace', earlier} end
end
local refused = spend(refreshToken, 'spent', members, set.prefix, channel)
if refused then return refused end
if graceMs > 0 then
  redis.call('SET', kept, successor, 'PX', graceMs)
  redis.call('SADD', members, keptMember)
end
local sibling = cjson.decode(redis.call('HGET', refreshToken, 'record')).accessTokenHash
if redis.call('DEL', set.prefix .. 'at:' .. sibling) == 1 then
  redis.call('SREM', members, 'at:' .. sibling)
  redis.call('PUBLISH', channel, sibling)
end
save(members, set)
return 'ok'`
  },
  macgateSaveTokens: {
    numberOfKeys: 1,
    lua: `${track}${save}
local members, set = KEYS[1], cjson.decode(ARGV[1])
save(members, set)
return 'ok'`
  },
  macgateRevokeGrant: {
    numberOfKeys: 1,
    lua: `${revoke}
local members, prefix, channel = KEYS[1], ARGV[1], ARGV[2]
return revoke(prefix, members, channel)`
  },
  macgateSaveClient: {
    numberOfKeys: 2,
    lua: `local client, index = KEYS[1], KEYS[2]
local id, record = ARGV[1], ARGV[2]
redis.call('SET', client, record)
redis.call('SADD', index, id)`
  },
  // The current secret hash becomes the previous one, accepted until ARGV[2]; returns the client.
  // (cjson would write an empty array as {}: a client's arrays are never empty.)
  macgateRotateSecret: {
    numberOfKeys: 1,
    lua: `local client = KEYS[1]
local secretHash, previousUntil = ARGV[1], tonumber(ARGV[2])
local stored = redis.call('GET', client)
if not stored then return false end
local record = cjson.decode(stored)
record.previousSecretHash = record.secretHash
record.previousSecretUntil = previousUntil
record.secretHash = secretHash
stored = cjson.encode(record)
redis.call('SET', client, stored)
return stored`
  },
  macgateRemoveClient: {
    numberOfKeys: 2,
    lua: `local client, index = KEYS[1], KEYS[2]
local id = ARGV[1]
redis.call('SREM', index, id)
return redis.call('DEL', client)`
  },
  // A client's grants, scored by until when each may have live records: pruned on every call, and
  // the key itself expires with its last grant.
  macgateTrackGrant: {
    numberOfKeys: 1,
    lua: `local grants = KEYS[1]
local grantId, untilMs, nowMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', grants, '-inf', nowMs)
redis.call('ZADD', grants, 'GT', untilMs, grantId)
local last = redis.call('ZRANGE', grants, -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', grants, last[2])`
  },
  // A user's consent for a client and the index of their consents: both in the user's slot.
  macgateAddConsent: {
    numberOfKeys: 2,
    lua: `local consent, consents = KEYS[1], KEYS[2]
local clientId, nowMs = ARGV[1], ARGV[2]
redis.call('SADD', consent, unpack(ARGV, 3))
redis.call('HSET', consents, clientId, nowMs)`
  },
  macgateForgetConsent: {
    numberOfKeys: 2,
    lua: `local consent, consents = KEYS[1], KEYS[2]
local clientId = ARGV[1]
redis.call('DEL', consent)
redis.call('HDEL', consents, clientId)`
  },
  macgateSaveSession: {
    numberOfKeys: 2,
    lua: `${track}
local session, sessions = KEYS[1], KEYS[2]
local hash, record, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
redis.call('SET', session, record, 'EX', ttl)
track(sessions, hash, ttl)`
  },
  // One session (a hash given) or every session of the user; all keys in the user's slot.
  macgateEndSessions: {
    numberOfKeys: 1,
    lua: `local sessions = KEYS[1]
local prefix, hash = ARGV[1], ARGV[2]
if hash ~= '' then
  redis.call('DEL', prefix .. hash)
  redis.call('SREM', sessions, hash)
  return
end
for _, member in ipairs(redis.call('SMEMBERS', sessions)) do redis.call('DEL', prefix .. member) end
redis.call('DEL', sessions)`
  },
  // One event-loop turn's nonces (all of one slot on a cluster). KEYS: the nonce sets (of 64-bit keyed
  // hashes, by tag, minute and a further byte) and the old layout's per-nonce keys still to honour (the upgrade window).
  // ARGV: the set count b; per set, its key's index and lifetime (s); then per nonce, its
  // set's index, its keyed hash, and its old-layout key's index or 0. Returns 1 for each first
  // use, 0 for a replay. A set's expiry is set when it has none (its minute's end of window), and
  // moved only later (a verifier with a wider skew): not once per nonce.
  macgateUseNonces: {
    lua: `local b = tonumber(ARGV[1])
local fresh = {}
local n = 0
for i = 2 * b + 2, #ARGV, 3 do
  n = n + 1
  local added = redis.call('SADD', KEYS[tonumber(ARGV[i])], ARGV[i + 1])
  local old = tonumber(ARGV[i + 2])
  if added == 1 and old > 0 and redis.call('EXISTS', KEYS[old]) == 1 then added = 0 end
  fresh[n] = added
end
for i = 2, 2 * b, 2 do
  local set, wanted = KEYS[tonumber(ARGV[i])], tonumber(ARGV[i + 1])
  local left = redis.call('TTL', set)
  if left == -1 or left < wanted - 1 then redis.call('EXPIRE', set, wanted) end
end
return fresh`
  },
  // KEYS: nonce sets (of one tag). Returns {members, bytes (MEMORY USAGE)} over those that exist.
  macgateNonceStats: {
    lua: `local held, bytes = 0, 0
for _, key in ipairs(KEYS) do
  local count = redis.call('SCARD', key)
  if count > 0 then
    held = held + count
    bytes = bytes + redis.call('MEMORY', 'USAGE', key)
  end
end
return {held, bytes}`
  },
  // Returns {hits in the window, ms until it resets}.
  macgateCountHit: {
    numberOfKeys: 1,
    lua: `local counter = KEYS[1]
local windowMs = ARGV[1]
local count = redis.call('INCR', counter)
if count == 1 then redis.call('PEXPIRE', counter, windowMs) end
return {count, redis.call('PTTL', counter)}`
  },
  macgateServerSecret: {
    numberOfKeys: 1,
    lua: `local secret = KEYS[1]
local proposed = ARGV[1]
redis.call('SET', secret, proposed, 'NX')
return redis.call('GET', secret)`
  }
} as const

export type ScriptName = keyof typeof scripts
