// Lua for every read-modify-write of the Redis store, registered with ioredis `defineCommand`.
// A grant's records all carry the hash tag {g:<grantId>}: each script touches one slot, so the
// keys it derives from the grant's member set are in the slot of the keys it was given.
// Each script names its arguments in its first lines; the shared functions take theirs explicitly.
import { MEMBERS } from './keys.ts'

// Deletes every record of a grant and announces the revoked access tokens.
const revoke = `
local function revoke(prefix, members, channel)
  local revoked = {}
  for _, member in ipairs(redis.call('SMEMBERS', members)) do
    if redis.call('DEL', prefix .. member) == 1 and string.sub(member, 1, ${MEMBERS.accessToken.length}) == '${MEMBERS.accessToken}' then
      revoked[#revoked + 1] = string.sub(member, 4)
    end
  end
  redis.call('DEL', members)
  if #revoked > 0 then redis.call('PUBLISH', channel, table.concat(revoked, ' ')) end
  return revoked
end
`

// The origin index, all in the {clients} slot: per origin a set of `p:<id>` (public) or `c:<id>`
// members, per client the set of origins it is in. Takes the client out of its old origins' sets,
// then puts `member` into those named by args[from..].
const indexOrigins = `
local function indexOrigins(originsOf, prefix, id, member, args, from)
  for _, origin in ipairs(redis.call('SMEMBERS', originsOf)) do
    redis.call('SREM', prefix .. origin, 'p:' .. id, 'c:' .. id)
  end
  redis.call('DEL', originsOf)
  for i = from, #args do
    redis.call('SADD', prefix .. args[i], member)
    redis.call('SADD', originsOf, args[i])
  end
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
if redis.call('DEL', set.prefix .. '${MEMBERS.accessToken}' .. sibling) == 1 then
  redis.call('SREM', members, '${MEMBERS.accessToken}' .. sibling)
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
  // A device authorization (RFC 8628) is a hash in its grant's slot: its static record (JSON) and the
  // fields a poll or a decision changes, each its own: clientId, expiresAt, status, interval (s),
  // lastPoll (ms), userId.
  macgateSaveDeviceCode: {
    numberOfKeys: 1,
    lua: `local device = KEYS[1]
local record, clientId, expiresAt, interval, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
redis.call('HSET', device, 'record', record, 'clientId', clientId, 'expiresAt', expiresAt, 'status', 'pending', 'interval', interval)
redis.call('EXPIRE', device, ttl)`
  },
  // The user's decision on a pending, unexpired code: 'ok', else why not.
  macgateDecideDeviceCode: {
    numberOfKeys: 1,
    lua: `local device = KEYS[1]
local nowMs, status, userId = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local fields = redis.call('HMGET', device, 'status', 'expiresAt')
if not fields[1] then return 'missing' end
if nowMs >= tonumber(fields[2]) then return 'expired' end
if fields[1] ~= 'pending' then return 'decided' end
redis.call('HSET', device, 'status', status, 'userId', userId)
return 'ok'`
  },
  // One poll by ARGV[2]: {state} for a missing code or another client's, else {state, hash fields}.
  // Polled sooner than the interval less the tolerance: 'slow_down', the interval 5 s longer.
  macgatePollDeviceCode: {
    numberOfKeys: 1,
    lua: `local device = KEYS[1]
local nowMs, clientId, toleranceMs = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local fields = redis.call('HMGET', device, 'status', 'expiresAt', 'interval', 'lastPoll', 'clientId')
local status = fields[1]
if not status then return {'missing'} end
if fields[5] ~= clientId then return {'other_client'} end
local state = status
if status ~= 'spent' then
  if nowMs >= tonumber(fields[2]) then
    state = 'expired'
  else
    local interval, last = tonumber(fields[3]), tonumber(fields[4])
    if last and nowMs - last < interval * 1000 - toleranceMs then
      redis.call('HSET', device, 'interval', interval + 5)
      state = 'slow_down'
    end
    redis.call('HSET', device, 'lastPoll', nowMs)
  end
end
return {state, redis.call('HGETALL', device)}`
  },
  // Spends an approved device code and saves its token set: 'ok', else why not.
  macgateRedeemDeviceCode: {
    numberOfKeys: 2,
    lua: `${track}${save}
local device, members = KEYS[1], KEYS[2]
local set = cjson.decode(ARGV[1])
local status = redis.call('HGET', device, 'status')
if not status then return 'missing' end
if status == 'spent' then return 'spent' end
if status ~= 'approved' then return 'undecided' end
redis.call('HSET', device, 'status', 'spent')
save(members, set)
return 'ok'`
  },
  // Saves a client and moves its entries in the origin index (KEYS[3]: the origins it is indexed
  // under) to ARGV[5..]; ARGV[3] prefixes an origin's set, ARGV[4] is the client's member there.
  macgateSaveClient: {
    numberOfKeys: 3,
    lua: `${indexOrigins}
local client, index, originsOf = KEYS[1], KEYS[2], KEYS[3]
local id, record, prefix, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
indexOrigins(originsOf, prefix, id, member, ARGV, 5)
redis.call('SET', client, record)
redis.call('SADD', index, id)`
  },
  // Replaces a client's record but for its secret fields (a rotation racing the update keeps its
  // secret), re-indexing its origins as macgateSaveClient does; returns the record, false if none.
  macgateUpdateClient: {
    numberOfKeys: 2,
    lua: `${indexOrigins}
