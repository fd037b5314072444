//! A deployment's plan (`stratum-bench deploy`): the run's roles in the order the harness
//! would start them, none started, each with its ports fixed and an address standing in
//! for it. The launcher fills it in place of starting roles; `deploy` writes it out.

use crate::container::Site;
use crate::roles::{Ready, RoleSpec};
use anyhow::{Context, Result};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

/// The first port a role's fixed ports are taken from.
const FIRST_PORT: u16 = 4000;
/// Stand-ins go from 198.18.1.100 up: three digits each, so none is the start of another.
const FIRST_STAND_IN: u8 = 100;

/// One role as the plan has it.
#[derive(Debug, Clone)]
pub(crate) struct PlannedRole {
    pub(crate) name: String,
    pub(crate) site: Site,
    /// The address that stands for it in the specs of the roles after it.
    pub(crate) stand_in: Ipv4Addr,
    pub(crate) spec: RoleSpec,
    /// The ports its READY line announces.
    pub(crate) ports: Vec<u16>,
}

impl PlannedRole {
    /// Its name on its home network.
    pub(crate) fn alias(&self) -> String {
        format!("{}.{}", self.name, self.site.home())
    }

    pub(crate) fn reaches(&self, other: &PlannedRole) -> bool {
        self.site.networks().contains(&other.site.home())
    }

    /// The directory it serves Mining IPC in (on the run's volume), if it does.
    fn ipc_dir(&self) -> Option<&Path> {
        match &self.spec {
            RoleSpec::Node { ipc, .. } => ipc.as_ref().map(|i| i.data_dir.as_path()),
            _ => None,
        }
    }

    /// What a role whose spec (`spec`, as JSON) is told of this one waits for: its ports,
    /// and its Mining IPC socket when the spec names its directory (a socket is served
    /// after the ports open). None when the spec is not told of it.
    pub(crate) fn waited_by(&self, spec: &str) -> Option<Vec<String>> {
        let by_address = spec.contains(&self.stand_in.to_string());
        let ipc = self
            .ipc_dir()
            .filter(|dir| serde_json::to_string(dir).is_ok_and(|quoted| spec.contains(&quoted)));
        if !by_address && ipc.is_none() {
            return None;
        }
        let mut waits: Vec<String> = (self.ports.iter())
            .map(|port| format!("{}:{port}", self.alias()))
            .collect();
        waits.extend(ipc.map(|dir| format!("unix:{}", node::ipc::socket_path(dir).display())));
        Some(waits)
    }
}

/// The roles of a run, planned in the order the harness would start them.
#[derive(Debug, Default)]
pub struct Plan {
    roles: parking_lot::Mutex<Vec<PlannedRole>>,
}

impl Plan {
    /// Plans role `name` of `spec`: its ports fixed, a stand-in address given; returns what
    /// it will announce, at the stand-in.
    pub fn add(&self, name: &str, spec: &RoleSpec) -> Result<Ready> {
        let mut roles = self.roles.lock();
        let stand_in = u8::try_from(roles.len())
            .ok()
            .and_then(|n| n.checked_add(FIRST_STAND_IN))
            .filter(|&host| host < 250)
            .map(|host| Ipv4Addr::new(198, 18, 1, host))
            .context("a deployment holds at most 150 roles")?;
        let mut spec = spec.clone();
        let mut next = FIRST_PORT..;
        spec.fix_ports(&mut || next.next().expect("ports to spare"));
        let ready = spec.planned_ready(IpAddr::V4(stand_in));
        roles.push(PlannedRole {
            name: name.into(),
            site: Site::of(name),
            stand_in,
            ports: ready.ports(),
            spec,
        });
        Ok(ready)
    }

    pub(crate) fn roles(&self) -> Vec<PlannedRole> {
        self.roles.lock().clone()
    }
}
