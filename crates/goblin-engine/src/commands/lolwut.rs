//! LOLWUT (Redis's lolwut.c, lolwut5.c, lolwut6.c): computer art and the
//! server's version. VERSION 5 draws Georg Nees's "Schotter" in Braille
//! characters, VERSION 6 a skyline in terminal colours; any other version,
//! and LOLWUT without one (Redis 7.0 has no art of its own), the version
//! line alone. Where Redis names "Redis ver. 7.0.15", Goblin names its own
//! version the same way.

use crate::command::args::Args;
use crate::command::spec::{flag, CmdResult, CommandSpec, Group};
use crate::command::Ctx;
use crate::util::number::arg_i64;
use crate::Error;

/// The version line's end, as Redis's "Redis ver. " REDIS_VERSION.
fn version_line() -> String {
    format!("Goblin ver. {}\n", crate::VERSION)
}

/// A canvas of pixels, each a colour number (Redis's lwCanvas).
struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i32, height: i32, background: u8) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![background; (width as usize) * (height as usize)],
        }
    }

    fn draw_pixel(&mut self, x: i32, y: i32, color: u8) {
        if x < 0 || x >= self.width || y < 0 || y >= self.height {
            return;
        }
        self.pixels[(x + y * self.width) as usize] = color;
    }

    fn pixel(&self, x: i32, y: i32) -> u8 {
        if x < 0 || x >= self.width || y < 0 || y >= self.height {
            return 0;
        }
        self.pixels[(x + y * self.width) as usize]
    }

    /// Bresenham's line (lwDrawLine).
    fn draw_line(&mut self, mut x1: i32, mut y1: i32, x2: i32, y2: i32, color: u8) {
        let dx = (x2 - x1).abs();
        let dy = (y2 - y1).abs();
        let sx = if x1 < x2 { 1 } else { -1 };
        let sy = if y1 < y2 { 1 } else { -1 };
        let mut err = dx - dy;
        loop {
            self.draw_pixel(x1, y1, color);
            if x1 == x2 && y1 == y2 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// A square of side `size` centred at (x, y), turned by `angle`
    /// (lwDrawSquare, in its single-precision arithmetic).
    fn draw_square(&mut self, x: i32, y: i32, size: f32, angle: f32, color: u8) {
        let size = (size / std::f32::consts::SQRT_2).round();
        let mut px = [0i32; 4];
        let mut py = [0i32; 4];
        let mut k: f32 = std::f32::consts::FRAC_PI_4 + angle;
        for j in 0..4 {
            px[j] = ((k as f64).sin() * size as f64 + x as f64).round() as i32;
            py[j] = ((k as f64).cos() * size as f64 + y as f64).round() as i32;
            k += std::f32::consts::FRAC_PI_2;
        }
        for j in 0..4 {
            self.draw_line(px[j], py[j], px[(j + 1) % 4], py[(j + 1) % 4], color);
        }
    }
}

/// A C rand() stand-in: a non-negative int below RAND_MAX.
fn rand() -> i32 {
    fastrand::i32(0..i32::MAX)
}

/// Schotter: rows of squares, turned and moved further as they go down
/// (lwDrawSchotter).
fn schotter(console_cols: i32, squares_per_row: i32, squares_per_col: i32) -> Canvas {
    let canvas_width = console_cols * 2;
    let padding = if canvas_width > 4 { 2 } else { 0 };
    let square_side = (canvas_width - padding * 2) as f32 / squares_per_row as f32;
    let canvas_height = (square_side * squares_per_col as f32 + (padding * 2) as f32) as i32;
    let mut canvas = Canvas::new(canvas_width, canvas_height, 0);
    let unit = || rand() as f32 / i32::MAX as f32;
    for y in 0..squares_per_col {
        for x in 0..squares_per_row {
            let mut sx = (x as f32 * square_side + square_side / 2.0 + padding as f32) as i32;
            let mut sy = (y as f32 * square_side + square_side / 2.0 + padding as f32) as i32;
            let mut angle = 0.0f32;
            if y > 1 {
                let mut r1 = unit() / squares_per_col as f32 * y as f32;
                let mut r2 = unit() / squares_per_col as f32 * y as f32;
                let mut r3 = unit() / squares_per_col as f32 * y as f32;
                if rand() % 2 != 0 {
                    r1 = -r1;
                }
                if rand() % 2 != 0 {
                    r2 = -r2;
                }
                if rand() % 2 != 0 {
                    r3 = -r3;
                }
                angle = r1;
                sx = (sx as f32 + r2 * square_side / 3.0) as i32;
                sy = (sy as f32 + r3 * square_side / 3.0) as i32;
            }
            canvas.draw_square(sx, sy, square_side, angle, 1);
        }
    }
    canvas
}

/// Each 2x4 block of pixels as one Braille character (lolwut5's
/// renderCanvas and lwTranslatePixelsGroup).
fn render_braille(canvas: &Canvas) -> Vec<u8> {
    let mut text = Vec::new();
    let mut y = 0;
    while y < canvas.height {
        let mut x = 0;
        while x < canvas.width {
            let bits = [
                (x, y),
                (x, y + 1),
                (x, y + 2),
                (x + 1, y),
                (x + 1, y + 1),
                (x + 1, y + 2),
                (x, y + 3),
                (x + 1, y + 3),
            ];
            let byte = bits
                .iter()
                .enumerate()
                .filter(|(_, &(px, py))| canvas.pixel(px, py) != 0)
                .fold(0u32, |b, (i, _)| b | (1 << i));
            let code = 0x2800 + byte;
            text.push((0xE0 | (code >> 12)) as u8);
            text.push((0x80 | ((code >> 6) & 0x3F)) as u8);
            text.push((0x80 | (code & 0x3F)) as u8);
            x += 2;
        }
        if y != canvas.height - 1 {
            text.push(b'\n');
        }
        y += 4;
    }
    text
}

/// LOLWUT VERSION 5 [columns [squares-per-row [squares-per-col]]].
fn lolwut5(args: &[&[u8]]) -> Result<Vec<u8>, Error> {
    let mut cols = 66;
    let mut per_row = 8;
    let mut per_col = 12;
    if let Some(a) = args.first() {
        cols = arg_i64(a)?;
    }
    if let Some(a) = args.get(1) {
        per_row = arg_i64(a)?;
    }
    if let Some(a) = args.get(2) {
        per_col = arg_i64(a)?;
    }
    let canvas = schotter(
        cols.clamp(1, 1000) as i32,
        per_row.clamp(1, 200) as i32,
        per_col.clamp(1, 200) as i32,
    );
    let mut text = render_braille(&canvas);
    text.extend_from_slice(b"\nGeorg Nees - schotter, plotter on paper, 1968. ");
    text.extend_from_slice(version_line().as_bytes());
    Ok(text)
}

/// One skyscraper of the skyline (generateSkyscraper): its windows lit
/// at random.
struct Skyscraper {
    xoff: i32,
    width: i32,
    height: i32,
    windows: bool,
    color: u8,
}

fn draw_skyscraper(canvas: &mut Canvas, si: &Skyscraper) {
    let starty = canvas.height - 1;
    let endy = starty - si.height + 1;
    let mut y = starty;
    while y >= endy {
        for x in si.xoff..si.xoff + si.width {
            // The roof's rounded corners.
            if y == endy && (x <= si.xoff + 1 || x >= si.xoff + si.width - 2) {
                continue;
            }
            let mut color = si.color;
            if si.windows
                && x > si.xoff + 1
                && x < si.xoff + si.width - 2
                && y > endy + 1
                && y < starty - 1
            {
                let relx = x - (si.xoff + 1);
                let rely = y - (endy + 1);
                if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                    loop {
                        color = 1 + (rand() % 2) as u8;
                        if color != si.color {
                            break;
                        }
                    }
                    if relx % 2 != 0 {
                        color = canvas.pixel(x - 1, y);
                    }
                }
            }
            canvas.draw_pixel(x, y, color);
        }
        y -= 1;
    }
}

