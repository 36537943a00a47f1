-- The guarded write of redis.md on one app hash, or on the meta hash. It
-- makes the decision of decide (guard.go) and reads the hash as DecodeApp and
-- DecodeMeta (codec.go) do: keep them in step.
--
-- KEYS[1]   the app hash, or the meta hash (guarded on read_ms)
-- ARGV[1]   the guarding time field      ARGV[2]  the new time, Unix ms
-- ARGV[3]   the minimum gap, ms          ARGV[4]  the TTL, ms
-- ARGV[5]   "1" if an ETag is required   ARGV[6]  the required ETag
-- ARGV[7..] the field/value pairs to set
--
-- Returns 1 written, 0 refused by time, -1 refused by ETag, -2 refused
-- because the hash holds no readable fetch.

local key = KEYS[1]

local function millis(s)
  if type(s) ~= 'string' or #s == 0 or #s > 18 or s:find('%D') then
    return nil
  end
  local n = tonumber(s)
  if n > 0 then
    return n
  end
  return nil
end

-- The JSON types decodeRelease accepts for the fields of a release, of an
-- asset and of a platform (nil: the field may also be absent or null).
local kinds = {
  tag = 'string', version = 'string', name = 'string', published_at = 'string',
  html_url = 'string', prerelease = 'boolean', notes_markdown = 'string', assets = 'table',
}
local asset_kinds = {
  name = 'string', size_bytes = 'number', download_url = 'string', sha256 = 'string', platform = 'table',
}
local platform_kinds = { os = 'string', arch = 'string', package_type = 'string' }

local function typed(t, want)
  if type(t) ~= 'table' then
    return false
  end
  for field, kind in pairs(want) do
    local v = t[field]
    if v ~= nil and v ~= cjson.null and type(v) ~= kind then
      return false
    end
  end
  return true
end

-- An RFC 3339 time as Go's time.Parse reads it: date, T, time, an optional
-- fraction, then Z or an offset.
local function rfc3339(s)
  local rest = s:match('^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d(.*)$')
  if rest == nil then
    return false
  end
  rest = rest:gsub('^%.%d+', '', 1)
  return rest == 'Z' or rest:find('^[+-]%d%d:%d%d$') ~= nil
end

local function readable_asset(a)
  if a == cjson.null then
    return true -- Go decodes a null asset as an empty one
  end
  if not typed(a, asset_kinds) then
    return false
  end
  -- size_bytes decodes into an integer.
  if type(a.size_bytes) == 'number' and a.size_bytes ~= math.floor(a.size_bytes) then
    return false
  end
  return a.platform == nil or a.platform == cjson.null or typed(a.platform, platform_kinds)
end

local function readable_release(s)
  if type(s) ~= 'string' then
    return false
  end
  local ok, r = pcall(cjson.decode, s)
  if not ok then
    return false
  end
  if r == cjson.null then
    return true
  end
  if not typed(r, kinds) or type(r.tag) ~= 'string' or r.tag == '' then
    return false
  end
  if type(r.published_at) == 'string' and not rfc3339(r.published_at) then
    return false
  end
  if type(r.assets) == 'table' then
    -- An array, not an object: every key 1..n (cjson reads [] and {} alike).
    local n = #r.assets
    for k in pairs(r.assets) do
      if type(k) ~= 'number' or k < 1 or k > n then
        return false
      end
    end
    for i = 1, n do
      if not readable_asset(r.assets[i]) then
        return false
      end
    end
  end
  return true
end

-- The JSON types DecodeMeta accepts for the fields of each meta list's
-- elements. Go is stricter still (it checks the time format, and tells an
-- array from an object); what this service writes passes both.
local meta_lists = {
  app_renames = {
    old_name = 'string', old_name_lower = 'string', new_name = 'string',
    new_name_lower = 'string', description = 'string', renamed_at = 'string',
  },
  repo_renames = { old_name = 'string', new_name = 'string', renamed_at = 'string' },
  announcements = { title = 'string', body = 'string', created_at = 'string' },
  alerts = { title = 'string', body = 'string', maybe_web_link = 'string', created_at = 'string' },
}

local function readable_list(s, kinds)
  if type(s) ~= 'string' or not s:find('^[ \t\r\n]*%[') then
    return false
  end
  local ok, list = pcall(cjson.decode, s)
  if not ok or type(list) ~= 'table' then
    return false
  end
  for _, item in ipairs(list) do
    if item ~= cjson.null then
      if type(item) ~= 'table' then
        return false
      end
      for field, want in pairs(kinds) do
        local v = item[field]
        if v ~= nil and v ~= cjson.null and type(v) ~= want then
          return false
        end
      end
    end
  end
  return true
end

-- The meta hash's time counts only when its four lists are readable.
local function readable_meta()
  for name, kinds in pairs(meta_lists) do
    if not readable_list(redis.call('HGET', key, name), kinds) then
      return false
    end
  end
  return true
end

local kind = redis.call('TYPE', key)['ok']
local h = {}
if kind == 'hash' then
  h = redis.call('HMGET', key, 'v', 'fetched_ms', 'etag', 'release', ARGV[1])
end
local current_format = h[1] == '1'

-- Decoding the release costs the most, so it is done at most once and only
-- when the write depends on it.
local fetch_read, fetch_at = false, nil
local function fetched()
  if not fetch_read then
    fetch_read = true
    local at = millis(h[2])
    if current_format and at and h[3] and readable_release(h[4]) then
      fetch_at = at
    end
  end
  return fetch_at
end

local current = nil
if ARGV[1] == 'fetched_ms' then
  current = fetched()
elseif current_format then
  current = millis(h[5])
  if current and ARGV[1] == 'read_ms' and not readable_meta() then
    current = nil
  end
end
if current and current + tonumber(ARGV[3]) > tonumber(ARGV[2]) then
  return 0
end

if ARGV[5] == '1' then
  if not fetched() then
    return -2
  end
  if h[3] ~= ARGV[6] then
    return -1
  end
end

-- A key of another format or type reads as absent: replace it whole so that
-- none of its fields is read later as if this format had written it.
if kind ~= 'none' and not current_format then
  redis.call('DEL', key)
end
redis.call('HSET', key, unpack(ARGV, 7))
redis.call('PEXPIRE', key, ARGV[4])
return 1
