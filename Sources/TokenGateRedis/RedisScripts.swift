import RESP

/// The Lua scripts the shared state runs in Redis, each atomic on the server.
enum RedisScripts {
    /// Releases a lock only for the owner that holds it: a holder whose lock lapsed (and was taken by another
    /// replica) must not release the new holder's.
    static let unlock = try! RESPScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          return redis.call('DEL', KEYS[1])
        end
        return 0
        """)

    /// Takes the mint lock KEYS[1] for ARGV[1] for ARGV[2] milliseconds when nobody holds it, or when it has no
    /// expiry: every lock the gateway takes lapses, so one without (written by hand, or a `PERSIST`) would never
    /// be released and would stall every replica's mint of that context. Returns 1 when taken, else 0.
    static let lock = try! RESPScript(
        """
        if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
          return 1
        end
        if redis.call('PTTL', KEYS[1]) == -1 then
          redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
          return 1
        end
        return 0
        """)

    /// The value at KEYS[1] as `{1, value}`; else ``lock`` of KEYS[2] for ARGV[1] for ARGV[2] milliseconds: `{0, 1}`
    /// when taken, `{0, 0}` when another holds it. With KEYS[3], the context's ended entry: when it exists, `{2, its
    /// value}` and neither of the others is looked at. The keys must share a slot (the entity's hash tag).
    static let valueOrLock = try! RESPScript(
        """
        if KEYS[3] then
          local ended = redis.call('GET', KEYS[3])
          if ended then
            return {2, ended}
          end
        end
        local value = redis.call('GET', KEYS[1])
        if value then
          return {1, value}
        end
        if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
          return {0, 1}
        end
        if redis.call('PTTL', KEYS[2]) == -1 then
          redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
          return {0, 1}
        end
        return {0, 0}
        """)

    /// GCRA over several buckets in order, on Redis's own clock (so replicas' clocks do not matter). ARGV holds
    /// each bucket's emission interval and tolerance in microseconds. Returns `{0, 0}` when every bucket took the
    /// request, or `{i, wait}`: bucket i (1-based) refused, one request passes after `wait` microseconds. Buckets
    /// before a refusal stay charged, as in process.
    static let acquire = try! RESPScript(
        """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
        for i, key in ipairs(KEYS) do
          local interval = tonumber(ARGV[2 * i - 1])
          local tolerance = tonumber(ARGV[2 * i])
          local tat = tonumber(redis.call('GET', key)) or now
          if tat < now then tat = now end
          local wait = tat - now
          if wait > tolerance then
            return {i, wait - tolerance}
          end
          local next = tat + interval
          redis.call('SET', key, string.format('%.0f', next), 'PX', math.floor((next - now) / 1000) + 1)
        end
        return {0, 0}
        """)

    /// ``acquire`` for several requests at once, one after another, on one reading of Redis's clock. ARGV[1] is the
    /// number of requests; then, for each, its number of buckets n and n pairs of emission interval and tolerance;
    /// KEYS holds every request's buckets in the same order. Returns a flat array, two integers per request, each
    /// pair what ``acquire`` would have returned for that request.
    static let acquireBatch = try! RESPScript(
        """
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
        local results = {}
        local key, arg = 1, 2
        for r = 1, tonumber(ARGV[1]) do
          local count = tonumber(ARGV[arg])
          arg = arg + 1
          local refused, after = 0, 0
          for i = 1, count do
            if refused == 0 then
              local interval = tonumber(ARGV[arg])
              local tolerance = tonumber(ARGV[arg + 1])
              local tat = tonumber(redis.call('GET', KEYS[key])) or now
              if tat < now then tat = now end
              local wait = tat - now
              if wait > tolerance then
                refused, after = i, wait - tolerance
              else
                local next = tat + interval
                redis.call('SET', KEYS[key], string.format('%.0f', next), 'PX', math.floor((next - now) / 1000) + 1)
              end
            end
            key = key + 1
            arg = arg + 2
          end
          results[2 * r - 1] = refused
          results[2 * r] = after
        end
        return results
        """)

    /// Stores ARGV[1] at KEYS[1] for ARGV[2] milliseconds and publishes the key, a newline and the value on the
    /// channel ARGV[3], in one step: a replica told of it has the value. With a lock KEYS[2] and its owner ARGV[4],
    /// only while ARGV[4] holds it, and releasing it in the same step: a replica refused the lock before is sure to
    /// be told, and a mint whose lock was taken from it (an end of its context, a lapse) stores nothing. Returns 1
    /// when stored, 0 when the lock was not held.
    static let setAndAnnounce = try! RESPScript(
        """
        if KEYS[2] and redis.call('GET', KEYS[2]) ~= ARGV[4] then
          return 0
        end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        redis.call('PUBLISH', ARGV[3], KEYS[1] .. '\\n' .. ARGV[1])
        if KEYS[2] then
          redis.call('DEL', KEYS[2])
        end
        return 1
        """)

    /// Adds the member ARGV[1] to every set KEYS[i] unless one is full without it: ARGV[2i] is set i's capacity,
    /// ARGV[2i+1] its lifetime in milliseconds (renewed when it gains a member). Returns 0 when the member is in
    /// every set now, or i (1-based): set i refused it, and no set was changed.
    static let admitDistinct = try! RESPScript(
        """
        for i, key in ipairs(KEYS) do
          if redis.call('SISMEMBER', key, ARGV[1]) == 0 and redis.call('SCARD', key) >= tonumber(ARGV[2 * i]) then
            return i
          end
        end
        for i, key in ipairs(KEYS) do
          if redis.call('SADD', key, ARGV[1]) == 1 then
            redis.call('PEXPIRE', key, ARGV[2 * i + 1])
          end
        end
        return 0
        """)

    /// Counts entries (ends, tokens) in one provider's index KEYS[1] (a sorted set by expiry), all or none: ARGV[1] is now and ARGV[2]
    /// the capacity (epoch seconds; ends that have not expired), then pairs of an entry and its until. Returns 1
    /// when every one is counted (an entry already there keeps the later time), 0 when they do not all fit and
    /// nothing changed. Expired entries are removed 100 at most per call, so no call's work grows with the index;
    /// the index lapses a minute after its last entry.
    static let admitEntries = try! RESPScript(
        """
        local now, capacity = tonumber(ARGV[1]), tonumber(ARGV[2])
        local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 100)
        if #expired > 0 then
          redis.call('ZREM', KEYS[1], unpack(expired))
        end
        local members, pairs, last = {}, {}, 0
        for i = 3, #ARGV, 2 do
          members[#members + 1] = ARGV[i]
          pairs[#pairs + 1] = ARGV[i + 1]
          pairs[#pairs + 1] = ARGV[i]
          if tonumber(ARGV[i + 1]) > last then last = tonumber(ARGV[i + 1]) end
        end
        local held = redis.call('ZMSCORE', KEYS[1], unpack(members))
        local new, seen = 0, {}
        for i, member in ipairs(members) do
          if not seen[member] and (not held[i] or tonumber(held[i]) <= now) then new = new + 1 end
          seen[member] = true
        end
        local live = redis.call('ZCARD', KEYS[1]) - redis.call('ZCOUNT', KEYS[1], '-inf', now)
        if live + new > capacity then
          return 0
        end
        redis.call('ZADD', KEYS[1], 'GT', unpack(pairs))
        local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
        if top[2] and tonumber(top[2]) > last then last = tonumber(top[2]) end
        redis.call('PEXPIREAT', KEYS[1], string.format('%d', (last + 60) * 1000))
        return 1
        """)

    /// Records an end at each KEYS[i] (`until origin`: ARGV[3i-2] epoch seconds, ARGV[3i-1] `op` or `ev:MILLISECONDS`)
    /// merged with the one it holds (the later time; an operator's origin over an event's, else the newer event),
    /// expiring with it, and publishes one message on the channel ARGV[1]: for each, a line of ARGV[3i] (`end
    /// provider kind id`) followed by the merged end. One step; the keys must share a slot (one server, or one hash
    /// slot of a cluster). Returns the merged ends as `{until, origin, until, origin, …}`.
    static let recordEnds = try! RESPScript(
        """
        local lines, merged = {}, {}
        for i, key in ipairs(KEYS) do
          local untilTime, origin = tonumber(ARGV[3 * i - 1]), ARGV[3 * i]
          local held = redis.call('GET', key)
          if held then
            local heldUntil, heldOrigin = string.match(held, '^(%d+) (%S+)$')
            if heldUntil then
              if tonumber(heldUntil) > untilTime then untilTime = tonumber(heldUntil) end
              if heldOrigin == 'op' or origin == 'op' then
                origin = 'op'
              elseif tonumber(string.sub(heldOrigin, 4)) > tonumber(string.sub(origin, 4)) then
                origin = heldOrigin
              end
            end
          end
          local value = string.format('%d', untilTime) .. ' ' .. origin
          redis.call('SET', key, value, 'PXAT', string.format('%d', untilTime * 1000))
          lines[#lines + 1] = ARGV[3 * i + 1] .. ' ' .. value
          merged[#merged + 1] = string.format('%d', untilTime)
          merged[#merged + 1] = origin
        end
        redis.call('PUBLISH', ARGV[1], table.concat(lines, '\\n'))
        return merged
        """)

    /// Lifts the end at KEYS[1] for ARGV[1] (`op`, or `ev:MILLISECONDS`: only an end an event made before that) and
    /// publishes ARGV[2] on the channel ARGV[3], in one step. Returns `{1}` when lifted, `{0}` when nothing was
    /// ended, `{2, held}` when the end stays.
    static let recordLift = try! RESPScript(
        """
        local held = redis.call('GET', KEYS[1])
        if not held then
          return {0}
        end
        if ARGV[1] ~= 'op' then
          local heldUntil, heldOrigin = string.match(held, '^(%d+) (%S+)$')
          if not heldOrigin or string.sub(heldOrigin, 1, 3) ~= 'ev:' or tonumber(string.sub(heldOrigin, 4)) >= tonumber(string.sub(ARGV[1], 4)) then
            return {2, held}
          end
        end
        redis.call('DEL', KEYS[1])
        redis.call('PUBLISH', ARGV[3], ARGV[2])
        return {1}
        """)
}
