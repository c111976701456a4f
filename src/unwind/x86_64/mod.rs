//! x86_64: its registers ([`regs`]) and its step from a frame to its caller ([`rules`]),
//! beside aarch64's in [`super::aarch64`]; what both share is in [`super::arch`] and
//! [`super::regs`].

mod regs;
mod rules;

pub use regs::RegsX86_64;
#[cfg(test)]
pub(super) use rules::{RuleX86_64, SavedX86_64};
