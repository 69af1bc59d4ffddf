//! The Lua scripts the remote driver runs on a Redis or Valkey that has no
//! GOBLIN.* commands. Each does what its command does, in one atomic step
//! (a script runs to its end with nothing in between), and checks
//! everything that could fail before its first write, because Redis does
//! not roll a script back.
//!
//! Lua's numbers are doubles, exact only up to 2^53: a script never returns
//! a counter through a Lua number. It returns the stored text (GET), which
//! the driver parses as i64.

/// GOBLIN.DECRBY: `KEYS[1]` the counter, `ARGV[1]` the decrement.
///
/// DECRBY is exact for every decrement but i64::MIN, which it refuses
/// because it negates its argument. value - i64::MIN is value + 2^63, in
/// range exactly when the value is negative; it is added in two steps that
/// cannot overflow (value + i64::MAX, then + 1). A negative integer is
/// recognised by its '-' (Redis's string2ll refuses "-0"), and INCRBY
/// itself refuses a value that is not an integer before writing anything.
pub const DECREMENT: &str = r#"
if ARGV[1] ~= '-9223372036854775808' then
  redis.call('DECRBY', KEYS[1], ARGV[1])
  return redis.call('GET', KEYS[1])
end
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == '-' then
  redis.call('INCRBY', KEYS[1], '9223372036854775807')
  redis.call('INCRBY', KEYS[1], '1')
  return redis.call('GET', KEYS[1])
end
if v and not (v == '0' or (string.match(v, '^[1-9]%d*$')
    and (#v < 19 or (#v == 19 and v <= '9223372036854775807')))) then
  return redis.error_reply('ERR value is not an integer or out of range')
end
return redis.error_reply('ERR increment or decrement would overflow')
"#;

/// GOBLIN.INCRTTL: `KEYS[1]` the counter, `ARGV[1]` the increment,
/// `ARGV[2]` the TTL in milliseconds.
///
/// INCRBY is the only step that can fail (not an integer, overflow, wrong
/// type), and it fails before changing anything. The driver has checked
/// the TTL (1..=2^53-1 ms), so PEXPIRE cannot fail after it, nor delete
/// the key on the spot as a TTL <= 0 would. NX gives a TTL only to a key
/// that has none: a new counter, or one that never expired; an expiring one
/// keeps its deadline. The reply is [value as text, PTTL].
pub const INCREMENT_WITH_TTL: &str = r#"
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2], 'NX')
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
"#;
