//! Probing pools as a miner reaches them (`stratum-bench latency`): a TCP connect, then
//! SV1's `mining.subscribe` or SV2's Noise handshake and `SetupConnection`, each probe on
//! a fresh connection, every pool probed at once each interval.

use analysis::latency::{
    Failure, LatencyReport, LinkRtt, Probe, ProbeOutcome, SV1_SCHEME, SV2_SCHEME,
};
use anyhow::{bail, Context, Result};
use std::time::{Duration, Instant};
use stratum_apps::key_utils::Secp256k1PublicKey;
use sv1_wire::{Id, Message, Method, ParseError};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A pool to probe, from its URL.
#[derive(Debug, Clone)]
pub enum Target {
    /// `stratum+tcp://HOST:PORT`.
    Sv1 { host_port: String },
    /// `stratum2+tcp://HOST:PORT[/AUTHORITY_PUBKEY]`: with the pool's authority key
    /// (base58, as SV2 URLs carry it) the handshake checks it; without, any key is taken.
    Sv2 {
        host_port: String,
        authority: Option<Secp256k1PublicKey>,
    },
}

impl Target {
    pub fn parse(url: &str) -> Result<Target> {
        if let Some(rest) = url.strip_prefix(SV1_SCHEME) {
            Ok(Target::Sv1 {
                host_port: host_port(url, rest.trim_end_matches('/'))?,
            })
        } else if let Some(rest) = url.strip_prefix(SV2_SCHEME) {
            let (address, key) = rest.split_once('/').unwrap_or((rest, ""));
            let authority = match key {
                "" => None,
                key => Some(key.parse().map_err(|e| {
                    anyhow::anyhow!("{url}: {key:?} is not a base58 authority public key ({e:?})")
                })?),
            };
            Ok(Target::Sv2 {
                host_port: host_port(url, address)?,
                authority,
            })
        } else {
            bail!("{url}: a pool URL is stratum+tcp://HOST:PORT (SV1) or stratum2+tcp://HOST:PORT[/KEY] (SV2)")
        }
    }
}

fn host_port(url: &str, address: &str) -> Result<String> {
    match address.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
            Ok(address.to_string())
        }
        _ => bail!("{url}: {address:?} is not HOST:PORT"),
    }
}

/// Probes every URL each `interval` for `duration` (at least once), each probe given
/// `timeout`; the report of every probe.
pub async fn probe_all(
    urls: &[String],
    interval: Duration,
    duration: Duration,
    timeout: Duration,
) -> Result<LatencyReport> {
    let targets: Vec<Target> = urls
        .iter()
        .map(|u| Target::parse(u))
        .collect::<Result<_>>()?;
    let start = Instant::now();
    let mut probes = Vec::new();
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let t_s = start.elapsed().as_secs_f64();
        if !probes.is_empty() && start.elapsed() >= duration {
            break;
        }
        // The pools of a round are probed side by side.
        let round: Vec<_> = (targets.iter())
            .map(|t| tokio::spawn(probe_once(t.clone(), timeout)))
            .collect();
        for (url, probe) in urls.iter().zip(round) {
            let outcome = probe.await.unwrap_or_else(|e| ProbeOutcome::Failed {
                failure: Failure::Garbage,
                reason: format!("the probe failed: {e}"),
            });
            if let ProbeOutcome::Failed { failure, reason } = &outcome {
                tracing::info!(%url, failure = failure.name(), %reason, "probe failed");
            }
            probes.push(Probe {
                url: url.clone(),
                t_s,
                outcome,
            });
        }
    }
    Ok(LatencyReport::of(urls, interval.as_secs_f64(), probes))
}

/// A failed step: why, in the probe's words.
type Step<T> = std::result::Result<T, (Failure, String)>;

async fn probe_once(target: Target, timeout: Duration) -> ProbeOutcome {
    // One deadline for the whole probe: a pool that trickles its answer still fails.
    match tokio::time::timeout(timeout, measure(target)).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err((failure, reason))) => ProbeOutcome::Failed { failure, reason },
        Err(_) => ProbeOutcome::Failed {
            failure: Failure::Timeout,
            reason: format!("no answer within {timeout:?}"),
        },
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

async fn measure(target: Target) -> Step<ProbeOutcome> {
    let host_port = match &target {
        Target::Sv1 { host_port } | Target::Sv2 { host_port, .. } => host_port.clone(),
    };
    // The name is resolved before the clock starts: DNS is not the pool's round trip.
    let address = tokio::net::lookup_host(&host_port)
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| (Failure::Refused, format!("{host_port} does not resolve")))?;
    let t0 = Instant::now();
    let stream = TcpStream::connect(address)
        .await
        .map_err(|e| (Failure::Refused, format!("connect: {e}")))?;
    let connect_ms = ms(t0);
    let _ = stream.set_nodelay(true);
    match target {
        Target::Sv1 { .. } => {
            let t1 = Instant::now();
            subscribe(stream).await?;
            Ok(ProbeOutcome::Answered {
                connect_ms,
                handshake_ms: None,
                request_ms: ms(t1),
            })
        }
        Target::Sv2 { authority, .. } => {
            let t1 = Instant::now();
            let noise = stratum_apps::network_helpers::connect_with_noise(stream, authority)
                .await
                .map_err(|e| (Failure::Garbage, format!("Noise handshake: {e:?}")))?;
            let handshake_ms = ms(t1);
            let (mut reader, mut writer) = noise.into_split();
            let t2 = Instant::now();
            sv2::fleet::set_up_mining(&mut reader, &mut writer, address, "latency-probe", 0)
                .await
                .map_err(|e| (Failure::Garbage, format!("{e:#}")))?;
            Ok(ProbeOutcome::Answered {
                connect_ms,
                handshake_ms: Some(handshake_ms),
                request_ms: ms(t2),
            })
        }
    }
}

