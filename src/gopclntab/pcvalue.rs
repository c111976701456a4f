//! Go's varint-coded "pc-value" tables: a run of (value delta, pc delta) pairs that give a
//! value (a line, a file number, an SP delta, an inline-tree index) for every PC of one
//! function. Layout as Go's runtime (`pcvalue`, `step` in runtime/symtab.go) reads it:
//! the value starts at -1 and the PC at the function's entry; each step adds a zig-zag
//! value delta and then an unsigned PC delta times the table's quantum; the value holds for
//! the PCs before the new PC. A zero value delta after the first pair ends the table.

/// Why a table could not be read, said by the caller with the file's name.
pub(crate) type Problem = String;

/// Reads one unsigned varint (at most 32 bits, as Go writes them) at `*pos` of `data`,
/// advancing `*pos`. `Err` when it runs past the end or over five bytes.
pub(crate) fn uvarint(data: &[u8], pos: &mut usize) -> Result<u32, Problem> {
    let mut value: u32 = 0;
    for shift in (0..35).step_by(7) {
        let Some(&byte) = data.get(*pos) else {
            return Err(format!("a varint at {:#x} runs past the table's end", *pos));
        };
        *pos += 1;
        // The fifth byte may hold only the top 4 bits of a u32.
        if shift == 28 && byte > 0x0f {
            return Err(format!(
                "a varint ending at {:#x} does not fit 32 bits",
                *pos
            ));
        }
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(format!(
        "a varint ending at {:#x} does not fit 32 bits",
        *pos
    ))
}

/// The value the table at `start` of `data` gives `target`, for a function whose code starts
/// at `entry` and ends before `end`; `Ok(None)` when the table ends before reaching `target`.
/// Work is bounded by the table's bytes (every step reads at least two) and stops as soon as
/// the PC passes `end`.
pub(crate) fn value_at(
    data: &[u8],
    start: usize,
    quantum: u8,
    entry: u64,
    end: u64,
    target: u64,
) -> Result<Option<i32>, Problem> {
    if target < entry || target >= end {
        return Ok(None);
    }
    let mut pos = start;
    let mut value: i32 = -1;
    let mut pc = entry;
    let mut first = true;
    loop {
        let raw = uvarint(data, &mut pos)?;
        if raw == 0 && !first {
            return Ok(None);
        }
        first = false;
        // Zig-zag: the low bit says negative.
        let delta = if raw & 1 != 0 {
            !(raw >> 1) as i32
        } else {
            (raw >> 1) as i32
        };
        value = value.wrapping_add(delta);
        let pc_delta = u64::from(uvarint(data, &mut pos)?) * u64::from(quantum.max(1));
        pc = pc.saturating_add(pc_delta);
        if target < pc {
            return Ok(Some(value));
        }
        if pc >= end {
            return Ok(None);
        }
    }
}

/// Every (start, end, value) run of the table at `start`, at most `limit` of them (for the
/// unwinder's and tests' whole-function views).
#[cfg(test)]
pub(crate) fn runs(
    data: &[u8],
    start: usize,
    quantum: u8,
    entry: u64,
    limit: usize,
) -> Result<Vec<(u64, u64, i32)>, Problem> {
    let mut out = Vec::new();
    let mut pos = start;
    let mut value: i32 = -1;
    let mut pc = entry;
    while out.len() < limit {
        let raw = uvarint(data, &mut pos)?;
        if raw == 0 && !out.is_empty() {
            break;
        }
        let delta = if raw & 1 != 0 {
            !(raw >> 1) as i32
        } else {
            (raw >> 1) as i32
        };
        value = value.wrapping_add(delta);
        let next = pc.saturating_add(u64::from(uvarint(data, &mut pos)?) * u64::from(quantum));
        out.push((pc, next, value));
        pc = next;
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes a table as Go's linker does (cmd/internal/obj's funcpctab): zig-zag value
    /// deltas and PC deltas divided by the quantum, ended by a zero byte.
    pub(crate) fn encode(pairs: &[(i32, u64)], quantum: u8) -> Vec<u8> {
        let mut out = Vec::new();
        let mut value = -1i32;
        let put = |out: &mut Vec<u8>, mut v: u32| loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        };
        for &(next, pc_delta) in pairs {
            let delta = next.wrapping_sub(value);
            let zz = if delta < 0 {
                ((!delta as u32) << 1) | 1
            } else {
                (delta as u32) << 1
            };
            put(&mut out, zz);
            put(&mut out, (pc_delta / u64::from(quantum)) as u32);
            value = next;
        }
        out.push(0);
        out
    }

    #[test]
    fn values_by_pc() {
        let table = encode(&[(10, 4), (12, 8), (11, 4)], 1);
        let at = |pc| value_at(&table, 0, 1, 0x1000, 0x1010, pc).unwrap();
        assert_eq!(at(0x1000), Some(10));
        assert_eq!(at(0x1003), Some(10));
        assert_eq!(at(0x1004), Some(12));
        assert_eq!(at(0x100b), Some(12));
        assert_eq!(at(0x100c), Some(11));
        assert_eq!(at(0x0fff), None);
        assert_eq!(at(0x1010), None);
        assert_eq!(
            runs(&table, 0, 1, 0x1000, 10).unwrap(),
            vec![
                (0x1000, 0x1004, 10),
                (0x1004, 0x100c, 12),
                (0x100c, 0x1010, 11)
            ]
        );
        // A quantum of 4 (arm64) scales the PC deltas.
        let table = encode(&[(0, 8), (16, 8)], 4);
        assert_eq!(value_at(&table, 0, 4, 0, 16, 9).unwrap(), Some(16));
    }

    #[test]
    fn hostile_varints() {
        // Never ends: every byte has its continuation bit.
        let endless = vec![0x80u8; 1000];
        assert!(value_at(&endless, 0, 1, 0, 100, 50).is_err());
        // Over 32 bits.
        assert!(uvarint(&[0xff, 0xff, 0xff, 0xff, 0x7f], &mut 0).is_err());
        assert_eq!(
            uvarint(&[0xff, 0xff, 0xff, 0xff, 0x0f], &mut 0),
            Ok(u32::MAX)
        );
        // Truncated mid-table.
        let mut table = encode(&[(10, 4), (12, 8)], 1);
        table.truncate(3);
        assert!(value_at(&table, 0, 1, 0, 100, 50).is_err());
        // Starts past the end.
        assert!(value_at(&table, 99, 1, 0, 100, 50).is_err());
    }
}
