//! AFL harness of `ebb_fuzz_targets::cron` (see fuzz/README.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        ebb_fuzz_targets::cron(data);
    });
}
