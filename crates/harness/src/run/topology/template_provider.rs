//! Configurations C and D: the SRI pool on a Template Provider: the node's own face, or
//! sv2-tp of the user's (one per side, a tap between it and the pool).

use super::*;

/// Configurations C and D, with the SRI pool on the pool site (tap in front of it, so
/// acceptance is what the pool decides) and `templates` as its Template Provider:
/// C: SV1 miners -> SRI translator (farm) -> link -> tap -> SRI pool;
/// D: SV2 miners -> link -> tap -> SRI pool.
pub(super) async fn start_sv2_pool_side(
    opts: &RunOptions,
    dir: &Path,
    side: &Side,
    templates: &PoolTemplates,
    farm_port: u16,
    roles: &mut Vec<RoleProcess>,
) -> Result<SideRoles> {
    let s = &opts.scenario;
    let (templates, provider) = templates.for_side(opts, dir, side, roles).await?;
    // The side's roles, with its own Template Provider and the tap before it, if any.
    let side_roles = |(miners, tap, link): (&str, &str, &str), started: &[&str]| {
        let mut started = started.to_vec();
        if let Some(p) = &provider {
            started.extend([p.tap.as_str(), p.provider.as_str()]);
        }
        SideRoles {
            template_role: provider.as_ref().map(|p| p.tap.clone()),
            ..pool_side_roles(s, side, (miners, tap, link), &started)
        }
    };
    let PoolSite {
        keys,
        pool,
        tap,
        tap_addr,
        tap_spec,
        ..
    } = spawn_pool_site(opts, dir, side, templates.clone(), None, roles).await?;
    // A backup: another SRI pool on the same templates, with its own tap.
    let backup = match s.backup.pool {
        true => {
            let label = format!("{side}-backup");
            Some(spawn_pool_site(opts, dir, &label, templates, None, roles).await?)
        }
        false => None,
    };
    let backup_tap = backup.as_ref().map(|b| b.tap_addr);
    let farm = if side.config == Config::Sv2D {
        farm_port
    } else {
        0
    };
    let upstreams = ((tap_addr, backup_tap), &tap_spec);
    let (link, link_addr, backup_addr, shards) =
        spawn_side_link(opts, dir, side, farm, upstreams, roles).await?;
    let backup_upstream = (backup.as_ref())
        .zip(backup_addr)
        .map(|(b, address)| (address, b.keys.public));
    let mut started = vec![&pool[..], &tap, &link];
    started.extend(shards.iter().map(String::as_str));
    if let Some(b) = &backup {
        started.extend([&b.pool[..], &b.tap]);
    }
    let (miners, translator) = if side.config == Config::Sv2D {
        tell(
            opts,
            format!(
                "{side}: SV2 miners connect to {link_addr} (farm side of the link)\n  with pool key {}",
                keys.public
            ),
        );
        let backup =
            backup_upstream.map(|(address, public)| sv2::fleet::BackupPool { address, public });
        let upstream = (link_addr, keys.public);
        (
            spawn_sv2_miners(opts, dir, side, upstream, backup, roles).await?,
            None,
        )
    } else {
        let upstreams = std::iter::once((link_addr, keys.public))
            .chain(backup_upstream)
            .collect();
        let (translator, miners) =
            spawn_translated_miners(opts, dir, side, farm_port, upstreams, roles).await?;
        (miners, Some(translator))
    };
    started.extend(translator.as_deref());
    started.push(&miners);
    Ok(SideRoles {
        backup_pool_role: backup.as_ref().map(|b| b.tap.clone()),
        ..side_roles((&miners, &tap, &link), &started)
    })
}

/// Where sides C and D get their templates.
#[derive(Clone)]
pub(super) enum PoolTemplates {
    /// The node's own face (its TDP server, or its Mining IPC).
    Node(sri::TemplateSource),
    /// A Template Provider of the scenario's (`roles.template_provider`, sv2-tp), one per
    /// side as each pool would run its own, on the Mining IPC at `socket` of a node on
    /// `chain` (as Core names it; its files in the data directory's `subdir`). One sv2-tp
    /// serving two pools sends the next tip's SetNewPrevHash to one of them only: sides
    /// sharing one would not be alike.
    Own {
        command: model::scenario::RoleCommand,
        socket: PathBuf,
        chain: String,
        subdir: String,
    },
}

/// What a side's own Template Provider started: its role, and the tap's in front of it.
struct ProviderRoles {
    provider: String,
    tap: String,
}

