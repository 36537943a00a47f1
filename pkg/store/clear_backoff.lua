-- The guarded clearing of the fleet backoff (redis.md, "Keys"): delete the
-- backoff hash only if it still reads as the backoff the poller read, as
-- DecodeBackoff (codec.go) reads it, so that a backoff another poller wrote
-- meanwhile stands. clearBackoffTxn (store.go) decides the same: keep them in
-- step.
--
-- KEYS[1]  the backoff hash
-- ARGV[1]  until_ms as read, "0" for none   ARGV[2]  trouble as read, "0" for none
--
-- Returns 1 cleared (or nothing to clear), 0 refused.

local key = KEYS[1]

-- A count or a time: 1 to 18 ASCII digits whose value is > 0, else 0.
local function positive(s)
  if type(s) ~= 'string' or #s == 0 or #s > 18 or s:find('%D') then
    return 0
  end
  return tonumber(s)
end

local until_ms, trouble = 0, 0
if redis.call('TYPE', key)['ok'] == 'hash' then
  local h = redis.call('HMGET', key, 'v', 'until_ms', 'trouble')
  if h[1] == '1' then
    until_ms, trouble = positive(h[2]), positive(h[3])
  end
end
if until_ms ~= tonumber(ARGV[1]) or trouble ~= tonumber(ARGV[2]) then
  return 0
end
redis.call('DEL', key)
return 1