/// `mining.subscribe`, and the pool's answer to it (its id, a result, no error).
async fn subscribe(stream: TcpStream) -> Step<()> {
    let (read, mut write) = stream.into_split();
    let request = Message::Request {
        id: 1.into(),
        method: Method::Subscribe {
            user_agent: Some("stratum-bench-latency".into()),
        },
    };
    write
        .write_all(&request.to_line())
        .await
        .map_err(|e| (Failure::Refused, format!("write: {e}")))?;
    let mut read = BufReader::new(read);
    let mut line = Vec::new();
    // Lines before the answer (a notification a pool sends at once) are skipped.
    loop {
        line.clear();
        sv1::wire::read_raw_line(&mut read, &mut line)
            .await
            .map_err(|e| match e {
                sv1::wire::ReadError::Closed => {
                    (Failure::Refused, "closed before answering".into())
                }
                e => (Failure::Garbage, format!("read: {e}")),
            })?;
        let answer = match Message::parse(&line) {
            Ok(Message::Response(answer)) if answer.id == Id::from(1) => answer,
            Ok(_) | Err(ParseError::Params { .. }) => continue,
            Err(e) => {
                let start = String::from_utf8_lossy(&line[..line.len().min(80)]);
                return Err((Failure::Garbage, format!("{e}: {start:?}")));
            }
        };
        return if answer.result.is_null() || !answer.error.is_null() {
            Err((Failure::Garbage, format!("subscribe refused: {answer}")))
        } else {
            Ok(())
        };
    }
}

/// Writes the report to `path`.
pub fn write(report: &LatencyReport, path: &std::path::Path) -> Result<()> {
    crate::tap::write_json(path, report)
}

/// The settings that make a run's link the measured round trips
/// (`run --rtt-from`): SV1 sides get SV1's, SV2 sides SV2's; with one protocol measured,
/// every side gets it.
pub fn rtt_overrides(
    rtt: LinkRtt,
    sides: &[model::scenario::Side],
) -> Result<Vec<model::scenario::Setting>> {
    use model::scenario::Setting;
    let Some(any) = rtt.sv1.or(rtt.sv2) else {
        bail!("no pool in the latency file answered a probe: there is no round trip to use");
    };
    let mut overrides = vec![Setting::new("link.rtt_ms", rtt.sv1.unwrap_or(any))];
    for side in sides {
        let is_sv2 = side.config != model::scenario::Config::Sv1;
        if let (true, Some(rtt)) = (is_sv2, rtt.sv2) {
            overrides.push(Setting::new(format!("link.side_rtt_ms.{side}"), rtt));
        }
    }
    Ok(overrides)
}

/// Reads a file `stratum-bench latency` wrote.
pub fn read(path: &std::path::Path) -> Result<LatencyReport> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a file `stratum-bench latency` wrote",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_get_the_round_trip_of_a_pool_of_their_protocol() {
        let sides = ["sv1", "sv2-c", "sv2-d-2"]
            .map(|name| model::scenario::Side::try_from(name.to_string()).unwrap());
        let both = LinkRtt {
            sv1: Some(40.0),
            sv2: Some(90.0),
        };
        let text = |rtt| -> Vec<String> {
            (rtt_overrides(rtt, &sides).unwrap().iter())
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(
            text(both),
            [
                "link.rtt_ms=40.0",
                "link.side_rtt_ms.sv2-c=90.0",
                "link.side_rtt_ms.sv2-d-2=90.0"
            ]
        );
        // One protocol only: every side gets it.
        let only_sv2 = LinkRtt {
            sv1: None,
            sv2: Some(90.0),
        };
        assert_eq!(text(only_sv2)[0], "link.rtt_ms=90.0");
        let none = LinkRtt {
            sv1: None,
            sv2: None,
        };
        assert!(rtt_overrides(none, &sides).is_err());
    }

    #[test]
    fn pool_urls_name_their_protocol_and_bad_ones_say_why() {
        assert!(matches!(
            Target::parse("stratum+tcp://pool.example:3333"),
            Ok(Target::Sv1 { .. })
        ));
        assert!(matches!(
            Target::parse("stratum2+tcp://127.0.0.1:3336"),
            Ok(Target::Sv2 {
                authority: None,
                ..
            })
        ));
        let bad = Target::parse("http://pool:1").unwrap_err().to_string();
        assert!(bad.contains("stratum+tcp://"), "{bad}");
        let no_port = Target::parse("stratum+tcp://pool").unwrap_err().to_string();
        assert!(no_port.contains("HOST:PORT"), "{no_port}");
        assert!(Target::parse("stratum2+tcp://pool:1/notakey").is_err());
    }
}
