//! aarch64: its registers ([`regs`]) and its step from a frame to its caller ([`rules`]),
//! beside x86_64's in [`super::x86_64`]; what both share is in [`super::arch`] and
//! [`super::regs`].

mod regs;
mod rules;

pub use regs::RegsAarch64;
#[cfg(test)]
pub(super) use rules::RuleAarch64;