/// Two rows of buildings, then the front one with windows
/// (generateSkyline).
fn skyline(canvas: &mut Canvas) {
    let h = canvas.height;
    for color in [2u8, 1] {
        let mut offset = -10;
        while offset < canvas.width {
            offset += rand() % 8;
            let width = 10 + rand() % 9;
            let height = if color == 2 {
                h / 2 + rand() % h / 2
            } else {
                h / 2 + rand() % h / 3
            };
            let si = Skyscraper {
                xoff: offset,
                width,
                height,
                windows: false,
                color,
            };
            draw_skyscraper(canvas, &si);
            offset += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < canvas.width {
        offset += rand() % 8;
        let mut width = 5 + rand() % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let si = Skyscraper {
            xoff: offset,
            width,
            height: h / 3 + rand() % h / 2,
            windows: true,
            color: 0,
        };
        draw_skyscraper(canvas, &si);
        offset += width + 5;
    }
}

/// Each pixel as a space in its colour (lolwut6's renderCanvas).
fn render_colors(canvas: &Canvas) -> Vec<u8> {
    let mut text = Vec::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let escape: &[u8] = match canvas.pixel(x, y) {
                1 => b"0;90;100m",
                2 => b"0;37;47m",
                3 => b"0;97;107m",
                _ => b"0;30;40m",
            };
            text.extend_from_slice(b"\x1b[");
            text.extend_from_slice(escape);
            text.extend_from_slice(b" \x1b[0m");
        }
        if y != canvas.height - 1 {
            text.push(b'\n');
        }
    }
    text
}

