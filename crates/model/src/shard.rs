//! A relay run as several processes (shards) because one process cannot hold every
//! miner's descriptors: each shard is a role of its own (its own events, log, CPU and
//! memory), named after the role it is part of, and the analysis reads them as one.

/// Shard `k` (from 1) of `role`: the first keeps the role's own name, so a run that needs
/// one process names it as it always did; the others are `<role>-shard<k>`.
pub fn name(role: &str, k: u32) -> String {
    match k {
        0 | 1 => role.to_string(),
        k => format!("{role}-shard{k}"),
    }
}

/// Whether `role` is `of` itself or one of its shards.
pub fn is_of(role: &str, of: &str) -> bool {
    match role.strip_prefix(of) {
        Some("") => true,
        Some(rest) => rest
            .strip_prefix("-shard")
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

/// Connection numbers a shard of a tap keeps to itself: shard `k` numbers its connections
/// from `(k - 1) * CONNECTIONS_PER_SHARD + 1`, so a connection number is one connection
/// across every shard of the tap.
pub const CONNECTIONS_PER_SHARD: u32 = 1_000_000;

/// Where shard `k`'s connection numbers start after (its first is this plus one).
pub fn connection_offset(k: u32) -> u32 {
    k.saturating_sub(1).saturating_mul(CONNECTIONS_PER_SHARD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_named_after_its_role_and_known_as_part_of_it() {
        assert_eq!(name("link-sv1", 1), "link-sv1");
        assert_eq!(name("link-sv1", 3), "link-sv1-shard3");
        assert!(is_of("link-sv1", "link-sv1"));
        assert!(is_of("link-sv1-shard3", "link-sv1"));
        assert!(is_of(&name("tap-sv2-d", 12), "tap-sv2-d"));
        // Another side whose name starts alike is not a shard, nor is a bare suffix.
        assert!(!is_of("link-sv1-backup", "link-sv1"));
        assert!(!is_of("link-sv1-shard", "link-sv1"));
        assert!(!is_of("link-sv1-shard2x", "link-sv1"));
        assert!(!is_of("link-sv", "link-sv1"));
        assert_eq!(connection_offset(1), 0);
        assert_eq!(connection_offset(3), 2_000_000);
    }
}
