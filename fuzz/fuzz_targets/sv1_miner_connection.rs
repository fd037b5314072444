#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sv1::fuzzing::miner_connection(data));
