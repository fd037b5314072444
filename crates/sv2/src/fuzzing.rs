//! Entry points for the fuzz targets (`fuzz/` at the repository root) and for the replay of
//! their seeds in `make test` (crates/cli/tests/fuzz_corpus.rs). Each feeds arbitrary bytes, as decrypted SV2
//! frames, to a role the way its connection does, and must return without panicking.

use crate::fleet::{self, ChannelKind};
use crate::tap;
use mining::hashing::Work as _;
use probe::{mono_ns, Recorder};
use stratum_apps::stratum_core::codec_sv2::SerializedFrame;

/// Bytes of an SV2 frame header: extension type (2), message type (1), payload length (3).
const HEADER_SIZE: usize = 6;

/// The frames `data` holds back to back, each as its header's length says; a last frame
/// cut short is dropped, as a reader would wait for the rest.
fn frames(mut data: &[u8]) -> impl Iterator<Item = SerializedFrame> + '_ {
    std::iter::from_fn(move || {
        let header = data.get(..HEADER_SIZE)?;
        let length = u32::from_le_bytes([header[3], header[4], header[5], 0]) as usize;
        let whole = data.get(..HEADER_SIZE + length)?;
        data = &data[whole.len()..];
        // The frame's buffer is a Vec or a pooled slice, as codec_sv2's features say.
        #[allow(clippy::useless_conversion)]
        SerializedFrame::from_bytes(whole.to_vec().into()).ok()
    })
}

/// The SV2 tap seeing a connection's frames. Each frame is preceded by a byte saying its
/// direction (even: downstream to the pool, odd: the pool to downstream).
pub fn tap_frames(data: &[u8]) {
    let pending = tap::Pending::default();
    let recorder = Recorder::disabled();
    let mut rest = data;
    while let Some((direction, after)) = rest.split_first() {
        let Some(mut frame) = frames(after).next() else {
            return;
        };
        rest = &after[frame.encoded_length()..];
        match direction % 2 {
            0 => tap::note_request(&mut frame, &pending),
            _ => tap::note_answer(&mut frame, 0, &pending, &recorder),
        }
    }
}

/// Our SV2 miner reading frames from its pool (or translator, or JDC), hashing on the jobs
/// they give it and building the shares it finds. The first byte picks the channel kind.
pub fn miner_frames(data: &[u8]) {
    let Some((kind, data)) = data.split_first() else {
        return;
    };
    let channel = match kind % 2 {
        0 => ChannelKind::Extended,
        _ => ChannelKind::Standard,
    };
    let (slot, _shares) = fleet::Slot::new();
    let mut miner = fleet::Miner::new(0, channel, slot.clone());
    let recorder = Recorder::disabled();
    for frame in frames(data) {
        let Ok(Some(message)) = fleet::decode_mining(frame) else {
            continue;
        };
        // An error ends a real miner's connection; here the next frame is read anyway, so
        // one input reaches further.
        let _ = miner.handle(&message, mono_ns(), &recorder);
        let mut found = Vec::new();
        slot.with(|work| work.hash(256, &mut found));
        for share in found {
            miner.share(share);
        }
    }
}
