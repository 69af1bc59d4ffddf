//! The geo family (Redis's geo.c): GEOADD, GEOPOS, GEOHASH, GEODIST, and
//! the area searches GEORADIUS, GEORADIUSBYMEMBER (with their _RO forms),
//! GEOSEARCH and GEOSEARCHSTORE.
//!
//! A geo set is an ordinary sorted set (`keyspace::zset::ZSet`) whose
//! scores are 52-bit geohashes; the encoding and the cell search are in
//! `keyspace::geo`. GEOADD is ZADD with the positions encoded, and is
//! logged to the append-only file as that ZADD, as Redis propagates it.
//! The STORE forms write through the sorted set family's `store_result`.
//!
//! All searches share one parser (`parse_search`, Redis's
//! georadiusGeneric), which reads the source set for FROMMEMBER and
//! GEORADIUSBYMEMBER's member while it parses, so that errors come in
//! Redis's order; `search` finds, sorts and cuts the points; the handlers
//! reply or store. Replies print distances with four decimals and
//! coordinates as Redis's long double "human" form.

use crate::command::args::Args;
use crate::command::spec::KeySpec;
use crate::command::spec::{flag, kflag, BeginSearch, CmdResult, CommandSpec, FindKeys, Group};
use crate::command::Ctx;
use crate::commands::zsets::{read_zset, read_zset_and_out, store_result, zadd, ZAddOptions};
use crate::engine::Engine;
use crate::keyspace::geo::{self, GeoPoint, Shape, ShapeKind};
use crate::keyspace::{CompactBytes, ShardLocks, ZSet};
use crate::protocol::ReplyWriter;
use crate::util::number::{arg_i64, parse_f64, LongDouble};
use crate::util::sort::{c_qsort, pqsort};
use crate::Error;

/// C's "%f".
fn format_f(v: f64) -> String {
    let mut buf = [0u8; 400];
    // SAFETY: the format consumes one double; snprintf never writes past
    // the buffer's size and the largest double needs 316 bytes with "%f".
    let n = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%f".as_ptr(),
            v,
        )
    };
    String::from_utf8_lossy(&buf[..(n.max(0) as usize).min(buf.len() - 1)]).into_owned()
}

/// Redis's getDoubleFromObjectOrReply with an optional message of its own.
fn arg_double(arg: &[u8], msg: Option<&'static str>) -> Result<f64, Error> {
    parse_f64(arg).ok_or_else(|| match msg {
        Some(m) => Error::err(m),
        None => Error::NOT_FLOAT,
    })
}

/// A longitude and a latitude argument (extractLongLatOrReply).
fn parse_lon_lat(lon: &[u8], lat: &[u8]) -> Result<[f64; 2], Error> {
    let xy = [arg_double(lon, None)?, arg_double(lat, None)?];
    #[allow(clippy::manual_range_contains)] // Redis's comparisons
    if xy[0] < geo::LONG_MIN
        || xy[0] > geo::LONG_MAX
        || xy[1] < geo::LAT_MIN
        || xy[1] > geo::LAT_MAX
    {
        return Err(Error::err(format_args!(
            "invalid longitude,latitude pair {},{}",
            format_f(xy[0]),
            format_f(xy[1])
        )));
    }
    Ok(xy)
}

/// A unit's size in meters (extractUnitOrReply).
fn parse_unit(unit: &[u8]) -> Result<f64, Error> {
    match Args::new(&[unit]).flag_of(&["M", "KM", "FT", "MI"]) {
        Some(i) => Ok([1.0, 1000.0, 0.3048, 1609.34][i]),
        None => Err(Error::err(
            "unsupported unit provided. please use M, KM, FT, MI",
        )),
    }
}

/// `radius unit` (extractDistanceOrReply): the radius and the unit's size.
fn parse_radius(radius: &[u8], unit: &[u8]) -> Result<(f64, f64), Error> {
    let r = arg_double(radius, Some("need numeric radius"))?;
    if r < 0.0 {
        return Err(Error::err("radius cannot be negative"));
    }
    Ok((r, parse_unit(unit)?))
}

