//! Small pieces shared by many commands: Redis's number parsing and
//! formatting, glob matching, and the clock.

pub mod blocking;
pub mod glob;
pub mod number;
pub mod time;

pub use glob::glob_match;
pub use number::{parse_f64, parse_i64};
