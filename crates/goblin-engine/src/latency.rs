//! Latency: the latency monitor (Redis's latency.c: per-event time series
//! of spikes above `latency-monitor-threshold`, read by LATENCY LATEST,
//! HISTORY, GRAPH and DOCTOR) and the per-command latency histograms behind
//! LATENCY HISTOGRAM and INFO latencystats (`latency-tracking`).
//!
//! The histograms are HdrHistograms with Redis's configuration (values from
//! 1 ns to 1 s, two significant digits: 3072 counters), laid out and read
//! exactly as deps/hdr_histogram does, so percentiles and the reported
//! buckets are the ones Redis computes from the same samples. They are kept
//! per thread and per command, like the other per-command statistics
//! (`stats::CmdCounters`): a command records into its own thread's
//! histogram with a plain load and store, and the readers add the threads'
//! counts up.

use parking_lot::Mutex;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

// ---------------------------------------------------------------------------
// Histograms

/// LATENCY_HISTOGRAM_MIN_VALUE and _MAX_VALUE, in nanoseconds.
pub const HIST_MIN: u64 = 1;
pub const HIST_MAX: u64 = 1_000_000_000;
/// hdr_calculate_bucket_config(1, 1e9, 2): 256 sub-buckets (half: 128, a
/// magnitude of 7), unit magnitude 0, 23 buckets.
const SUB_BUCKET_HALF_COUNT_MAGNITUDE: u32 = 7;
const SUB_BUCKET_HALF_COUNT: i64 = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
const SUB_BUCKET_COUNT: i64 = 2 * SUB_BUCKET_HALF_COUNT;
const SUB_BUCKET_MASK: i64 = SUB_BUCKET_COUNT - 1;
const BUCKET_COUNT: usize = 23;
pub const COUNTS_LEN: usize = (BUCKET_COUNT + 1) * (SUB_BUCKET_HALF_COUNT as usize);

fn bucket_index(value: i64) -> i32 {
    let pow2ceiling = 64 - (value | SUB_BUCKET_MASK).leading_zeros() as i32;
    pow2ceiling - (SUB_BUCKET_HALF_COUNT_MAGNITUDE as i32 + 1)
}

fn sub_bucket_index(value: i64, bucket: i32) -> i64 {
    value >> bucket
}

fn counts_index(bucket: i32, sub_bucket: i64) -> usize {
    let base = ((bucket + 1) as i64) << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
    (base + sub_bucket - SUB_BUCKET_HALF_COUNT) as usize
}

