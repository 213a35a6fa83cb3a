//! The investigation environments: the three sites rendered from task data, and the
//! world index that answers "what is at this URL". No HTTP here; `http::sites` serves it.

pub mod markup;
pub mod overlay;
pub mod protocol;
pub mod render;
pub mod site;
pub mod wiki_index;
mod world;

pub use overlay::{Overlay, Span, clip, segments, segments_clipped};
pub use world::{Resolved, World};
