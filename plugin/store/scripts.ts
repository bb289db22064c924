// Lua for every read-modify-write of the Redis store, registered with ioredis `defineCommand`.
// A grant's records all carry the hash tag {g:<grantId>}: each script touches one slot, so the
// keys it derives from the grant's member set are in the slot of the keys it was given.

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

// Keeps the member set alive as long as its longest-lived record.
const track = `
local function track(members, member, ttl)
  redis.call('SADD', members, member)
  if redis.call('TTL', members) < ttl then redis.call('EXPIRE', members, ttl) end
end
`

// ARGV: prefix, atMember, atRecord, atTtl, rtMember ('' for none), rtRecord, rtTtl
const save = `
local function save(members, argv)
  local prefix = argv[1]
  redis.call('SET', prefix .. argv[2], argv[3], 'EX', argv[4])
  track(members, argv[2], tonumber(argv[4]))
  if argv[5] ~= '' then
    redis.call('HSET', prefix .. argv[5], 'record', argv[6])
    redis.call('EXPIRE', prefix .. argv[5], argv[7])
    track(members, argv[5], tonumber(argv[7]))
  end
end
`

export const scripts = {
  // KEYS: code, members. ARGV: record, ttl, member
  macgateSaveCode: {
    numberOfKeys: 2,
    lua: `${track}
redis.call('HSET', KEYS[1], 'record', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
track(KEYS[2], ARGV[3], tonumber(ARGV[2]))`
  },
  // KEYS: code, members. ARGV: save's, then channel
  macgateRedeemCode: {
    numberOfKeys: 2,
    lua: `${revoke}${track}${save}
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
if redis.call('HEXISTS', KEYS[1], 'used') == 1 then
  revoke(ARGV[1], KEYS[2], ARGV[8])
  return 'replayed'
end
redis.call('HSET', KEYS[1], 'used', '1')
save(KEYS[2], ARGV)
return 'ok'`
  },
  // KEYS: refresh token, members. ARGV: save's, then channel
  macgateRotateRefresh: {
    numberOfKeys: 2,
    lua: `${revoke}${track}${save}
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
if redis.call('HEXISTS', KEYS[1], 'spent') == 1 then
  revoke(ARGV[1], KEYS[2], ARGV[8])
  return 'replayed'
end
redis.call('HSET', KEYS[1], 'spent', '1')
local sibling = cjson.decode(redis.call('HGET', KEYS[1], 'record')).accessTokenHash
if redis.call('DEL', ARGV[1] .. 'at:' .. sibling) == 1 then
  redis.call('SREM', KEYS[2], 'at:' .. sibling)
  redis.call('PUBLISH', ARGV[8], sibling)
end
save(KEYS[2], ARGV)
return 'ok'`
  },
  // KEYS: members. ARGV: save's
  macgateSaveTokens: {
    numberOfKeys: 1,
    lua: `${track}${save}
save(KEYS[1], ARGV)
return 'ok'`
  },
  // KEYS: members. ARGV: prefix, channel
  macgateRevokeGrant: {
    numberOfKeys: 1,
    lua: `${revoke}
return revoke(ARGV[1], KEYS[1], ARGV[2])`
  },
  // KEYS: client, index. ARGV: id, record
  macgateSaveClient: {
    numberOfKeys: 2,
    lua: `redis.call('SET', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])`
  },
  // KEYS: client, index. ARGV: id
  macgateRemoveClient: {
    numberOfKeys: 2,
    lua: `redis.call('SREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])`
  },
  // KEYS: nonce keys, all of one slot. ARGV: their ttls. Returns 1 for each first use, 0 for a replay.
  macgateUseNonces: {
    lua: `local fresh = {}
for i, key in ipairs(KEYS) do
  fresh[i] = redis.call('SET', key, '1', 'EX', ARGV[i], 'NX') and 1 or 0
end
return fresh`
  },
  // KEYS: secret. ARGV: proposed
  macgateServerSecret: {
    numberOfKeys: 1,
    lua: `redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])`
  }
} as const

export type ScriptName = keyof typeof scripts
