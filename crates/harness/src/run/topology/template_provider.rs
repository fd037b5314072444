//! Configurations C and D: the SRI pool on the node's Template Provider.

use super::*;

/// Configurations C and D, with the SRI pool on the pool site (tap in front of it, so
/// acceptance is what the pool decides) and the node as its Template Provider:
/// C: SV1 miners -> SRI translator (farm) -> link -> tap -> SRI pool;
/// D: SV2 miners -> link -> tap -> SRI pool.
pub(super) async fn start_sv2_pool_side(
    opts: &RunOptions,
    dir: &Path,
    side: &str,
    templates: sri::TemplateSource,
    farm_port: u16,
    roles: &mut Vec<RoleProcess>,
) -> Result<SideRoles> {
    let s = &opts.scenario;
    let PoolSite {
        keys,
        pool,
        tap,
        tap_addr,
        ..
    } = spawn_pool_site(opts, dir, side, templates, None, roles).await?;
    if Config::of_side(side) == Some(Config::Sv2D) {
        let (link, link_addr) = spawn_link(opts, dir, side, farm_port, tap_addr, roles).await?;
        eprintln!(
            "{side}: SV2 miners connect to {link_addr} (farm side of the link; pool key {})",
            keys.public
        );
        let miners = spawn_sv2_miners(opts, dir, side, link_addr, keys.public, roles).await?;
        let started = [&pool[..], &tap, &link, &miners];
        return Ok(pool_side_roles(s, side, (&miners, &tap, &link), &started));
    }
    let (link, link_addr) = spawn_link(opts, dir, side, 0, tap_addr, roles).await?;
    let translator = format!("translator-{side}");
    let translator_addr = spawn_translator(
        opts,
        dir,
        &translator,
        farm_port,
        (link_addr, keys.public),
        roles,
    )
    .await?;
    eprintln!(
        "{side}: SV1 miners connect to stratum+tcp://{translator_addr} (the SRI translator, farm site)"
    );
    let miners = spawn_sv1_miners(
        opts,
        dir,
        (side, &default_worker_prefix(side), None),
        translator_addr,
        roles,
    )
    .await?;
    let started = [&pool[..], &tap, &link, &translator, &miners];
    Ok(pool_side_roles(s, side, (&miners, &tap, &link), &started))
}
