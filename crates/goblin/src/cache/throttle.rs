//! [`Cache::throttle`]: rate limiting with the generic cell rate algorithm
//! (GCRA), as the redis-cell module's CL.THROTTLE defines it.
//!
//! The embedded store and goblin-server have CL.THROTTLE built in; on a
//! Redis or Valkey without it the remote driver runs [`GCRA`], the same
//! algorithm as one Lua script. Both keep a limiter's state the same way:
//! one string key holding its theoretical arrival time (TAT) in Unix
//! nanoseconds, expiring when the limiter is back to full capacity, so a
//! redis-cell client and this cache can share limiters.

#[cfg(feature = "embedded")]
use super::embedded::EmbeddedDriver;
#[cfg(feature = "remote")]
use super::remote::{RemoteDriver, Script};
use super::{Cache, Error, Key};
use std::time::Duration;

/// The longest span a limiter may cover: the period of one action times
/// `max_burst + 1`, and times the quantity of one call, are each at most
/// 100 years (365-day ones). The Lua form counts Unix time in microseconds
/// in Lua's numbers (doubles, exact up to 2^53, about 285 years from 1970),
/// so today plus such a span stays exact there, as it stays within i64
/// nanoseconds in CL.THROTTLE.
pub const MAX_THROTTLE_SPAN: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// What [`Cache::throttle`] decided, as CL.THROTTLE replies it (times in
/// whole seconds, rounded up when there is a millisecond or more beyond
/// them, so that a client waiting that long is not early).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Throttle {
    /// True when the action was refused; nothing was counted then.
    pub limited: bool,
    /// The limiter's capacity: `max_burst + 1`.
    pub limit: u64,
    /// How many more actions fit now (after this one, when it was
    /// allowed).
    pub remaining: u64,
    /// When refused: how long until the same call would be allowed. `None`
    /// when it was allowed, and when it can never be (its quantity is
    /// larger than the limit).
    pub retry_after: Option<Duration>,
    /// How long until the limiter is back to full capacity (then its key
    /// has expired).
    pub reset_after: Duration,
}

/// CL.THROTTLE as a Lua script, for a server without the command:
/// `KEYS[1]` the limiter, `ARGV` max_burst, count, period (seconds) and
/// quantity, which [`Cache::throttle`] has checked.
///
/// It is redis-cell's GCRA in microseconds (Lua's numbers are doubles,
/// exact to 2^53: Unix time in nanoseconds is not, in microseconds it is),
/// storing the TAT in nanoseconds as redis-cell does, with its TTL and its
/// rounding of the replies. A stored value that is not a TAT (another
/// type, or text that is not an integer) is refused before anything is
/// written, as CL.THROTTLE refuses it.
#[cfg(feature = "remote")]
pub(super) const GCRA: &str = r#"
local burst, count, period, qty = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local stored = redis.pcall('GET', KEYS[1])
if type(stored) == 'table' or (stored and not string.match(stored, '^[+-]?%d+$')) then
  return redis.error_reply('Cell error: invalid digit found in string')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ei = math.floor(period * 1000000 / count)
local limit = burst + 1
local dvt = ei * limit
local inc = ei * qty
local tat = now
if stored then tat = tonumber(string.sub(stored, 1, -4)) or 0 end
local new_tat = math.max(now, tat) + inc
local diff = now - (new_tat - dvt)
local limited, ttl, retry = 0, 0, -1000000
if diff < 0 then
  limited = 1
  if inc <= dvt then retry = -diff end
  ttl = tat - now
else
  ttl = new_tat - now
  local ms = math.floor(ttl / 1000)
  if ms > 0 then redis.call('SET', KEYS[1], string.format('%d000', new_tat), 'PX', ms)
  else redis.call('DEL', KEYS[1]) end
end
local function trunc(x) if x >= 0 then return math.floor(x) end return -math.floor(-x) end
local nxt = dvt - ttl
local remaining = 0
if nxt > -ei then remaining = trunc(nxt / ei) end
local function secs(us)
  local w = trunc(us / 1000000)
  local ms = trunc((us - w * 1000000) / 1000)
  if ms > 0 then w = w + 1 end
  return w
end
return {limited, limit, remaining, secs(retry), secs(ttl)}
"#;

#[cfg(feature = "remote")]
fn gcra_script() -> &'static Script {
    static S: std::sync::OnceLock<Script> = std::sync::OnceLock::new();
    S.get_or_init(|| Script::new(GCRA))
}

