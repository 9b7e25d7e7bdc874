//! AFL harness of `ebb_fuzz_targets::replicas_config` (see fuzz/README.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        ebb_fuzz_targets::replicas_config(data);
    });
}
