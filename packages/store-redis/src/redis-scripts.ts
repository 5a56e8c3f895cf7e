import { createHash } from 'node:crypto';

/** A Lua script with its SHA1, run with EVALSHA (falling back to EVAL once per server). */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/**
 * Shared by every script. ARGV[1] is the key prefix; keys are built here from ids, with `%` and `:` escaped
 * so that no id can produce another record's key.
 */
const prelude = `
local prefix = ARGV[1]
local function escape(id)
  return (string.gsub(id, '[%%:]', function(character)
    return string.format('%%%02X', string.byte(character))
  end))
end
local function threadKey(threadId) return prefix .. 'thread:' .. escape(threadId) end
local function runKey(runId) return prefix .. 'run:' .. escape(runId) end
local function runKeyOfMember(member) return prefix .. 'run:' .. string.match(member, '^%d+:%d+:(.*)$') end
local function resourceKey(resourceId) return prefix .. 'resource:' .. escape(resourceId) .. ':threads' end
local function nowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local function latestLeaseToken(threadId)
  return tonumber(redis.call('HGET', threadKey(threadId) .. ':lease-token', 'token') or '0')
end
local function latestRunRecord(key)
  local members = redis.call('ZREVRANGEBYLEX', key .. ':runs', '+', '-', 'LIMIT', 0, 1)
  if members[1] == nil then return false end
  return redis.call('HGET', runKeyOfMember(members[1]), 'record')
end
local function addToolExecution(threadId, runId, toolCallId)
  local tools = runKey(runId) .. ':tools'
  redis.call('ZADD', tools, 'NX', redis.call('ZCARD', tools), escape(toolCallId))
  redis.call('SADD', threadKey(threadId) .. ':tool-runs', escape(runId))
end
`;

