//! AFL harness of `ebb_fuzz_targets::windows` (see fuzz/README.md).
fn main() {
    afl::fuzz!(|data: &[u8]| {
        ebb_fuzz_targets::windows(data);
    });
}
