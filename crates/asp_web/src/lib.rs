//! Web search for words no detector knows (SPEC §4.2, VLA²'s unknown concepts):
//! - [`SearxngClient`]: SearXNG's JSON API (`GET /search?q=…&format=json&categories=…`),
//!   the default because it is self-hostable and needs no key; configured endpoint, a
//!   time bound per request, retries of network and server faults, a result limit;
//! - [`CachedSearch`]: any [`WebSearch`] behind a cache in the embedded database, so a
//!   concept looked up once costs no web call the next time.
//!
//! Everything a search returns is untrusted ([`asp_core::web::WebHit::quoted`]).

mod cache;
mod searxng;

pub use asp_core::web::{SearchCategory, WebError, WebHit, WebQuery, WebSearch};
pub use cache::{CacheStats, CachedSearch};
pub use searxng::{SearxngClient, SearxngSettings};
