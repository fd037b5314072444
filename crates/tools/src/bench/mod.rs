//! Every benchmark of `stratum-bench bench`, measured here; the CLI only parses its
//! arguments and presents the results (`report` renders their files).
//!
//! | bench | measures |
//! | --- | --- |
//! | [`pool`] | a pool's share capacity under a ramped load from a separate fleet |
//! | [`fanout`] | time for one new job to reach N connected miners |
//! | [`template`] | getblocktemplate (full, light) and TDP latency on a large mempool |
//! | [`link`] | what the userspace WAN relay adds to a round trip |

pub mod fanout;
pub mod link;
pub mod pool;
pub mod template;
