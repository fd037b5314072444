#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sv2::fuzzing::tap_frames(data));