impl Cache {
    /// Rate-limits an action with the generic cell rate algorithm, in one
    /// atomic step: CL.THROTTLE `key max_burst count_per_period period
    /// quantity`, as redis-cell defines it.
    ///
    /// The limiter allows `count_per_period` actions per `period` on
    /// average, and bursts of up to `max_burst + 1` at once; each call
    /// asks for `quantity` actions (0 asks without taking any). Unlike a
    /// fixed window ([`Cache::increment_with_ttl`]), capacity comes back
    /// steadily, one action every `period / count_per_period`, so there is
    /// no window edge at which twice the limit passes. A refused call
    /// changes nothing.
    ///
    /// `period` is a whole number of seconds (CL.THROTTLE's unit), at least
    /// one; `count_per_period` is at least one, and at most one action per
    /// microsecond; the spans are at most [`MAX_THROTTLE_SPAN`]. Otherwise
    /// [`Error::InvalidRate`], and nothing is sent. A key holding anything
    /// but a limiter's state (another type, text that is not an integer)
    /// is [`Error::NotInteger`] and stays unchanged.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), goblin::cache::Error> {
    /// # use goblin::cache::{Cache, Key};
    /// # use std::time::Duration;
    /// let cache = Cache::embedded(goblin::Store::open_in_memory());
    /// let exports = Key::<i64>::new("export-limiter.v1:account-7");
    /// let minute = Duration::from_secs(60);
    /// // 10 a minute, in bursts of up to 3.
    /// for remaining in [2, 1, 0] {
    ///     let t = cache.throttle(&exports, 2, 10, minute, 1).await?;
    ///     assert!(!t.limited);
    ///     assert_eq!((t.limit, t.remaining), (3, remaining));
    /// }
    /// let t = cache.throttle(&exports, 2, 10, minute, 1).await?;
    /// assert!(t.limited);
    /// // One action comes back every 6 s.
    /// assert!(t.retry_after.unwrap() <= Duration::from_secs(6));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn throttle(
        &self,
        key: &Key<i64>,
        max_burst: u64,
        count_per_period: u64,
        period: Duration,
        quantity: u64,
    ) -> Result<Throttle, Error> {
        check_rate(max_burst, count_per_period, period, quantity)?;
        let rate = Rate {
            max_burst,
            count_per_period,
            period,
            quantity,
        };
        match self.driver.throttle(key.name(), &rate).await {
            Ok(t) => Ok(t),
            // redis-cell's parse errors of the stored state (the
            // arguments were checked here).
            Err(Error::Server(text)) if text.starts_with("Cell error:") => Err(Error::NotInteger),
            Err(e) => Err(e),
        }
    }
}

/// A limiter's rate, as [`Cache::throttle`] takes it (checked there), for
/// [`Driver::throttle`](super::Driver::throttle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rate {
    /// The burst beyond the one action: the limit is `max_burst + 1`.
    pub max_burst: u64,
    /// How many actions per `period`.
    pub count_per_period: u64,
    /// A whole number of seconds, at least one.
    pub period: Duration,
    /// How many actions this call takes.
    pub quantity: u64,
}

impl Rate {
    /// CL.THROTTLE's four arguments after the key.
    fn args(&self) -> [String; 4] {
        [
            self.max_burst.to_string(),
            self.count_per_period.to_string(),
            self.period.as_secs().to_string(),
            self.quantity.to_string(),
        ]
    }
}

/// CL.THROTTLE on the embedded store, which has it built in.
#[cfg(feature = "embedded")]
pub(super) async fn embedded(
    d: &EmbeddedDriver,
    key: &[u8],
    rate: &Rate,
) -> Result<Throttle, Error> {
    let args = rate.args();
    let argv = [
        &b"CL.THROTTLE"[..],
        key,
        args[0].as_bytes(),
        args[1].as_bytes(),
        args[2].as_bytes(),
        args[3].as_bytes(),
    ];
    let reply = d.run(&argv).await?;
    let items = match &reply {
        crate::Reply::Array(items) => Some(items.as_slice()),
        _ => None,
    };
    decide(items, &reply, |i| match i {
        crate::Reply::Int(n) => Some(*n),
        _ => None,
    })
}