/// LOLWUT VERSION 6 [columns [rows]].
fn lolwut6(args: &[&[u8]]) -> Result<Vec<u8>, Error> {
    let mut cols = 80;
    let mut rows = 20;
    if let Some(a) = args.first() {
        cols = arg_i64(a)?;
    }
    if let Some(a) = args.get(1) {
        rows = arg_i64(a)?;
    }
    let mut canvas = Canvas::new(cols.clamp(1, 1000) as i32, rows.clamp(1, 1000) as i32, 3);
    skyline(&mut canvas);
    let mut text = render_colors(&canvas);
    text.extend_from_slice(
        b"\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. ",
    );
    text.extend_from_slice(version_line().as_bytes());
    Ok(text)
}

/// Which art a version draws, from its "N.0.0" text as Redis's
/// lolwutCommand reads it: 5 (and 4.9) Schotter, 6 (and 5.9) the skyline.
fn art_for(version: &str) -> u8 {
    let v = version.as_bytes();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    if (at(0) == b'5' && at(1) == b'.' && at(2) != b'9')
        || (at(0) == b'4' && at(1) == b'.' && at(2) == b'9')
    {
        5
    } else if (at(0) == b'6' && at(1) == b'.' && at(2) != b'9')
        || (at(0) == b'5' && at(1) == b'.' && at(2) == b'9')
    {
        6
    } else {
        0
    }
}

/// LOLWUT [VERSION version [art arguments...]]: the version as Redis
/// formats it ("%u.0.0"), the art's arguments after it. Without VERSION
/// the arguments go to the art of the server's own version (none).
pub fn parse_lolwut<'a>(args: &[&'a [u8]]) -> Result<(String, Vec<&'a [u8]>), Error> {
    let mut a = Args::new(args);
    if args.len() >= 2 {
        if let Some(v) = a.option("VERSION") {
            let n = arg_i64(v)?;
            return Ok((format!("{}.0.0", n as u32), a.rest().to_vec()));
        }
    }
    Ok((crate::REDIS_VERSION.to_string(), args.to_vec()))
}

fn lolwut_command(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (version, art_args) = parse_lolwut(&args[1..])?;
    let text = match art_for(&version) {
        5 => lolwut5(&art_args)?,
        6 => lolwut6(&art_args)?,
        _ => version_line().into_bytes(),
    };
    ctx.out.verbatim(&text, "txt");
    Ok(())
}

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "lolwut",
    arity: -1,
    flags: flag::READONLY | flag::FAST,
    group: Group::Server,
    since: "5.0.0",
    summary: "Display some computer art and the Redis version",
    complexity: "",
    syntax: "[VERSION version:integer]",
    handler: lolwut_command,
    ..CommandSpec::DEFAULT
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pick_their_art_as_redis_does() {
        assert_eq!(art_for("5.0.0"), 5);
        assert_eq!(art_for("4.9.0"), 5);
        assert_eq!(art_for("6.0.0"), 6);
        assert_eq!(art_for("5.9.0"), 6);
        assert_eq!(art_for("7.0.15"), 0);
        assert_eq!(art_for("0.0.0"), 0);
        // %u of a negative number.
        assert_eq!(
            parse_lolwut(&[b"VERSION", b"-1"]).unwrap().0,
            "4294967295.0.0"
        );
    }

    #[test]
    fn schotter_fills_the_requested_columns() {
        let text = lolwut5(&[b"10", b"2", b"2"]).unwrap();
        let text = String::from_utf8(text).unwrap();
        let first = text.lines().next().unwrap();
        assert_eq!(first.chars().count(), 10);
        assert!(text.ends_with(&version_line()));
    }

    #[test]
    fn skyline_draws_every_pixel() {
        let text = lolwut6(&[b"3", b"2"]).unwrap();
        let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        // Two rows of pixels, then the two dedication lines.
        assert_eq!(lines[0].iter().filter(|&&b| b == 0x1b).count(), 6);
        assert_eq!(lines[1].iter().filter(|&&b| b == 0x1b).count(), 6);
    }
}
