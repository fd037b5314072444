//! Entry points for the fuzz targets (`fuzz/` at the repository root) and for the replay of
//! their seeds in `make test` (crates/cli/tests/fuzz_corpus.rs). Each feeds arbitrary bytes, as decrypted SV2
//! frames, to a role the way its connection does, and must return without panicking.

use crate::fleet::{self, ChannelKind};
use crate::tap;
use mining::hashing::Work as _;
use probe::{mono_ns, Recorder};
use stratum_apps::stratum_core::codec_sv2::SerializedFrame;
use stratum_apps::stratum_core::framing_sv2::header::Header;

/// The frame at the start of `data`, as its header's length says, and `data` moved past
/// it; `None` when `data` holds no whole frame (a reader would wait for the rest).
fn next_frame(data: &mut &[u8]) -> Option<SerializedFrame> {
    let header = Header::from_bytes(data).ok()?;
    let whole = data.get(..Header::SIZE + header.payload_length())?;
    *data = &data[whole.len()..];
    // The frame's buffer is a Vec or a pooled slice, as codec_sv2's features say.
    #[allow(clippy::useless_conversion)]
    let bytes = whole.to_vec().into();
    Some(SerializedFrame::from_parts(header, bytes))
}

/// The SV2 tap seeing a connection's frames. Each frame is preceded by a byte saying its
/// direction (even: downstream to the pool, odd: the pool to downstream).
pub fn tap_frames(data: &[u8]) {
    let pending = tap::Pending::default();
    let recorder = Recorder::disabled();
    let stats = probe::TapStats::default();
    let mut rest = data;
    while let Some((direction, after)) = rest.split_first() {
        rest = after;
        let Some(mut frame) = next_frame(&mut rest) else {
            return;
        };
        match direction % 2 {
            0 => tap::note_request(&mut frame, &pending),
            _ => tap::note_answer(&mut frame, 0, &pending, &recorder, &stats),
        }
    }
}

/// Our SV2 miner reading frames from its pool (or translator, or JDC), hashing on the jobs
/// they give it and building the shares it finds. The first byte picks the channel kind:
/// extended, standard, or standard in a group.
pub fn miner_frames(data: &[u8]) {
    let Some((kind, mut data)) = data.split_first() else {
        return;
    };
    let (channel, grouped) = match kind % 3 {
        0 => (ChannelKind::Extended, false),
        1 => (ChannelKind::Standard, false),
        _ => (ChannelKind::Standard, true),
    };
    let (slot, _shares) = fleet::Slot::new();
    let mut miner = fleet::Miner::new(0, channel, grouped, slot.clone());
    let recorder = Recorder::disabled();
    while let Some(frame) = next_frame(&mut data) {
        let Ok(Some(message)) = fleet::decode_mining(frame) else {
            continue;
        };
        // An error ends a real miner's connection; here the next frame is read anyway, so
        // one input reaches further.
        let _ = miner.handle(message, mono_ns(), &recorder);
        let mut found = Vec::new();
        slot.with(|work| work.hash(256, &mut found));
        for share in found {
            miner.share(share);
        }
    }
}