/// CL.THROTTLE where the server has it, [`GCRA`] by Lua otherwise.
#[cfg(feature = "remote")]
pub(super) async fn remote<C>(
    d: &RemoteDriver<C>,
    key: &[u8],
    rate: &Rate,
) -> Result<Throttle, Error>
where
    C: redis::aio::ConnectionLike + Clone + Send + Sync + 'static,
{
    let steps = d.steps();
    let args = rate.args();
    let args: [&[u8]; 4] = [
        args[0].as_bytes(),
        args[1].as_bytes(),
        args[2].as_bytes(),
        args[3].as_bytes(),
    ];
    let reply = if steps.throttle {
        d.query(redis::cmd("CL.THROTTLE").arg(key).arg(&args[..]))
            .await?
    } else if steps.scripts {
        d.eval(gcra_script(), key, &args).await?
    } else {
        return Err(Error::Unsupported(
            "a throttle needs CL.THROTTLE or scripting",
        ));
    };
    let items = match &reply {
        redis::Value::Array(items) => Some(items.as_slice()),
        _ => None,
    };
    decide(items, &reply, |i| match i {
        redis::Value::Int(n) => Some(*n),
        _ => None,
    })
}

/// The decision in a reply of five integers (`items`, read by `int`), on
/// either driver's reply type; anything else is a server error naming it.
#[cfg(any(feature = "embedded", feature = "remote"))]
fn decide<T>(
    items: Option<&[T]>,
    reply: &impl std::fmt::Debug,
    int: impl Fn(&T) -> Option<i64>,
) -> Result<Throttle, Error> {
    items
        .and_then(|items| items.iter().map(int).collect::<Option<Vec<i64>>>())
        .and_then(|fields| <[i64; 5]>::try_from(fields).ok())
        .map(decision)
        .ok_or_else(|| Error::Server(format!("unexpected reply {reply:?}")))
}

/// The reply's fields: limited, limit, remaining, retry_after (-1 for
/// none), reset_after.
fn decision([limited, limit, remaining, retry_after, reset_after]: [i64; 5]) -> Throttle {
    let secs = |n: i64| Duration::from_secs(n.max(0) as u64);
    Throttle {
        limited: limited != 0,
        limit: limit.max(0) as u64,
        remaining: remaining.max(0) as u64,
        retry_after: (retry_after >= 0 && limited != 0).then(|| secs(retry_after)),
        reset_after: secs(reset_after),
    }
}

/// The arguments every form computes exactly (see [`MAX_THROTTLE_SPAN`]).
fn check_rate(max_burst: u64, count: u64, period: Duration, quantity: u64) -> Result<(), Error> {
    if period.subsec_nanos() != 0 || period.as_secs() == 0 {
        return Err(Error::InvalidRate(
            "the period must be a whole number of seconds, at least one",
        ));
    }
    if count == 0 || count > period.as_secs().saturating_mul(1_000_000) {
        return Err(Error::InvalidRate(
            "the count per period must be at least one, and at most one per microsecond",
        ));
    }
    let emission = period.as_nanos() / count as u128;
    let max = MAX_THROTTLE_SPAN.as_nanos();
    if emission * (max_burst as u128 + 1) > max || emission * quantity as u128 > max {
        return Err(Error::InvalidRate(
            "the burst or the quantity spans more than MAX_THROTTLE_SPAN",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn rates_every_form_computes_exactly_are_accepted() {
        assert!(check_rate(0, 1, Duration::from_secs(1), 0).is_ok());
        assert!(check_rate(99, 1_000_000, Duration::from_secs(1), 1).is_ok());
        // 100 years of one action a year.
        let year = Duration::from_secs(365 * 24 * 3600);
        assert!(check_rate(99, 1, year, 100).is_ok());
        for (burst, count, period, quantity) in [
            (0, 1, Duration::ZERO, 1),
            (0, 1, Duration::from_millis(1500), 1),
            (0, 0, MINUTE, 1),
            (0, 60_000_001, MINUTE, 1),
            (100, 1, year, 1),
            (0, 1, year, 101),
            (u64::MAX, 1, MINUTE, 1),
        ] {
            assert!(
                matches!(
                    check_rate(burst, count, period, quantity),
                    Err(Error::InvalidRate(_))
                ),
                "{burst} {count} {period:?} {quantity}"
            );
        }
    }

    #[test]
    fn replies_become_decisions() {
        let allowed = decision([0, 5, 4, -1, 1]);
        assert!(!allowed.limited);
        assert_eq!((allowed.limit, allowed.remaining), (5, 4));
        assert_eq!(allowed.retry_after, None);
        assert_eq!(allowed.reset_after, Duration::from_secs(1));
        let refused = decision([1, 5, 0, 3, 5]);
        assert!(refused.limited);
        assert_eq!(refused.retry_after, Some(Duration::from_secs(3)));
        // Larger than the burst: refused, and never allowed.
        assert_eq!(decision([1, 5, 0, -1, 0]).retry_after, None);
    }
}
