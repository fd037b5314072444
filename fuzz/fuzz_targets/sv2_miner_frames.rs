#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sv2::fuzzing::miner_frames(data));