local client, originsOf = KEYS[1], KEYS[2]
local id, record, prefix, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local stored = redis.call('GET', client)
if not stored then return false end
local old, updated = cjson.decode(stored), cjson.decode(record)
updated.secretHash, updated.previousSecretHash, updated.previousSecretUntil = old.secretHash, old.previousSecretHash, old.previousSecretUntil
indexOrigins(originsOf, prefix, id, member, ARGV, 5)
stored = cjson.encode(updated)
redis.call('SET', client, stored)
return stored`
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
    numberOfKeys: 3,
    lua: `${indexOrigins}
local client, index, originsOf = KEYS[1], KEYS[2], KEYS[3]
local id, prefix = ARGV[1], ARGV[2]
indexOrigins(originsOf, prefix, id, '', ARGV, #ARGV + 1)
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
  // hashes, by tag, minute and a further byte) and the quota counters. ARGV: four texts of
  // space-separated integers, one argument each however many nonces the turn has (a few arguments
  // cost the client less to write than several per nonce): per set, its key's index and lifetime
  // (s); per counter, its key's index, lifetime and limit; per plain nonce, its set's index and
  // keyed hash; per nonce behind a counter, its set's index, keyed hash and counter's index. Returns a
  // text of one character per plain nonce, 1 (first use) or 0 (replay) (one string for the client
  // to read, not an integer per nonce), then per counted nonce {1, 0 or -1 over its quota (not recorded),
  // the counter's value}: the counter is checked first and counts first uses only. A counter is read
  // once per call and counted in the script (the call is atomic), then written once (INCRBY): a
  // limited nonce costs Redis no more commands than another. A set's expiry is set when it has none
  // (its minute's end of window), and moved only later (a verifier with a wider skew): not once per
  // nonce; a counter's is set when this call made it.
  macgateUseNonces: {
    lua: `local fresh, value, counted, limit = {}, {}, {}, {}
for set, member in string.gmatch(ARGV[3], '(%d+) (-?%d+)') do
  fresh[#fresh + 1] = redis.call('SADD', KEYS[tonumber(set)], member)
end
local answers = {table.concat(fresh)}
for counter, most in string.gmatch(ARGV[2], '(%d+) %d+ (%d+)') do limit[tonumber(counter)] = tonumber(most) end
for set, member, index in string.gmatch(ARGV[4], '(%d+) (-?%d+) (%d+)') do
  local counter = tonumber(index)
  local used = value[counter]
  if used == nil then
    used = tonumber(redis.call('GET', KEYS[counter]) or '0')
    counted[counter] = 0
  end
  local added = -1
  if used < limit[counter] then
    added = redis.call('SADD', KEYS[tonumber(set)], member)
    if added == 1 then
      used = used + 1
      counted[counter] = counted[counter] + 1
    end
  end
  value[counter] = used
  answers[#answers + 1] = added
  answers[#answers + 1] = used
end
for index, lifetime in string.gmatch(ARGV[1], '(%d+) (%d+)') do
  local set, wanted = KEYS[tonumber(index)], tonumber(lifetime)
  local left = redis.call('TTL', set)
  if left == -1 or left < wanted - 1 then redis.call('EXPIRE', set, wanted) end
end
for index, lifetime in string.gmatch(ARGV[2], '(%d+) (%d+) %d+') do
  local counter = tonumber(index)
  local added = counted[counter]
  if added ~= nil and added > 0 and redis.call('INCRBY', KEYS[counter], added) == added then redis.call('EXPIRE', KEYS[counter], lifetime) end
end
return answers`
  },
  // A cluster's quota counters of one turn, all in one tag, before the nonces (nonces.ts).
  // KEYS: the counters. ARGV: per counter, its limit and lifetime (s). Returns per counter its value
  // after counting one, or -1 - value when it was at its limit (not counted).
  macgateCountQuotas: {
    lua: `local answers = {}
for k, key in ipairs(KEYS) do
  local used = tonumber(redis.call('GET', key) or '0')
  if used >= tonumber(ARGV[2 * k - 1]) then
    answers[k] = -1 - used
  else
    answers[k] = redis.call('INCR', key)
    if answers[k] == 1 then redis.call('EXPIRE', key, ARGV[2 * k]) end
  end
end
return answers`
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
  // Saves an initial access token (a hash of its fields) until it expires, and indexes its id.
  macgateSaveRegistrationToken: {
    numberOfKeys: 2,
    lua: `local token, index = KEYS[1], KEYS[2]
local id, hash, uses, expiresAt, createdAt = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
redis.call('HSET', token, 'id', id, 'uses', uses, 'usesLeft', uses, 'expiresAt', expiresAt, 'createdAt', createdAt)
redis.call('PEXPIREAT', token, expiresAt)
redis.call('HSET', index, id, hash)`
  },
  // Takes one use of a live token: its id, or false. The last use deletes it.
  macgateUseRegistrationToken: {
    numberOfKeys: 2,
    lua: `local token, index = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
local fields = redis.call('HMGET', token, 'id', 'usesLeft', 'expiresAt')
if not fields[1] then return false end
if tonumber(fields[3]) <= now or tonumber(fields[2]) < 1 then return false end
if redis.call('HINCRBY', token, 'usesLeft', -1) == 0 then
  redis.call('DEL', token)
  redis.call('HDEL', index, fields[1])
end
return fields[1]`
  },
  // Deletes a token by its id: 1, or 0 when there was none live.
  macgateRevokeRegistrationToken: {
    numberOfKeys: 1,
    lua: `local index = KEYS[1]
local prefix, id = ARGV[1], ARGV[2]
local hash = redis.call('HGET', index, id)
if not hash then return 0 end
redis.call('HDEL', index, id)
return redis.call('DEL', prefix .. hash)`
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
