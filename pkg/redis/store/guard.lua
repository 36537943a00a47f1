-- The second half of a guarded change (docs/redis.md, "The guarded write"). The
-- decision was made in Go (decide, guard.go) on the fields that it reads, as
-- read just before; this script applies it only if those fields still hold
-- exactly that, so that the script path and the WATCH/MULTI/EXEC path read a
-- stored hash with one decoder and decide alike. Otherwise it changes
-- nothing and the caller reads and decides again.
--
-- KEYS[1]    the hash
-- ARGV[1]    the fingerprint of the fields as read (fingerprint, guard.go):
--            the SHA-1 of each field's length, ':' and value ('-' for
--            none, or for a value over its bound, which readers leave
--            unread), joined by ';'; or 'other' for a key of another type
-- ARGV[2]    the TTL to set, ms; '0' deletes the key instead of writing
-- ARGV[3]    n, the number of fields read
-- ARGV[4 .. 3+n]       the fields read
-- ARGV[4+n .. 3+2n]    their bounds, bytes
-- ARGV[4+2n ..]        the field/value pairs to set
--
-- Returns 1 changed, 0 the fields changed since they were read.

local key = KEYS[1]
local n = tonumber(ARGV[3])

local kind = redis.call('TYPE', key)['ok']
local print = 'other'
if kind == 'hash' or kind == 'none' then
  local values = redis.call('HMGET', key, unpack(ARGV, 4, 3 + n))
  local parts = {}
  for i = 1, n do
    local v = values[i]
    if v and #v <= tonumber(ARGV[3 + n + i]) then
      parts[i] = #v .. ':' .. v
    else
      parts[i] = '-'
    end
  end
  print = redis.sha1hex(table.concat(parts, ';'))
end
if print ~= ARGV[1] then
  return 0
end

if ARGV[2] == '0' then
  redis.call('DEL', key)
  return 1
end
-- A key of another format or type reads as absent: replace it whole so that
-- none of its fields is read later as if this format had written it.
if kind ~= 'none' and (kind ~= 'hash' or redis.call('HGET', key, 'v') ~= '1') then
  redis.call('DEL', key)
end
redis.call('HSET', key, unpack(ARGV, 4 + 2 * n))
redis.call('PEXPIRE', key, ARGV[2])
return 1