function script(name: string, body: string): LuaScript {
  const source = `${prelude}\n${body}`;
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/** Every script the store runs; each store call is exactly one of them, in one round trip. */
export const redisScripts = {
  // ARGV: prefix, id, resourceId or '', metadata JSON, now, index member
  createThread: script(
    'createThread',
    `
local key = threadKey(ARGV[2])
if redis.call('EXISTS', key) == 1 then return 0 end
redis.call('HSET', key, 'id', ARGV[2], 'metadata', ARGV[4], 'messageCount', 0, 'createdAt', ARGV[5],
  'updatedAt', ARGV[5], 'runSeq', 0, 'member', ARGV[6])
redis.call('ZADD', prefix .. 'threads', 0, ARGV[6])
if ARGV[3] ~= '' then
  redis.call('HSET', key, 'resourceId', ARGV[3])
  redis.call('ZADD', resourceKey(ARGV[3]), 0, ARGV[6])
end
return 1
`,
  ),

  // ARGV: prefix, id
  getThread: script('getThread', `return redis.call('HGETALL', threadKey(ARGV[2]))`),

  // ARGV: prefix, resourceId or '', ZRANGEBYLEX min, count
  listThreads: script(
    'listThreads',
    `
local index = prefix .. 'threads'
if ARGV[2] ~= '' then index = resourceKey(ARGV[2]) end
local members = redis.call('ZRANGEBYLEX', index, ARGV[3], '+', 'LIMIT', 0, tonumber(ARGV[4]))
local threads = {}
for i, member in ipairs(members) do
  threads[i] = redis.call('HGETALL', threadKey(string.sub(member, 17)))
end
return {members, threads}
`,
  ),

  // ARGV: prefix, id, metadata JSON, now
  updateThreadMetadata: script(
    'updateThreadMetadata',
    `
local key = threadKey(ARGV[2])
if redis.call('EXISTS', key) == 0 then return false end
redis.call('HSET', key, 'metadata', ARGV[3], 'updatedAt', ARGV[4])
return redis.call('HGETALL', key)
`,
  ),

  // ARGV: prefix, id
  deleteThread: script(
    'deleteThread',
    `
local key = threadKey(ARGV[2])
local thread = redis.call('HMGET', key, 'member', 'resourceId')
if not thread[1] then return 0 end
for _, member in ipairs(redis.call('ZRANGE', key .. ':runs', 0, -1)) do
  redis.call('DEL', runKeyOfMember(member))
end
for _, escapedRunId in ipairs(redis.call('SMEMBERS', key .. ':tool-runs')) do
  local tools = prefix .. 'run:' .. escapedRunId .. ':tools'
  for _, escapedCallId in ipairs(redis.call('ZRANGE', tools, 0, -1)) do
    redis.call('DEL', prefix .. 'run:' .. escapedRunId .. ':tool:' .. escapedCallId)
  end
  redis.call('DEL', tools)
end
redis.call('DEL', key, key .. ':messages', key .. ':state', key .. ':runs', key .. ':tool-runs', key .. ':lease')
if redis.call('EXISTS', key .. ':lease-token') == 1 then
  redis.call('HSET', key .. ':lease-token', 'released', 1)
end
redis.call('ZREM', prefix .. 'threads', thread[1])
if thread[2] then redis.call('ZREM', resourceKey(thread[2]), thread[1]) end
return 1
`,
  ),

  // ARGV: prefix, threadId, expected count, lease token or '', now, state JSON or '',
  //       runId or '', run index position (padded createdAt), run JSON, tool count,
  //       per tool: runId, toolCallId, record JSON, status, attempts, result JSON or '', completedAt or '',
  //       then the message record JSONs
  commit: script(
    'commit',
    `
local threadId = ARGV[2]
local key = threadKey(threadId)
local count = redis.call('HGET', key, 'messageCount')
if not count then return {'not-found'} end
if ARGV[4] ~= '' then
  local latest = latestLeaseToken(threadId)
  local token = tonumber(ARGV[4])
  if token < latest then return {'stale-lease', latest} end
  if token > latest then return {'lease-lost', latest} end
else
  local held = redis.call('HMGET', key .. ':lease', 'owner', 'runId', 'expiresAt')
  if held[1] then return {'thread-busy', held[1], held[2] or '', held[3] or ''} end
end
count = tonumber(count)
if count ~= tonumber(ARGV[3]) then return {'store-conflict', count} end
local runId = ARGV[7]
local run
if runId ~= '' then
  run = redis.call('HMGET', runKey(runId), 'threadId', 'member')
  if run[1] and run[1] ~= threadId then return {'run-elsewhere', run[1]} end
end

-- Ledger entries: one of another thread rejects the commit before anything is written; a completed one is final.
local tools = {}
local i = 11
for t = 1, tonumber(ARGV[10]) do
  local toolKey = runKey(ARGV[i]) .. ':tool:' .. escape(ARGV[i + 1])
  local existing = redis.call('HMGET', toolKey, 'threadId', 'status')
  if existing[1] and existing[1] ~= threadId then return {'tool-elsewhere', existing[1], ARGV[i], ARGV[i + 1]} end
  tools[t] = existing[2] ~= 'completed' and toolKey or false
  i = i + 7
end
i = 11
for t = 1, tonumber(ARGV[10]) do
  local toolKey = tools[t]
  if toolKey then
    redis.call('DEL', toolKey)
    redis.call('HSET', toolKey, 'record', ARGV[i + 2], 'threadId', threadId, 'status', ARGV[i + 3],
      'attempts', ARGV[i + 4])
    if ARGV[i + 5] ~= '' then redis.call('HSET', toolKey, 'result', ARGV[i + 5]) end
    if ARGV[i + 6] ~= '' then redis.call('HSET', toolKey, 'completedAt', ARGV[i + 6]) end
    addToolExecution(threadId, ARGV[i], ARGV[i + 1])
  end
  i = i + 7
end
local appended = #ARGV - i + 1
for first = i, #ARGV, 1000 do
  redis.call('RPUSH', key .. ':messages', unpack(ARGV, first, math.min(first + 999, #ARGV)))
end
if runId ~= '' then
  if not run[2] then
    local position = string.format('%012d', redis.call('HINCRBY', key, 'runSeq', 1))
    local member = ARGV[8] .. ':' .. position .. ':' .. escape(runId)
    redis.call('ZADD', key .. ':runs', 0, member)
    redis.call('HSET', runKey(runId), 'threadId', threadId, 'member', member)
  end
  redis.call('HSET', runKey(runId), 'record', ARGV[9])
end
if ARGV[6] ~= '' then redis.call('SET', key .. ':state', ARGV[6]) end
redis.call('HSET', key, 'messageCount', count + appended, 'updatedAt', ARGV[5])
return {'ok', count + appended}
`,
  ),

  // ARGV: prefix, threadId
  loadCheckpoint: script(
    'loadCheckpoint',
    `
local key = threadKey(ARGV[2])
local thread = redis.call('HGETALL', key)
if #thread == 0 then return false end
return {thread, redis.call('LRANGE', key .. ':messages', 0, -1), redis.call('GET', key .. ':state'),
  latestRunRecord(key)}
`,
  ),

  // ARGV: prefix, threadId, LRANGE start, LRANGE stop
  listMessages: script(
    'listMessages',
    `return redis.call('LRANGE', threadKey(ARGV[2]) .. ':messages', tonumber(ARGV[3]), tonumber(ARGV[4]))`,
  ),

  // ARGV: prefix, runId
  getRun: script('getRun', `return redis.call('HGET', runKey(ARGV[2]), 'record')`),

  // ARGV: prefix, threadId
  getLatestRun: script('getLatestRun', `return latestRunRecord(threadKey(ARGV[2]))`),

  // ARGV: prefix, threadId, ZRANGEBYLEX min, count
  listRuns: script(
    'listRuns',
    `
local members = redis.call('ZRANGEBYLEX', threadKey(ARGV[2]) .. ':runs', ARGV[3], '+', 'LIMIT', 0,
  tonumber(ARGV[4]))
local records = {}
for i, member in ipairs(members) do records[i] = redis.call('HGET', runKeyOfMember(member), 'record') end
return {members, records}
`,
  ),

  // ARGV: prefix, threadId
  getThreadState: script('getThreadState', `return redis.call('GET', threadKey(ARGV[2]) .. ':state')`),

  // ARGV: prefix, runId, toolCallId, threadId, record JSON, lease token or ''
  beginToolExecution: script(
    'beginToolExecution',
    `
if ARGV[6] ~= '' then
  local latest = latestLeaseToken(ARGV[4])
  if tonumber(ARGV[6]) < latest then return {'stale-lease', latest} end
end
local toolKey = runKey(ARGV[2]) .. ':tool:' .. escape(ARGV[3])
local existing = redis.call('HMGET', toolKey, 'status', 'threadId')
local status = existing[1]
if existing[2] and existing[2] ~= ARGV[4] then return {'tool-elsewhere', existing[2]} end
if not status then
  redis.call('HSET', toolKey, 'record', ARGV[5], 'threadId', ARGV[4], 'status', 'in-flight', 'attempts', 1)
  addToolExecution(ARGV[4], ARGV[2], ARGV[3])
elseif status == 'in-flight' then
  redis.call('HINCRBY', toolKey, 'attempts', 1)
end
return {'ok', redis.call('HGETALL', toolKey)}
`,
  ),

  // ARGV: prefix, runId, toolCallId, result JSON, completedAt, lease token or ''
  completeToolExecution: script(
    'completeToolExecution',
    `
local toolKey = runKey(ARGV[2]) .. ':tool:' .. escape(ARGV[3])
local threadId = redis.call('HGET', toolKey, 'threadId')
if not threadId then return {'not-found'} end
if ARGV[6] ~= '' then
  local latest = latestLeaseToken(threadId)
  if tonumber(ARGV[6]) < latest then return {'stale-lease', latest, threadId} end
end
if redis.call('HGET', toolKey, 'status') == 'completed' then return {'ok', redis.call('HGETALL', toolKey)} end
redis.call('HSET', toolKey, 'status', 'completed', 'result', ARGV[4], 'completedAt', ARGV[5])
return {'ok', redis.call('HGETALL', toolKey)}
`,
  ),

  // ARGV: prefix, runId, toolCallId
  getToolExecution: script(
    'getToolExecution',
    `return redis.call('HGETALL', runKey(ARGV[2]) .. ':tool:' .. escape(ARGV[3]))`,
  ),

  // ARGV: prefix, runId
  listToolExecutions: script(
    'listToolExecutions',
    `
local run = runKey(ARGV[2])
local entries = {}
for i, escapedCallId in ipairs(redis.call('ZRANGE', run .. ':tools', 0, -1)) do
  entries[i] = redis.call('HGETALL', run .. ':tool:' .. escapedCallId)
end
return entries
`,
  ),

  // ARGV: prefix, threadId, owner, runId, ttlMs, incarnation or ''
  acquireLease: script(
    'acquireLease',
    `
local key = threadKey(ARGV[2])
local now = nowMs()
local held = redis.call('HMGET', key .. ':lease', 'owner', 'runId', 'incarnation', 'renewedAt', 'expiresAt')
if held[1] then
  -- The contract's takeovers: a lease this instance left behind, or one of its owner unrenewed for 3/4 of its ttl.
  local sameOwner = held[1] == ARGV[3] and held[3] and held[3] ~= '' and ARGV[6] ~= ''
  local renewedAt = tonumber(held[4] or held[5])
  local takeOver = sameOwner and (held[3] == ARGV[6] or 4 * (now - renewedAt) >= 3 * (tonumber(held[5]) - renewedAt))
  if not takeOver then return {'thread-busy', held[1], held[2], held[3] or '', held[4] or '0', held[5] or '0'} end
end
local token = redis.call('HINCRBY', key .. ':lease-token', 'token', 1)
redis.call('HSET', key .. ':lease-token', 'owner', ARGV[3], 'runId', ARGV[4], 'incarnation', ARGV[6],
  'released', 0)
local expiresAt = now + tonumber(ARGV[5])
redis.call('DEL', key .. ':lease')
redis.call('HSET', key .. ':lease', 'owner', ARGV[3], 'runId', ARGV[4], 'incarnation', ARGV[6], 'token', token,
  'renewedAt', string.format('%d', now), 'expiresAt', string.format('%d', expiresAt))
redis.call('PEXPIRE', key .. ':lease', ARGV[5])
return {'ok', token, string.format('%d', now), string.format('%d', expiresAt)}
`,
  ),

  // ARGV: prefix, threadId, token, ttlMs
  renewLease: script(
    'renewLease',
    `
local key = threadKey(ARGV[2])
local issued = redis.call('HMGET', key .. ':lease-token', 'token', 'owner', 'runId', 'released', 'incarnation')
if not issued[1] or issued[1] ~= ARGV[3] or issued[4] == '1' then return {'lease-lost', issued[1]} end
local now = nowMs()
local expiresAt = now + tonumber(ARGV[4])
redis.call('HSET', key .. ':lease', 'owner', issued[2], 'runId', issued[3], 'incarnation', issued[5] or '',
  'token', issued[1], 'renewedAt', string.format('%d', now), 'expiresAt', string.format('%d', expiresAt))
redis.call('PEXPIRE', key .. ':lease', ARGV[4])
return {'ok', issued[2], issued[3], string.format('%d', expiresAt), issued[5] or '', string.format('%d', now)}
`,
  ),

  // ARGV: prefix, threadId, token
  releaseLease: script(
    'releaseLease',
    `
local key = threadKey(ARGV[2])
local issued = redis.call('HMGET', key .. ':lease-token', 'token', 'released')
if not issued[1] or issued[1] ~= ARGV[3] or issued[2] == '1' then return 0 end
redis.call('HSET', key .. ':lease-token', 'released', 1)
redis.call('DEL', key .. ':lease')
return 1
`,
  ),

  // ARGV: prefix, threadId
  getLease: script('getLease', `return redis.call('HGETALL', threadKey(ARGV[2]) .. ':lease')`),
} satisfies Record<string, LuaScript>;
