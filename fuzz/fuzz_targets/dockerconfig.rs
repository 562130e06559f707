#![no_main]
#[path = "../harness.rs"]
#[allow(dead_code)] // each target uses one of the harness functions
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::dockerconfig(data));
