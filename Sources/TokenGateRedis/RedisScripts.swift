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
    /// when taken, `{0, 0}` when another holds it. The two keys must share a slot (a context's hash tag).
    static let valueOrLock = try! RESPScript(
        """
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

    /// Records an end (ARGV[2] the time) or a lift (ARGV[2] empty) in the list KEYS[1] and publishes ARGV[3] on
    /// the channel ARGV[4], in one step: no replica sees the message without the list having it.
    static let publishEnded = try! RESPScript(
        """
        if ARGV[2] == '' then
          redis.call('HDEL', KEYS[1], ARGV[1])
        else
          redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
        end
        return redis.call('PUBLISH', ARGV[4], ARGV[3])
        """)
}