/// `width height unit` (extractBoxOrReply).
fn parse_box(width: &[u8], height: &[u8], unit: &[u8]) -> Result<(f64, f64, f64), Error> {
    let w = arg_double(width, Some("need numeric width"))?;
    let h = arg_double(height, Some("need numeric height"))?;
    if h < 0.0 || w < 0.0 {
        return Err(Error::err("height or width cannot be negative"));
    }
    Ok((w, h, parse_unit(unit)?))
}

/// The position of a member (longLatFromMember), or Redis's error.
fn member_position(z: &ZSet, member: &[u8]) -> Result<[f64; 2], Error> {
    z.score(member)
        .map(geo::decode_score)
        .ok_or_else(|| Error::err("could not decode requested zset member"))
}

/// Redis's addReplyDoubleDistance (fixedpoint_d2string with 4 digits):
/// llrint(d * 10000), then the digits with a point before the last four.
fn format_distance(d: f64) -> String {
    let scaled = d * 10000.0;
    // llrint: round half to even; what it cannot convert is LLONG_MIN.
    // (NaN is in no range.)
    let v = if !(-9223372036854775808.0..9223372036854775808.0).contains(&scaled) {
        i64::MIN
    } else {
        scaled.round_ties_even() as i64
    };
    if d == 0.0 {
        return "0.0000".to_string();
    }
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    format!("{sign}{}.{:04}", a / 10000, a % 10000)
}

/// A coordinate as addReplyHumanLongDouble prints it ("%.17Lf", trailing
/// zeroes removed), a RESP3 double or a RESP2 bulk string.
fn reply_coordinate(out: &mut ReplyWriter, v: f64) {
    out.double_text(&LongDouble::from_f64(v).to_human_string());
}

// ---------------------------------------------------------------------------
// GEOADD.

/// GEOADD's options and the (score, member) pairs for ZADD: Redis's
/// geoaddCommand turns its arguments into a ZADD. `opts_end` is the index
/// of the first longitude.
pub struct GeoAdd<'a> {
    pub opts: ZAddOptions,
    pub opts_end: usize,
    pub pairs: Vec<(u64, &'a [u8])>,
}

/// Parses `GEOADD key [NX|XX] [CH] (longitude latitude member)...`
pub fn parse_geoadd<'a>(args: &[&'a [u8]]) -> Result<GeoAdd<'a>, Error> {
    let mut opts = ZAddOptions::default();
    // The flags come first, in any order and repeated at will; the first
    // other argument starts the positions.
    let mut a = Args::new(&args[2..]);
    loop {
        if a.flag("NX") {
            opts.flags.nx = true;
        } else if a.flag("XX") {
            opts.flags.xx = true;
        } else if a.flag("CH") {
            opts.ch = true;
        } else {
            break;
        }
    }
    let (i, rest) = (2 + a.taken(), a.rest());
    if rest.len() % 3 != 0 || (opts.flags.xx && opts.flags.nx) {
        return Err(Error::SYNTAX);
    }
    let mut pairs = Vec::with_capacity(rest.len() / 3);
    for t in rest.chunks(3) {
        let [lon, lat] = parse_lon_lat(t[0], t[1])?;
        let score = geo::encode_wgs84(lon, lat).expect("checked coordinates");
        pairs.push((score, t[2]));
    }
    // ZADD refuses an empty list of pairs (GEOADD key CH CH CH).
    if pairs.is_empty() {
        return Err(Error::SYNTAX);
    }
    Ok(GeoAdd {
        opts,
        opts_end: i,
        pairs,
    })
}

fn geoadd_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let req = parse_geoadd(args)?;
    let pairs: Vec<(f64, &[u8])> = req.pairs.iter().map(|&(s, m)| (s as f64, m)).collect();
    let r = zadd(ctx, args[1], &req.opts, &pairs)?;
    // Logged as the ZADD it stands for, with the options as given.
    if r.added + r.updated > 0 {
        let scores: Vec<String> = req.pairs.iter().map(|(s, _)| s.to_string()).collect();
        let mut argv: Vec<&[u8]> = vec![b"zadd"];
        argv.extend_from_slice(&args[1..req.opts_end]);
        for ((_, member), score) in req.pairs.iter().zip(&scores) {
            argv.push(score.as_bytes());
            argv.push(member);
        }
        ctx.propagate_as(&argv);
    } else {
        ctx.propagate_nothing();
    }
    let n = if req.opts.ch {
        r.added + r.updated
    } else {
        r.added
    };
    ctx.out.int(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------
// GEOPOS, GEOHASH, GEODIST.

fn geopos_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (z, out) = read_zset_and_out(ctx, args[1]);
    let z = z?;
    out.array(args.len() - 2);
    for m in &args[2..] {
        match z.and_then(|z| z.score(m)) {
            Some(score) => {
                let [lon, lat] = geo::decode_score(score);
                out.array(2);
                reply_coordinate(out, lon);
                reply_coordinate(out, lat);
            }
            None => out.null_array(),
        }
    }
    Ok(())
}

