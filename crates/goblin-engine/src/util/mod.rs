//! Small pieces shared by many commands: Redis's number parsing and
//! formatting, glob matching, the clock, and the C sorts whose order
//! replies keep.

pub mod blocking;
pub mod glob;
pub mod number;
pub mod sort;
pub mod time;

pub use glob::glob_match;
pub use number::{parse_f64, parse_i64};

/// An I/O error as C's strerror() words it (Redis's logs), without the
/// "(os error N)" Rust adds.
pub fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => text[..i].to_string(),
        _ => text,
    }
}
