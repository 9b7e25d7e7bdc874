//! AFL harness of `ebb_fuzz_targets::webhook` (see fuzz/README.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        ebb_fuzz_targets::webhook(data);
    });
}