fn geohash_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (z, out) = read_zset_and_out(ctx, args[1]);
    let z = z?;
    out.array(args.len() - 2);
    for m in &args[2..] {
        match z.and_then(|z| z.score(m)) {
            Some(score) => out.bulk(&geo::standard_geohash(score)),
            None => out.null(),
        }
    }
    Ok(())
}

/// GEODIST: the distance between two members in the unit's terms, None
/// when the key or a member is missing.
pub fn geodist(
    ctx: &mut Ctx,
    key: &[u8],
    a: &[u8],
    b: &[u8],
    to_meters: f64,
) -> Result<Option<f64>, Error> {
    let Some(z) = read_zset(ctx, key)? else {
        return Ok(None);
    };
    let (Some(s1), Some(s2)) = (z.score(a), z.score(b)) else {
        return Ok(None);
    };
    let [x1, y1] = geo::decode_score(s1);
    let [x2, y2] = geo::decode_score(s2);
    Ok(Some(geo::distance(x1, y1, x2, y2) / to_meters))
}

fn geodist_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    // The unit is checked before the key, as Redis does.
    let to_meters = match args.len() {
        4 => 1.0,
        5 => parse_unit(args[4])?,
        _ => return Err(Error::SYNTAX),
    };
    match geodist(ctx, args[1], args[2], args[3], to_meters)? {
        Some(d) => ctx.out.bulk(format_distance(d).as_bytes()),
        None => ctx.out.null(),
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The searches.

/// Which search command runs (Redis's RADIUS_* / GEOSEARCH* flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchForm {
    /// GEORADIUS key lon lat radius unit ..., `store` unless _RO.
    Radius { store: bool },
    /// GEORADIUSBYMEMBER key member radius unit ..., `store` unless _RO.
    RadiusByMember { store: bool },
    /// GEOSEARCH key ...
    Search,
    /// GEOSEARCHSTORE dst key ...
    SearchStore,
}

impl SearchForm {
    /// The index of the source key.
    pub fn source(self) -> usize {
        if self == SearchForm::SearchStore {
            2
        } else {
            1
        }
    }

    fn accepts_store(self) -> bool {
        matches!(
            self,
            SearchForm::Radius { store: true } | SearchForm::RadiusByMember { store: true }
        )
    }

    fn is_geosearch(self) -> bool {
        matches!(self, SearchForm::Search | SearchForm::SearchStore)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Unsorted,
    Asc,
    Desc,
}

/// A parsed search.
#[derive(Clone, Debug)]
pub struct SearchRequest<'a> {
    /// The area; its centre is unresolved (zero) when the source set does
    /// not exist, which ends the search before it is used.
    pub shape: Shape,
    pub order: Order,
    /// At most this many results; 0 for all.
    pub count: usize,
    /// COUNT ... ANY: stop at the first `count` points found.
    pub any: bool,
    pub withdist: bool,
    pub withhash: bool,
    pub withcoord: bool,
    /// STORE / STOREDIST key, or GEOSEARCHSTORE's destination.
    pub store: Option<&'a [u8]>,
    /// Store distances rather than geohashes as scores.
    pub storedist: bool,
}

