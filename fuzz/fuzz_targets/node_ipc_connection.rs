#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| node::fuzzing::ipc_connection(data));
