//! The Redis serialization protocol: requests in, replies out.
//!
//! - [`parser`]: incremental parsing of multibulk and inline requests.
//! - [`reply`]: `ReplyWriter`, through which every command answers.
//! - [`value`]: `Reply`, a decoded reply for in-process callers.

pub mod parser;
pub mod reply;
pub mod value;

pub use parser::{repr, split_args, Parsed, RequestParser};
pub use reply::{Deferred, ReplyWriter};
pub use value::{DecodeError, ErrorText, Reply};