/// Redis's georadiusGeneric argument parsing, `z` being the source set
/// (already type-checked). A member center is looked up as it is parsed.
pub fn parse_search<'a>(
    args: &[&'a [u8]],
    form: SearchForm,
    z: Option<&ZSet>,
) -> Result<SearchRequest<'a>, Error> {
    let mut req = SearchRequest {
        shape: Shape {
            kind: ShapeKind::Radius(0.0),
            xy: [0.0, 0.0],
            conversion: 0.0,
        },
        order: Order::Unsorted,
        count: 0,
        any: false,
        withdist: false,
        withhash: false,
        withcoord: false,
        store: None,
        storedist: false,
    };
    let base = match form {
        SearchForm::Radius { .. } => {
            req.shape.xy = parse_lon_lat(args[2], args[3])?;
            let (r, conversion) = parse_radius(args[4], args[5])?;
            req.shape.kind = ShapeKind::Radius(r);
            req.shape.conversion = conversion;
            6
        }
        SearchForm::RadiusByMember { .. } => {
            // Without a source set neither the member nor the radius is
            // looked at: the options still decide the reply.
            if let Some(z) = z {
                req.shape.xy = member_position(z, args[2])?;
                let (r, conversion) = parse_radius(args[3], args[4])?;
                req.shape.kind = ShapeKind::Radius(r);
                req.shape.conversion = conversion;
            }
            5
        }
        SearchForm::Search => 2,
        SearchForm::SearchStore => {
            req.store = Some(args[1]);
            3
        }
    };

    let geosearch = form.is_geosearch();
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    // Each option may repeat, the last one counting; the centre and the
    // shape of GEOSEARCH may repeat but not change kind.
    let mut a = Args::new(&args[base.min(args.len())..]);
    while !a.is_empty() {
        if a.flag("WITHDIST") {
            req.withdist = true;
        } else if a.flag("WITHHASH") {
            req.withhash = true;
        } else if a.flag("WITHCOORD") {
            req.withcoord = true;
        } else if a.flag("ANY") {
            req.any = true;
        } else if a.flag("ASC") {
            req.order = Order::Asc;
        } else if a.flag("DESC") {
            req.order = Order::Desc;
        } else if let Some(count) = a.option("COUNT") {
            let count = arg_i64(count)?;
            if count <= 0 {
                return Err(Error::err("COUNT must be > 0"));
            }
            req.count = count as usize;
        } else if form.accepts_store() {
            // GEORADIUS and GEORADIUSBYMEMBER take nothing else.
            let (kind, key) = a.option_of(&["STORE", "STOREDIST"]).ok_or(Error::SYNTAX)?;
            req.store = Some(key);
            req.storedist = kind == 1;
        } else if form == SearchForm::SearchStore && a.flag("STOREDIST") {
            req.storedist = true;
        } else if !geosearch {
            return Err(Error::SYNTAX);
        } else if let Some(member) = a.option("FROMMEMBER") {
            if fromloc {
                return Err(Error::SYNTAX);
            }
            // Without a source set the member is not looked up.
            if let Some(z) = z {
                req.shape.xy = member_position(z, member)?;
            }
            frommember = true;
        } else if let Some(lonlat) = a.option_n("FROMLONLAT", 2) {
            if frommember {
                return Err(Error::SYNTAX);
            }
            req.shape.xy = parse_lon_lat(lonlat[0], lonlat[1])?;
            fromloc = true;
        } else if let Some(radius) = a.option_n("BYRADIUS", 2) {
            if bybox {
                return Err(Error::SYNTAX);
            }
            let (r, conversion) = parse_radius(radius[0], radius[1])?;
            req.shape.kind = ShapeKind::Radius(r);
            req.shape.conversion = conversion;
            byradius = true;
        } else if let Some(size) = a.option_n("BYBOX", 3) {
            if byradius {
                return Err(Error::SYNTAX);
            }
            let (width, height, conversion) = parse_box(size[0], size[1], size[2])?;
            req.shape.kind = ShapeKind::Box { width, height };
            req.shape.conversion = conversion;
            bybox = true;
        } else {
            return Err(Error::SYNTAX);
        }
    }

    if req.store.is_some() && (req.withdist || req.withhash || req.withcoord) {
        return Err(Error::err(format_args!(
            "{} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if form == SearchForm::SearchStore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    // The command's name as the client spelled it.
    let name = String::from_utf8_lossy(args[0]);
    if geosearch && !(frommember || fromloc) {
        return Err(Error::err(format_args!(
            "exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if geosearch && !(byradius || bybox) {
        return Err(Error::err(format_args!(
            "exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if req.any && req.count == 0 {
        return Err(Error::err("the ANY argument requires COUNT argument"));
    }
    // COUNT without an order means the nearest ones (not with ANY).
    if req.count != 0 && req.order == Order::Unsorted && !req.any {
        req.order = Order::Asc;
    }
    Ok(req)
}

/// Redis's sort_gp_asc: NaN compares as smaller.
fn nearer_first(a: &GeoPoint, b: &GeoPoint) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    if a.dist > b.dist {
        Greater
    } else if a.dist == b.dist {
        Equal
    } else {
        Less
    }
}

fn farther_first(a: &GeoPoint, b: &GeoPoint) -> std::cmp::Ordering {
    nearer_first(a, b).reverse()
}

/// The points of `z` a search selects, in reply order, with distances in
/// the request's unit.
pub fn search<'z>(z: &'z ZSet, req: &SearchRequest) -> Vec<GeoPoint<'z>> {
    let limit = if req.any { req.count } else { 0 };
    let mut points = geo::points_in_shape(z, &req.shape, limit);
    let found = points.len();
    let returned = if req.count == 0 || found < req.count {
        found
    } else {
        req.count
    };
    let cmp = match req.order {
        Order::Unsorted => None,
        Order::Asc => Some(nearer_first as fn(&GeoPoint, &GeoPoint) -> _),
        Order::Desc => Some(farther_first as fn(&GeoPoint, &GeoPoint) -> _),
    };
    if let Some(cmp) = cmp {
        // As Redis: the C library's qsort for everything, its own partial
        // sort when only the first `returned` matter.
        if returned == found {
            c_qsort(&mut points, cmp);
        } else {
            pqsort(&mut points, cmp, 0, returned - 1);
        }
    }
    points.truncate(returned);
    for p in &mut points {
        p.dist /= req.shape.conversion;
    }
    points
}

fn reply_points(out: &mut ReplyWriter, points: &[GeoPoint], req: &SearchRequest) {
    let extras = req.withdist as usize + req.withhash as usize + req.withcoord as usize;
    out.array(points.len());
    for p in points {
        if extras > 0 {
            out.array(extras + 1);
        }
        out.bulk(p.member);
        if req.withdist {
            out.bulk(format_distance(p.dist).as_bytes());
        }
        if req.withhash {
            out.int(p.score as i64);
        }
        if req.withcoord {
            out.array(2);
            reply_coordinate(out, p.longitude);
            reply_coordinate(out, p.latitude);
        }
    }
}

/// What a STORE search stores: each point with its geohash, or with
/// STOREDIST its distance, as score.
pub fn stored_entries(z: &ZSet, req: &SearchRequest) -> Vec<(CompactBytes, f64)> {
    search(z, req)
        .iter()
        .map(|p| {
            let score = if req.storedist { p.dist } else { p.score };
            (CompactBytes::from_slice(p.member), score)
        })
        .collect()
}

/// Stores a STORE search's result at `dst` (deleted when empty, or when
/// the source did not exist: `entries` None), announced as Redis does:
/// "geosearchstore" or "georadiusstore", or "del" for a deleted
/// destination. Returns the stored count.
pub fn store_search(
    ctx: &mut Ctx,
    form: SearchForm,
    dst: &[u8],
    entries: Option<Vec<(CompactBytes, f64)>>,
) -> usize {
    let event = match form {
        SearchForm::SearchStore => "geosearchstore",
        _ => "georadiusstore",
    };
    match entries {
        Some(entries) => store_result(ctx, dst, entries, event),
        None => {
            ctx.delete_key(dst);
            0
        }
    }
}

fn search_command(ctx: &mut Ctx, args: &[&[u8]], form: SearchForm) -> CmdResult {
    let (z, out) = read_zset_and_out(ctx, args[form.source()]);
    let z = z?;
    let req = parse_search(args, form, z)?;
    let Some(dst) = req.store else {
        match z {
            Some(z) => reply_points(out, &search(z, &req), &req),
            None => out.array(0),
        }
        return Ok(());
    };
    let entries = z.map(|z| stored_entries(z, &req));
    let n = store_search(ctx, form, dst, entries);
    ctx.out.int(n as i64);
    Ok(())
}

fn georadius_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search_command(ctx, args, SearchForm::Radius { store: true })
}

fn georadius_ro_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search_command(ctx, args, SearchForm::Radius { store: false })
}

fn georadiusbymember_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search_command(ctx, args, SearchForm::RadiusByMember { store: true })
}

fn georadiusbymember_ro_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search_command(ctx, args, SearchForm::RadiusByMember { store: false })
}

fn geosearch_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search_command(ctx, args, SearchForm::Search)
}

fn geosearchstore_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search_command(ctx, args, SearchForm::SearchStore)
}

