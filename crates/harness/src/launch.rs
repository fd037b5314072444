//! How a role process starts (`stratum-bench role`, which the harness runs for each
//! role): where its spec comes from, where its events go and the address it binds, then
//! the role itself ([`crate::roles::run_role`]).

use crate::host::HostMeter;
use crate::procs::CpuMeter;
use anyhow::{bail, Context, Result};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A role process's start, as its command line gave it.
pub struct Launch {
    /// Name the role records its events under.
    pub name: String,
    /// The role spec (JSON) the harness wrote, or the environment variable holding it.
    pub spec: Option<PathBuf>,
    pub spec_env: Option<String>,
    /// Events file to append to, or the harness's collector (with a local journal).
    pub events: Option<PathBuf>,
    pub collector: Option<String>,
    pub journal: Option<PathBuf>,
    /// The address it binds what it serves of its own accord.
    pub bind_ip: IpAddr,
    /// In a container: the network its own address is on, or the name it resolves to.
    pub own_address_in: Option<String>,
    pub own_name: Option<String>,
    /// A deployed role: `STAND_IN=NAME` addresses, and roles to wait for.
    pub resolve: Vec<String>,
    pub after: Vec<String>,
    /// Test only: this role's clock this many nanoseconds apart from the host's.
    pub test_clock_shift_ns: Option<i64>,
}

/// Starts the role and serves it until it is told to stop.
pub async fn launch(args: Launch) -> Result<()> {
    if let Some(shift) = args.test_clock_shift_ns {
        probe::clock::shift_for_test(shift);
    }
    // A deployed role settles before it records: its first event marks its start.
    let (spec, bind_ip) = spec_of(&args).await?;
    let recorder = match (&args.events, &args.collector, &args.journal) {
        (Some(events), _, _) => probe::Recorder::to_file(events, &args.name)?,
        (None, Some(collector), Some(journal)) => {
            let recorder = probe::Recorder::to_collector(journal, collector, &args.name)?;
            report_resources(recorder.clone(), journal.parent().unwrap_or(Path::new(".")));
            recorder
        }
        _ => bail!("give --events FILE, or --collector ADDR with --journal FILE"),
    };
    crate::roles::run_role(&spec, &args.name, recorder, bind_ip).await
}

/// A role that sends its events to a collector may run where no harness reads its process
/// or its host: it reports both itself, once a second, as the harness's samples would
/// (`Event::Resources`). `fs_path` is the filesystem its journal is on.
fn report_resources(recorder: probe::Recorder, fs_path: &Path) {
    let mut own = CpuMeter::new(std::process::id());
    let cpus = crate::process::available_cpus().unwrap_or_default();
    let mut host = HostMeter::new(fs_path, &cpus);
    tokio::spawn(async move {
        let second = Duration::from_secs(1);
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + second, second);
        loop {
            tick.tick().await;
            if let (Some(process), Some(host)) = (own.sample(), host.sample()) {
                recorder.record(probe::Event::Resources {
                    cpu_s: process.cpu_s,
                    rss_bytes: process.rss_bytes,
                    host: host.reading,
                });
            }
        }
    });
}

/// The role's spec file, its addresses its own in a container; and the address it binds.
async fn spec_of(args: &Launch) -> Result<(PathBuf, IpAddr)> {
    let own = match (&args.own_address_in, &args.own_name) {
        (Some(cidr), _) => Some(crate::container::own_address_in(cidr)?.into()),
        (None, Some(name)) => Some(crate::deploy::lookup(name).await?),
        (None, None) => None,
    };
    let text = match (&args.spec, &args.spec_env, own) {
        // As the harness wrote it.
        (Some(path), _, None) => return Ok((path.clone(), args.bind_ip)),
        (Some(path), _, Some(_)) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read role spec {}", path.display()))?,
        (None, Some(var), _) => std::env::var(var)
            .with_context(|| format!("--spec-env {var}: the variable is not set"))?,
        (None, None, _) => bail!("give --spec FILE or --spec-env VAR"),
    };
    let text = match own {
        Some(own) => crate::deploy::settle(text, own, &args.resolve, &args.after).await?,
        None => text,
    };
    let path = std::env::temp_dir().join(format!("{}.json", args.name));
    probe::private::write(&path, text)?;
    Ok((path, own.unwrap_or(args.bind_ip)))
}