fn value_at_index(index: usize) -> i64 {
    let mut bucket = (index as i64 >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1;
    let mut sub = (index as i64 & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT;
    if bucket < 0 {
        sub -= SUB_BUCKET_HALF_COUNT;
        bucket = 0;
    }
    sub << bucket
}

fn range_size(value: i64) -> i64 {
    let bucket = bucket_index(value);
    let sub = sub_bucket_index(value, bucket);
    let adjusted = if sub >= SUB_BUCKET_COUNT {
        bucket + 1
    } else {
        bucket
    };
    1 << adjusted
}

fn lowest_equivalent(value: i64) -> i64 {
    let bucket = bucket_index(value);
    sub_bucket_index(value, bucket) << bucket
}

fn highest_equivalent(value: i64) -> i64 {
    lowest_equivalent(value) + range_size(value) - 1
}

/// One thread's histogram of one command: written by that thread only.
pub struct Histogram {
    counts: Box<[AtomicU64]>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: (0..COUNTS_LEN).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Histogram {
    /// Redis's updateCommandLatencyHistogram: the duration clamped to the
    /// tracked range, then hdr_record_value. Only the owning thread
    /// writes, so the increment is a plain load and store.
    #[inline]
    pub fn record(&self, ns: u64) {
        let v = ns.clamp(HIST_MIN, HIST_MAX) as i64;
        let b = bucket_index(v);
        let slot = &self.counts[counts_index(b, sub_bucket_index(v, b))];
        slot.store(slot.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    pub fn reset(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// Adds this histogram's counts into `into`.
    pub fn add_to(&self, into: &mut Merged) {
        for (i, c) in self.counts.iter().enumerate() {
            let n = c.load(Ordering::Relaxed);
            into.counts[i] += n;
            into.total += n;
        }
    }
}

/// The threads' histograms of one command, added up.
pub struct Merged {
    pub counts: Vec<u64>,
    pub total: u64,
}

impl Default for Merged {
    fn default() -> Self {
        Merged {
            counts: vec![0; COUNTS_LEN],
            total: 0,
        }
    }
}

impl Merged {
    /// hdr_value_at_percentile, in nanoseconds.
    pub fn value_at_percentile(&self, percentile: f64) -> i64 {
        let requested = percentile.min(100.0);
        let mut at = ((requested / 100.0) * self.total as f64 + 0.5) as i64;
        at = at.max(1);
        let mut seen: i64 = 0;
        let mut value = 0;
        for (idx, &c) in self.counts.iter().enumerate() {
            seen += c as i64;
            if seen >= at {
                value = value_at_index(idx);
                break;
            }
        }
        if percentile == 0.0 {
            lowest_equivalent(value)
        } else {
            highest_equivalent(value)
        }
    }

    /// Redis's fillCommandCDF: hdr's logarithmic iterator from 1024 ns,
    /// base 2, as (microseconds, cumulative count) pairs, each bucket
    /// reported when its cumulative count grew.
    pub fn cdf(&self) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        let total = self.total as i64;
        let mut index: i64 = -1;
        let mut cumulative: i64 = 0;
        let mut value: i64 = 0;
        let mut highest: i64 = 0;
        let mut next_level: i64 = 1024;
        let mut next_level_lowest = lowest_equivalent(next_level);
        let mut previous: i64 = 0;
        let len = COUNTS_LEN as i64;
        // move_next: false past the last counter.
        let move_next =
            |index: &mut i64, cumulative: &mut i64, value: &mut i64, highest: &mut i64| {
                *index += 1;
                if *index >= len {
                    return false;
                }
                *cumulative += self.counts[*index as usize] as i64;
                let v = value_at_index(*index as usize);
                let b = bucket_index(v);
                let leq = sub_bucket_index(v, b) << b;
                *value = v;
                *highest = leq + range_size(v) - 1;
                true
            };
        loop {
            // log_iter_next
            let more = cumulative < total
                || (index < len && value_at_index((index + 1) as usize) > next_level_lowest);
            if !more {
                break;
            }
            loop {
                if value >= next_level_lowest {
                    next_level *= 2;
                    next_level_lowest = lowest_equivalent(next_level);
                    break;
                }
                if !move_next(&mut index, &mut cumulative, &mut value, &mut highest) {
                    break;
                }
            }
            if cumulative > previous {
                out.push((highest / 1000, cumulative));
            }
            previous = cumulative;
            if index >= len {
                break;
            }
        }
        out
    }
}

/// Redis's trimDoubleString over "%f": "50", "99.9".
pub fn percentile_label(p: f64) -> String {
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

// ---------------------------------------------------------------------------
// The latency monitor

/// LATENCY_TS_LEN: samples kept per event.
const TS_LEN: usize = 160;

#[derive(Clone, Copy, Default)]
struct Sample {
    /// Unix seconds; 0 = empty slot.
    time: i64,
    /// Milliseconds.
    latency: u64,
}

struct TimeSeries {
    idx: usize,
    max: u64,
    samples: [Sample; TS_LEN],
}

/// The latency spikes of every event, in the order events first occurred
/// (Redis keeps a dict; the order of LATENCY LATEST is not specified).
#[derive(Default)]
pub struct LatencyMonitor {
    events: Mutex<Vec<(String, Box<TimeSeries>)>>,
}

/// What analyzeLatencyForEvent computes.
struct EventStats {
    samples: u64,
    avg: u64,
    mad: u64,
    period: i64,
}

fn now_secs() -> i64 {
    (crate::util::time::now_ms() / 1000) as i64
}

impl LatencyMonitor {
    /// Redis's latencyAddSample: a new sample per second, the second's
    /// highest latency kept.
    pub fn add_sample(&self, event: &str, latency_ms: u64) {
        let now = now_secs();
        let mut events = self.events.lock();
        let pos = match events.iter().position(|(e, _)| e == event) {
            Some(p) => p,
            None => {
                events.push((
                    event.to_string(),
                    Box::new(TimeSeries {
                        idx: 0,
                        max: 0,
                        samples: [Sample::default(); TS_LEN],
                    }),
                ));
                events.len() - 1
            }
        };
        let ts = &mut events[pos].1;
        if latency_ms > ts.max {
            ts.max = latency_ms;
        }
        let prev = (ts.idx + TS_LEN - 1) % TS_LEN;
        if ts.samples[prev].time == now {
            if latency_ms > ts.samples[prev].latency {
                ts.samples[prev].latency = latency_ms;
            }
            return;
        }
        ts.samples[ts.idx] = Sample {
            time: now,
            latency: latency_ms,
        };
        ts.idx = (ts.idx + 1) % TS_LEN;
    }

    /// latencyAddSampleIfNeeded.
    pub fn add_if_needed(&self, threshold_ms: i64, event: &str, latency_ms: u64) {
        if threshold_ms > 0 && latency_ms >= threshold_ms as u64 {
            self.add_sample(event, latency_ms);
        }
    }

    /// LATENCY RESET: the events named (case-insensitively), or all.
    pub fn reset(&self, event: Option<&[u8]>) -> usize {
        let mut events = self.events.lock();
        let before = events.len();
        match event {
            None => events.clear(),
            Some(name) => events.retain(|(e, _)| !e.as_bytes().eq_ignore_ascii_case(name)),
        }
        before - events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.lock().is_empty()
    }

    /// LATENCY HISTORY: (time, latency) from the oldest sample on; None
    /// when the event never occurred.
    pub fn history(&self, event: &[u8]) -> Option<Vec<(i64, u64)>> {
        let events = self.events.lock();
        let (_, ts) = events.iter().find(|(e, _)| e.as_bytes() == event)?;
        Some(
            (0..TS_LEN)
                .map(|j| ts.samples[(ts.idx + j) % TS_LEN])
                .filter(|s| s.time != 0)
                .map(|s| (s.time, s.latency))
                .collect(),
        )
    }

    /// LATENCY LATEST: (event, time, latency, all-time max) of each event.
    pub fn latest(&self) -> Vec<(String, i64, u64, u64)> {
        self.events
            .lock()
            .iter()
            .map(|(e, ts)| {
                let last = ts.samples[(ts.idx + TS_LEN - 1) % TS_LEN];
                (e.clone(), last.time, last.latency, ts.max)
            })
            .collect()
    }

    /// LATENCY GRAPH (latencyCommandGenSparkeline); None without samples
    /// for the event.
    pub fn graph(&self, event: &[u8]) -> Option<String> {
        let events = self.events.lock();
        let (name, ts) = events.iter().find(|(e, _)| e.as_bytes() == event)?;
        let now = now_secs();
        let mut seq: Vec<(f64, String)> = Vec::new();
        let (mut min, mut max) = (0u64, 0u64);
        for j in 0..TS_LEN {
            let s = ts.samples[(ts.idx + j) % TS_LEN];
            if s.time == 0 {
                continue;
            }
            if seq.is_empty() {
                min = s.latency;
                max = s.latency;
            } else {
                max = max.max(s.latency);
                min = min.min(s.latency);
            }
            let elapsed = now - s.time;
            let label = if elapsed < 60 {
                format!("{elapsed}s")
            } else if elapsed < 3600 {
                format!("{}m", elapsed / 60)
            } else if elapsed < 3600 * 24 {
                format!("{}h", elapsed / 3600)
            } else {
                format!("{}d", elapsed / (3600 * 24))
            };
            seq.push((s.latency as f64, label));
        }
        let mut graph = format!(
            "{name} - high {max} ms, low {min} ms (all time high {} ms)\n",
            ts.max
        );
        graph.push_str(&"-".repeat(GRAPH_COLS));
        graph.push('\n');
        sparkline_render(&mut graph, &seq, GRAPH_COLS, 4);
        Some(graph)
    }

    fn analyze(ts: &TimeSeries, now: i64) -> EventStats {
        let mut st = EventStats {
            samples: 0,
            avg: 0,
            mad: 0,
            period: 0,
        };
        let mut sum = 0u64;
        for s in ts.samples.iter().filter(|s| s.time != 0) {
            st.samples += 1;
            sum += s.latency;
            if st.period == 0 || s.time < st.period {
                st.period = s.time;
            }
        }
        if let Some(avg) = sum.checked_div(st.samples) {
            st.avg = avg;
            st.period = now - st.period;
            if st.period == 0 {
                st.period = 1;
            }
            let dev: u64 = ts
                .samples
                .iter()
                .filter(|s| s.time != 0)
                .map(|s| (avg as i64 - s.latency as i64).unsigned_abs())
                .sum();
            st.mad = dev / st.samples;
        }
        st
    }

    /// LATENCY DOCTOR (createLatencyReport), with the advice that applies
    /// to Goblin's events.
    pub fn doctor(&self, settings: &DoctorSettings) -> String {
        let events = self.events.lock();
        let mut report = String::new();
        if events.is_empty() && settings.threshold_ms == 0 {
            report.push_str("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n");
            return report;
        }
        let now = now_secs();
        let mut advices = 0;
        let (mut slowlog_enabled, mut slowlog_tuning, mut slowlog_inspect) = (false, false, false);
        let (mut scheduler, mut hz, mut large_objects, mut mass_eviction) =
            (false, false, false, false);
        let (mut local_disk, mut ssd, mut writeback, mut relax_fsync) =
            (false, false, false, false);
        for (n, (event, ts)) in events.iter().enumerate() {
            if n == 0 {
                report.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
            }
            let st = Self::analyze(ts, now);
            let _ = write!(
                report,
                "{}. {}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
                n + 1,
                event,
                st.samples,
                st.avg,
                st.mad,
                st.period as f64 / st.samples as f64,
                ts.max
            );
            match event.as_str() {
                "command" => {
                    if settings.slowlog_slower_than < 0 {
                        slowlog_enabled = true;
                        advices += 1;
                    } else if settings.slowlog_slower_than / 1000 > settings.threshold_ms {
                        slowlog_tuning = true;
                        advices += 1;
                    }
                    slowlog_inspect = true;
                    large_objects = true;
                    advices += 2;
                }
                "fast-command" => {
                    scheduler = true;
                    advices += 1;
                }
                "aof-write-alone" => {
                    local_disk = true;
                    writeback = true;
                    ssd = true;
                    advices += 3;
                }
                "aof-fsync-always" => {
                    relax_fsync = true;
                    advices += 1;
                }
                "expire-cycle" => {
                    hz = true;
                    large_objects = true;
                    advices += 2;
                }
                "eviction-del" => {
                    large_objects = true;
                    advices += 1;
                }
                "eviction-cycle" => {
                    mass_eviction = true;
                    advices += 1;
                }
                _ => {}
            }
            report.push('\n');
        }
        if events.is_empty() && advices == 0 {
            report.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
            return report;
        }
        if advices == 0 {
            report.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
            return report;
        }
        report.push_str("\nI have a few advices for you:\n\n");
        let t = settings.threshold_ms.max(0) as u64 * 1000;
        if slowlog_enabled {
            let _ = writeln!(report, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {t}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.");
        }
        if slowlog_tuning {
            let _ = writeln!(report, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {t}'.");
        }
        if slowlog_inspect {
            report.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
        }
        if scheduler {
            report.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
        }
        if local_disk {
            report.push_str("- It is strongly advised to use local disks for persistence, especially if you are using AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n");
        }
        if ssd {
            report.push_str("- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF log rewriting (resulting in smaller memory usage). With extremely high write load SSD disks can be a good option. However Redis should perform reasonably with high load using normal disks. Use this advice as a last resort.\n");
        }
        if writeback {
            report.push_str("- Mounting ext3/4 filesystems with data=writeback can provide a performance boost compared to data=ordered, however this mode of operation provides less guarantees, and sometimes it can happen that after a hard crash the AOF file will have a half-written command at the end and will require to be repaired before Redis restarts.\n");
        }
        if relax_fsync && settings.fsync_always {
            report.push_str("- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n");
        }
        if hz && settings.hz < 100 {
            report.push_str("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
        }
        if large_objects {
            report.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
        }
        if mass_eviction {
            report.push_str("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n");
        }
        report
    }
}

/// The settings LATENCY DOCTOR's advice depends on.
pub struct DoctorSettings {
    pub threshold_ms: i64,
    pub slowlog_slower_than: i64,
    pub hz: i64,
    pub fsync_always: bool,
}

/// LATENCY_GRAPH_COLS.
const GRAPH_COLS: usize = 80;

/// Redis's sparklineRender with SPARKLINE_FILL: `rows` rows of bars, then
/// the labels written vertically below, `columns` samples per block.
fn sparkline_render(out: &mut String, seq: &[(f64, String)], columns: usize, rows: usize) {
    let mut j = 0;
    while j < seq.len() {
        let sublen = (seq.len() - j).min(columns);
        if j != 0 {
            out.push('\n');
        }
        sparkline_range(out, seq, rows, j, sublen);
        j += columns;
    }
}

fn sparkline_range(
    out: &mut String,
    seq: &[(f64, String)],
    rows: usize,
    offset: usize,
    len: usize,
) {
    const FILL: &[u8] = b"_o#";
    let charset_len = FILL.len() as i64;
    let min = seq.iter().map(|s| s.0).fold(f64::INFINITY, f64::min);
    let max = seq.iter().map(|s| s.0).fold(f64::NEG_INFINITY, f64::max);
    let mut relmax = max - min;
    if relmax == 0.0 {
        relmax = 1.0;
    }
    let steps = charset_len * rows as i64;
    let labels = seq.iter().any(|s| !s.1.is_empty());
    let mut row = 0usize;
    loop {
        let mut again = false;
        let mut chars = vec![b' '; len];
        for (j, slot) in chars.iter_mut().enumerate() {
            let (value, label) = &seq[j + offset];
            let relval = value - min;
            let mut step = ((relval * steps as f64) as i64 as f64 / relmax) as i64;
            step = step.clamp(0, steps - 1);
            if row < rows {
                let idx = step - ((rows - row - 1) as i64 * charset_len);
                again = true;
                if (0..charset_len).contains(&idx) {
                    *slot = FILL[idx as usize];
                } else if idx >= charset_len {
                    *slot = b'|';
                }
            } else {
                // One blank row between the bars and the labels.
                if labels && row - rows < 1 {
                    again = true;
                    break;
                }
                let label_char = row - rows - 1;
                if label.len() > label_char {
                    again = true;
                    *slot = label.as_bytes()[label_char];
                }
            }
        }
        if !again {
            break;
        }
        row += 1;
        out.push_str(&String::from_utf8_lossy(&chars));
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_layout_matches_hdr() {
        // Values below 256 have a counter each; above, counters cover
        // ranges that double per bucket.
        assert_eq!(counts_index(bucket_index(1), sub_bucket_index(1, 0)), 1);
        assert_eq!(value_at_index(255), 255);
        assert_eq!(highest_equivalent(1024), 1031);
        let b = bucket_index(HIST_MAX as i64);
        assert!(counts_index(b, sub_bucket_index(HIST_MAX as i64, b)) < COUNTS_LEN);
    }

    #[test]
    fn percentiles_and_cdf() {
        let h = Histogram::default();
        for _ in 0..99 {
            h.record(1_000);
        }
        h.record(50_000_000);
        let mut m = Merged::default();
        h.add_to(&mut m);
        assert_eq!(m.total, 100);
        assert_eq!(m.value_at_percentile(50.0), 1_003);
        assert!(m.value_at_percentile(100.0) >= 50_000_000);
        let cdf = m.cdf();
        assert_eq!(cdf.first(), Some(&(1, 99)));
        assert_eq!(cdf.last().map(|c| c.1), Some(100));
        assert_eq!(percentile_label(99.9), "99.9");
        assert_eq!(percentile_label(50.0), "50");
    }
}