/// The shards GEORADIUS and GEORADIUSBYMEMBER hold: the source's and
/// those of every argument after a STORE or STOREDIST past the fixed
/// arguments. The parser takes the last such key, which the keyword key
/// specs (the first STORE, the first STOREDIST: what COMMAND GETKEYS and
/// ACL see, as in Redis) can miss when the option is repeated.
fn georadius_locks<'e>(
    engine: &'e Engine,
    _client: &crate::client::ClientState,
    args: &[&[u8]],
) -> ShardLocks<'e> {
    let ks = &engine.keyspace();
    let mut shards: Vec<usize> = args
        .get(1)
        .map(|k| ks.shard_of_key(k))
        .into_iter()
        .collect();
    for j in 5..args.len().saturating_sub(1) {
        let word = args[j];
        if word.eq_ignore_ascii_case(b"store") || word.eq_ignore_ascii_case(b"storedist") {
            shards.push(ks.shard_of_key(args[j + 1]));
        }
    }
    ks.lock_set(shards)
}

// ---------------------------------------------------------------------------
// The command table.

const RO_ACCESS: u32 = kflag::RO | kflag::ACCESS;
const OW_UPDATE: u32 = kflag::OW | kflag::UPDATE;

/// A key after `keyword`, searched from argument `start_from` on.
const fn after_keyword(keyword: &'static str, start_from: i32) -> KeySpec {
    KeySpec {
        flags: OW_UPDATE,
        begin: BeginSearch::Keyword {
            keyword,
            start_from,
        },
        find: FindKeys::Range {
            lastkey: 0,
            step: 1,
            limit: 0,
        },
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "geoadd",
        arity: -5,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, kflag::RW | kflag::UPDATE)],
        group: Group::Geo,
        since: "3.2.0",
        summary: "Add one or more geospatial items in the geospatial index represented using a sorted set",
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        history: &[("6.2.0", "Added the `CH`, `NX` and `XX` options.")],
        syntax: "key:key [condition:oneof(NX|XX)]{since:6.2.0} [CH]{name:change}{since:6.2.0} longitude_latitude_member:block(longitude:double latitude:double member:string)...",
        handler: geoadd_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "geodist",
        arity: -4,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Geo,
        since: "3.2.0",
        summary: "Returns the distance between two members of a geospatial index",
        complexity: "O(log(N))",
        syntax: "key:key member1:string member2:string [unit:oneof(M|KM|FT|MI)]",
        handler: geodist_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "geohash",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Geo,
        since: "3.2.0",
        summary: "Returns members of a geospatial index as standard geohash strings",
        complexity: "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
        syntax: "key:key member:string...",
        handler: geohash_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "geopos",
        arity: -2,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Geo,
        since: "3.2.0",
        summary: "Returns longitude and latitude of members of a geospatial index",
        complexity: "O(N) where N is the number of members requested.",
        syntax: "key:key member:string...",
        handler: geopos_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "georadius",
        arity: -6,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[
            KeySpec::at(1, RO_ACCESS),
            after_keyword("STORE", 6),
            after_keyword("STOREDIST", 6),
        ],
        locks_fn: Some(georadius_locks),
        group: Group::Geo,
        since: "3.2.0",
        summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument",
        history: &[("6.2.0", "Added the `ANY` option for `COUNT`."), ("7.0.0", "Added support for uppercase unit names.")],
        syntax: "key:key longitude:double latitude:double radius:double unit:oneof(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count:block(COUNT count:integer [ANY]{since:6.2.0})] [order:oneof(ASC|DESC)] [STORE key:key] [STOREDIST key:key]",
        handler: georadius_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "georadius_ro",
        arity: -6,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Geo,
        since: "3.2.10",
        summary: "A read-only variant for GEORADIUS",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` with the `BYRADIUS` argument",
        history: &[("6.2.0", "Added the `ANY` option for `COUNT`.")],
        syntax: "key:key longitude:double latitude:double radius:double unit:oneof(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count:block(COUNT count:integer [ANY]{since:6.2.0})] [order:oneof(ASC|DESC)]",
        handler: georadius_ro_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "georadiusbymember",
        arity: -5,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[
            KeySpec::at(1, RO_ACCESS),
            after_keyword("STORE", 5),
            after_keyword("STOREDIST", 5),
        ],
        locks_fn: Some(georadius_locks),
        group: Group::Geo,
        since: "3.2.0",
        summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments",
        history: &[("7.0.0", "Added support for uppercase unit names.")],
        syntax: "key:key member:string radius:double unit:oneof(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count:block(COUNT count:integer [ANY])] [order:oneof(ASC|DESC)] [STORE key:key] [STOREDIST key:key]",
        handler: georadiusbymember_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "georadiusbymember_ro",
        arity: -5,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Geo,
        since: "3.2.10",
        summary: "A read-only variant for GEORADIUSBYMEMBER",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments",
        syntax: "key:key member:string radius:double unit:oneof(M|KM|FT|MI) [WITHCOORD] [WITHDIST] [WITHHASH] [count:block(COUNT count:integer [ANY])] [order:oneof(ASC|DESC)]",
        handler: georadiusbymember_ro_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "geosearch",
        arity: -7,
        flags: flag::READONLY,
        keys: &[KeySpec::at(1, RO_ACCESS)],
        group: Group::Geo,
        since: "6.2.0",
        summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.",
        complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
        history: &[("7.0.0", "Added support for uppercase unit names.")],
        syntax: "key:key from:oneof(FROMMEMBER member:string|FROMLONLAT longitude_latitude:block(longitude:double latitude:double)) by:oneof(circle:block(BYRADIUS radius:double unit:oneof(M|KM|FT|MI))|box:block(BYBOX width:double height:double unit:oneof(M|KM|FT|MI))) [order:oneof(ASC|DESC)] [count:block(COUNT count:integer [ANY])] [WITHCOORD] [WITHDIST] [WITHHASH]",
        handler: geosearch_command,
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "geosearchstore",
        arity: -8,
        flags: flag::WRITE | flag::DENYOOM,
        keys: &[KeySpec::at(1, OW_UPDATE), KeySpec::at(2, RO_ACCESS)],
        group: Group::Geo,
        since: "6.2.0",
        summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
        complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
        history: &[("7.0.0", "Added support for uppercase unit names.")],
        syntax: "destination:key source:key from:oneof(FROMMEMBER member:string|FROMLONLAT longitude_latitude:block(longitude:double latitude:double)) by:oneof(circle:block(BYRADIUS radius:double unit:oneof(M|KM|FT|MI))|box:block(BYBOX width:double height:double unit:oneof(M|KM|FT|MI))) [order:oneof(ASC|DESC)] [count:block(COUNT count:integer [ANY])] [STOREDIST]",
        handler: geosearchstore_command,
        ..CommandSpec::DEFAULT
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_print_as_redis() {
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(-0.0), "0.0000");
        assert_eq!(format_distance(0.77497), "0.7750");
        assert_eq!(format_distance(166274.15156), "166274.1516");
        assert_eq!(format_distance(-1.5), "-1.5000");
        assert_eq!(format_distance(0.00004), "0.0000");
        assert_eq!(format_distance(f64::NAN), "-922337203685477.5808");
    }

    #[test]
    fn coordinates_errors_as_redis() {
        let e = parse_lon_lat(b"200", b"100").unwrap_err();
        assert_eq!(
            e.text(),
            "ERR invalid longitude,latitude pair 200.000000,100.000000"
        );
        assert_eq!(
            parse_lon_lat(b"x", b"100").unwrap_err().text(),
            "ERR value is not a valid float"
        );
    }
}