impl PoolTemplates {
    /// Side `side`'s template source, and the tap in front of it when the provider is
    /// the scenario's: the provider started, and a tap answering the pool with a key the
    /// run made and checking the provider's, which records each template as the pool
    /// gets it. Returns the roles it started besides.
    async fn for_side(
        &self,
        opts: &RunOptions,
        dir: &Path,
        side: &str,
        roles: &mut Vec<RoleProcess>,
    ) -> Result<(sri::TemplateSource, Option<ProviderRoles>)> {
        let (command, node) = match self {
            PoolTemplates::Node(source) => return Ok((source.clone(), None)),
            PoolTemplates::Own {
                command,
                socket,
                chain,
                subdir,
            } => (command, (socket.as_path(), chain.as_str(), subdir.as_str())),
        };
        let provider = format!("template-provider-{side}");
        let (address, public) =
            start_template_provider(opts, dir, &provider, command, node, roles).await?;
        let keys = sv2_wire::AuthorityKeys::generate();
        let tap = format!("tap-templates-{side}");
        let spec = RoleSpec::template_tap(address, public, &keys);
        let source = sri::TemplateSource::Tdp {
            address: spawn_listening(opts, dir, &tap, &spec, roles).await?,
            public: keys.public,
        };
        Ok((source, Some(ProviderRoles { provider, tap })))
    }
}

/// Starts role `name`, a Template Provider (`command`, sv2-tp), against the Mining IPC at
/// `socket` of a node on `chain` (its files in `subdir` of its data directory): its data
/// directory in the run's, on loopback, with the
/// pools' refresh policy (`pool.job_refresh`, `pool.refresh_fee_threshold_sats`). Its
/// options follow the user's, so they win. Ready when it listens; returns where, and the
/// authority key read from what it printed.
async fn start_template_provider(
    opts: &RunOptions,
    dir: &Path,
    name: &str,
    command: &model::scenario::RoleCommand,
    (socket, chain, subdir): (&Path, &str, &str),
    roles: &mut Vec<RoleProcess>,
) -> Result<(SocketAddr, Secp256k1PublicKey)> {
    let s = &opts.scenario;
    let data_dir = std::path::absolute(dir.join(name))?;
    // sv2-tp writes its keys and pid file into the chain's directory, and makes none.
    let chain_dir = data_dir.join(subdir);
    std::fs::create_dir_all(&chain_dir)
        .with_context(|| format!("cannot create {}", chain_dir.display()))?;
    let listen = free_local_port()?;
    let argv: Vec<String> = (command.command.split_whitespace().map(str::to_string))
        .chain([
            format!("-datadir={}", data_dir.display()),
            "-conf=0".into(),
            format!("-chain={chain}"),
            format!("-ipcconnect=unix:{}", socket.display()),
            format!("-sv2bind={}", listen.ip()),
            format!("-sv2port={}", listen.port()),
            format!("-templateinterval={}", s.pool.job_refresh.as_secs().max(1)),
            format!("-sv2feedelta={}", s.pool.refresh_fee_threshold_sats),
            // Its log goes to its output, which is the role's log.
            "-printtoconsole=1".into(),
            "-debuglogfile=0".into(),
        ])
        .collect();
    let role = RoleProcess::spawn_command(&opts.launcher, &argv, None, dir, name, listen).await?;
    roles.push(role);
    let log = dir.join("logs").join(format!("{name}.log"));
    let printed = std::fs::read_to_string(&log).unwrap_or_default();
    let public = authority_key_in(&printed).with_context(|| {
        format!(
            "role {name} (`{}`) listens on {listen} but printed no `{AUTHORITY_KEY_LINE} ...` line in {}: is it sv2-tp?",
            command.command,
            log.display()
        )
    })?;
    eprintln!(
        "{name}: `{}` on {listen}, authority key {public}, templates from {}",
        command.command,
        socket.display()
    );
    Ok((listen, public))
}

/// What sv2-tp prints before its authority key (base58check, as SRI configs take it).
const AUTHORITY_KEY_LINE: &str = "Template Provider authority key:";

/// The authority key a Template Provider's log says it has.
fn authority_key_in(log: &str) -> Option<Secp256k1PublicKey> {
    log.lines().find_map(|line| {
        let (_, key) = line.split_once(AUTHORITY_KEY_LINE)?;
        key.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authority_key_is_read_from_sv2_tps_log() {
        // As sv2-tp v1.1 prints it.
        let log = "2026-11-25T22:16:32Z [sv2:info] Static key: 035d57d03bcd22e9ea72cacc86d43ca3011f922d84990524cf89380c035bb8d3c8\n2026-11-25T22:16:32Z [sv2:info] Template Provider authority key: 9bK9GRs5wu29x3ijuberfKiMLpJsa1r5C658ezmhBaPj5rMiMsB\n";
        let key = authority_key_in(log).expect("a key");
        assert_eq!(
            key.to_string(),
            "9bK9GRs5wu29x3ijuberfKiMLpJsa1r5C658ezmhBaPj5rMiMsB"
        );
        assert!(authority_key_in("Template Provider authority key: not-a-key").is_none());
        assert!(authority_key_in("").is_none());
    }
}
