import { createHash } from 'node:crypto';

/** A Lua script with its SHA1, run with EVALSHA (falling back to EVAL once per server). */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function script(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Adds a submission unless its id is pending (2) or was acknowledged within the dedupe window (0); 1 when added.
 * Resolves { outcome, 1 when the thread's job is in BullMQ's failed set (dead-lettered) else 0 }.
 * KEYS: inbox, entries, tenants, seen, sequence, pending-threads, stats, BullMQ's failed set.
 * ARGV: id, entry JSON, now, resourceId or '', threadId, dedupe window ms, the thread's job id.
 */
const submit = script(
  'submit',
  `
local dead = redis.call('ZSCORE', KEYS[8], ARGV[7]) and 1 or 0
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return { 2, dead } end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', tonumber(ARGV[3]) - tonumber(ARGV[6]))
if redis.call('ZSCORE', KEYS[4], ARGV[1]) then return { 0, dead } end
local sequence = redis.call('INCR', KEYS[5])
redis.call('ZADD', KEYS[1], sequence, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
  redis.call('HINCRBY', KEYS[7], 'pending:' .. ARGV[4], 1)
end
redis.call('HINCRBY', KEYS[7], 'pending', 1)
redis.call('ZADD', KEYS[6], ARGV[3], ARGV[5])
return { 1, dead }
`,
);

/** The inbox entries (JSON) in submission order. KEYS: inbox, entries. */
const pending = script(
  'pending',
  `
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
local entries = {}
for index = 1, #ids, 500 do
  local last = math.min(index + 499, #ids)
  local chunk = redis.call('HMGET', KEYS[2], unpack(ids, index, last))
  for _, entry in ipairs(chunk) do entries[#entries + 1] = entry end
end
return entries
`,
);

/**
 * Removes acknowledged entries, remembers their ids for the dedupe window; resolves how many it removed.
 * KEYS: inbox, entries, tenants, seen, pending-threads, stats. ARGV: now, dedupe window ms, threadId, ids...
 */
const acknowledge = script(
  'acknowledge',
  `
local removed = 0
for index = 4, #ARGV do
  local id = ARGV[index]
  if redis.call('ZREM', KEYS[1], id) == 1 then
    removed = removed + 1
    redis.call('HDEL', KEYS[2], id)
    local tenant = redis.call('HGET', KEYS[3], id)
    if tenant then
      redis.call('HDEL', KEYS[3], id)
      if redis.call('HINCRBY', KEYS[6], 'pending:' .. tenant, -1) <= 0 then
        redis.call('HDEL', KEYS[6], 'pending:' .. tenant)
      end
    end
    redis.call('ZADD', KEYS[4], ARGV[1], id)
  end
end
if removed > 0 then
  redis.call('HINCRBY', KEYS[6], 'pending', -removed)
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2]))
  redis.call('PEXPIRE', KEYS[4], math.max(1, tonumber(ARGV[2])))
  if redis.call('ZCARD', KEYS[1]) == 0 then redis.call('ZREM', KEYS[5], ARGV[3]) end
end
return removed
`,
);

/**
 * Takes a tenant slot for a claimed thread: 1, or 0 when the tenant is at its cap. Expired claims free their slot.
 * KEYS: active (the tenant's), active-tenants. ARGV: threadId, lock expiry, now, cap or 'inf', resourceId.
 */
const takeSlot = script(
  'takeSlot',
  `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if ARGV[4] ~= 'inf' and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[5], KEYS[1])
return 1
`,
);

/**
 * Ends a claim's bookkeeping: frees its tenant slot and counts it; resolves the inbox size and the tenant of the
 * oldest entry. KEYS: active, stats, inbox, tenants. ARGV: threadId, counter ('' for none), resourceId or '',
 * '1' when dead-lettered.
 */
const release = script(
  'release',
  `
if ARGV[3] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
if ARGV[2] ~= '' then redis.call('HINCRBY', KEYS[2], ARGV[2], 1) end
if ARGV[4] == '1' and ARGV[3] ~= '' then redis.call('HINCRBY', KEYS[2], 'dead:' .. ARGV[3], 1) end
local first = redis.call('ZRANGE', KEYS[3], 0, 0)
local tenant = false
if first[1] then tenant = redis.call('HGET', KEYS[4], first[1]) end
return { redis.call('ZCARD', KEYS[3]), tenant }
`,
);

/** One less dead letter of a tenant. KEYS: stats. ARGV: resourceId. */
const undead = script(
  'undead',
  `
if redis.call('HINCRBY', KEYS[1], 'dead:' .. ARGV[1], -1) <= 0 then redis.call('HDEL', KEYS[1], 'dead:' .. ARGV[1]) end
return 1
`,
);

/**
 * The counters, and the active claims per tenant (expired ones dropped).
 * KEYS: stats, active-tenants. ARGV: now.
 */
const figures = script(
  'figures',
  `
local active = {}
local tenants = redis.call('HGETALL', KEYS[2])
for index = 1, #tenants, 2 do
  local key = tenants[index + 1]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[1])
  local count = redis.call('ZCARD', key)
  if count == 0 then
    redis.call('HDEL', KEYS[2], tenants[index])
  else
    active[#active + 1] = tenants[index]
    active[#active + 1] = count
  end
end
return { redis.call('HGETALL', KEYS[1]), active }
`,
);

/**
 * Clears a cancel request: only the one `requestId` names when given (its field `r:<runId>`; the earlier layout's
 * `id`/`request` fields too), else every request of the thread. 1, or 0 when there was nothing to clear.
 * KEYS: cancel. ARGV: request id or ''.
 */
const clearCancel = script(
  'clearCancel',
  `
if ARGV[1] == '' then return redis.call('DEL', KEYS[1]) end
local fields = redis.call('HGETALL', KEYS[1])
for index = 1, #fields, 2 do
  local field = fields[index]
  if string.sub(field, 1, 2) == 'r:' or field == 'request' then
    local ok, request = pcall(cjson.decode, fields[index + 1])
    if ok and type(request) == 'table' and request['id'] == ARGV[1] then
      redis.call('HDEL', KEYS[1], field)
      if field == 'request' then redis.call('HDEL', KEYS[1], 'id') end
      return 1
    end
  end
end
return 0
`,
);

/**
 * Appends events as stream entries `0-<id>` (field `e`), trimmed to the length bound, under the fencing rules
 * of the contract's RunEventLog. The meta hash keeps `fence` (the highest given) and `fseq` (the seq of the last
 * event taken under it). Resolves { 0, id... } (the ids appended), { 1 } when the log is ended, or { 2, the log's
 * fence } when the fence is lower than the log's.
 * KEYS: stream, meta. ARGV: max length, fence or '', count n, seq 1..n, event JSON 1..n.
 */
const appendEvents = script(
  'appendEvents',
  `
if redis.call('HEXISTS', KEYS[2], 'end') == 1 then return { 1 } end
local fence = tonumber(ARGV[2])
local position = nil
if fence then
  local logFence = tonumber(redis.call('HGET', KEYS[2], 'fence') or '')
  if logFence and fence < logFence then return { 2, logFence } end
  position = -1
  if logFence == fence then position = tonumber(redis.call('HGET', KEYS[2], 'fseq') or '-1') end
end
local count = tonumber(ARGV[3])
local last = tonumber(redis.call('HGET', KEYS[2], 'seq') or '0')
local out = { 0 }
for index = 1, count do
  local seq = tonumber(ARGV[3 + index])
  if position == nil or seq > position then
    if position ~= nil then position = seq end
    last = last + 1
    redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '0-' .. last, 'e', ARGV[3 + count + index])
    out[#out + 1] = last
  end
end
if #out > 1 then redis.call('HSET', KEYS[2], 'seq', last) end
if fence then redis.call('HSET', KEYS[2], 'fence', ARGV[2], 'fseq', position) end
return out
`,
);

/**
 * Events after a seq (skipping end marks), at most `limit`: { id, JSON, id, JSON, ... } and 1 when the log is
 * ended and these reach its last event. KEYS: stream, meta. ARGV: after, limit.
 */
const readEvents = script(
  'readEvents',
  `
local ended = redis.call('HGET', KEYS[2], 'end')
local limit = tonumber(ARGV[2])
local out = {}
local count = 0
local more = false
local from = tonumber(ARGV[1]) + 1
while true do
  local asked = limit - count + 1
  local entries = redis.call('XRANGE', KEYS[1], '0-' .. from, '+', 'COUNT', asked)
  if #entries == 0 then break end
  for _, entry in ipairs(entries) do
    if entry[2][1] == 'e' then
      if count == limit then
        more = true
        break
      end
      count = count + 1
      out[#out + 1] = string.sub(entry[1], 3)
      out[#out + 1] = entry[2][2]
    end
  end
  if more or #entries < asked then break end
  from = tonumber(string.sub(entries[#entries][1], 3)) + 1
end
return { out, (ended and not more) and 1 or 0 }
`,
);

/**
 * Marks a log's end with an end entry (which wakes blocked readers) and sets its expiry; { 0 }, or { 2, the log's
 * fence } when the fence is lower than the log's. KEYS: stream, meta. ARGV: ttl ms, max length, fence or ''.
 */
const endEvents = script(
  'endEvents',
  `
local fence = tonumber(ARGV[3])
if fence then
  local logFence = tonumber(redis.call('HGET', KEYS[2], 'fence') or '')
  if logFence and fence < logFence then return { 2, logFence } end
  if logFence ~= fence then redis.call('HSET', KEYS[2], 'fence', ARGV[3], 'fseq', -1) end
end
local seq = redis.call('HINCRBY', KEYS[2], 'seq', 1)
redis.call('XADD', KEYS[1], 'MAXLEN', tonumber(ARGV[2]) + 1, '0-' .. seq, 'end', '1')
redis.call('HSET', KEYS[2], 'end', seq)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return { 0 }
`,
);

/** Every script of the dispatcher. */
export const dispatchScripts = {
  submit,
  pending,
  acknowledge,
  takeSlot,
  release,
  undead,
  figures,
  clearCancel,
  appendEvents,
  readEvents,
  endEvents,
};
