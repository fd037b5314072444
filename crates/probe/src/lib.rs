//! Measurement primitives shared by every role: one host-wide monotonic clock, the event
//! schema, and a recorder that writes events off the measured path.

pub mod clock;
pub mod event;
pub mod fuzzing;
pub mod histogram;
pub mod listen;
pub mod private;
pub mod recorder;
pub mod ship;
pub mod stats;
pub mod tap;

pub use clock::{mono_ns, wall_ns};
pub use event::{Event, Record, ShareVerdict, TipCause};
pub use histogram::Histogram;
pub use recorder::Recorder;
pub use stats::Dist;
pub use tap::{TapStats, VerdictLabel};
