#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| report::fuzzing::run_directory(data));
