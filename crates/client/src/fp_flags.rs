//! Keeps the floating-point exception flags clear before calls made once
//! per row, because the client library is several times dearer otherwise.
//!
//! Why: every call into the client library enters through Firebird's
//! `FpeControl` (yvalve, `why.cpp`), which reads the whole floating-point
//! environment and compares it byte for byte with a clean one. The sticky
//! status flags are part of it, so once any earlier arithmetic in the
//! thread has left one set (an inexact division is enough; threads inherit
//! them from the thread that started them), every call also resets the
//! environment on entry and restores it on exit: two `fesetenv` per
//! fetched row, 7% of fbunload's CPU over TCP. Clearing the flags changes
//! no result (nothing here reads them), and the check costs one register
//! read. Only x86 needs it: on Windows `FpeControl` compares the control
//! word alone, and other targets are left as they are.

/// The six SSE exception flags in MXCSR: invalid, denormal, divide by
/// zero, overflow, underflow, inexact. The masks and rounding mode above
/// them are left alone.
#[cfg(all(not(windows), any(target_arch = "x86_64", target_arch = "x86")))]
const FLAGS: u32 = 0x3f;

/// Clears the SSE exception flags if any is set.
#[inline]
pub fn clear_sticky_exception_flags() {
    #[cfg(all(not(windows), any(target_arch = "x86_64", target_arch = "x86")))]
    {
        let csr = mxcsr();
        if csr & FLAGS != 0 {
            let cleared = csr & !FLAGS;
            // SAFETY: loads MXCSR from a valid u32 whose masks and rounding
            // mode are the ones just read, as Rust assumes them.
            unsafe {
                std::arch::asm!("ldmxcsr [{}]", in(reg) &cleared,
                    options(nostack, readonly, preserves_flags));
            }
        }
    }
}

#[cfg(all(not(windows), any(target_arch = "x86_64", target_arch = "x86")))]
#[inline]
fn mxcsr() -> u32 {
    let mut csr: u32 = 0;
    // SAFETY: stores MXCSR into a valid u32; no other effect.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr,
            options(nostack, preserves_flags));
    }
    csr
}

#[cfg(all(test, not(windows), any(target_arch = "x86_64", target_arch = "x86")))]
mod tests {
    use super::*;

    #[test]
    fn an_inexact_division_leaves_a_flag_that_is_then_cleared() {
        let third = std::hint::black_box(1.0f64) / std::hint::black_box(3.0f64);
        assert!(third > 0.0);
        let before = mxcsr();
        assert_ne!(before & 0x20, 0, "1/3 sets the inexact flag");
        clear_sticky_exception_flags();
        let after = mxcsr();
        assert_eq!(after & 0x3f, 0);
        assert_eq!(
            after & !0x3f,
            before & !0x3f,
            "masks and rounding unchanged"
        );
    }
}
