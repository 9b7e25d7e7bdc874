//! How much work the engine did on this thread: one step per open period computed and per fire
//! time or day examined. Tests hold each question to a step budget, since wall time is useless
//! in debug builds on shared cores; the bench times the same questions in a release build.

use std::cell::Cell;

thread_local! {
    static STEPS: Cell<u64> = const { Cell::new(0) };
}

/// Counts one step.
pub(crate) fn step() {
    STEPS.with(|steps| steps.set(steps.get().wrapping_add(1)));
}

/// Steps taken on this thread so far (compare two readings around a question).
pub fn steps() -> u64 {
    STEPS.with(Cell::get)
}

/// The steps `question` took on this thread, with its answer.
pub fn counted<T>(question: impl FnOnce() -> T) -> (T, u64) {
    let before = steps();
    let answer = question();
    (answer, steps().wrapping_sub(before))
}
