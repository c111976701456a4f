//! A code object's line number from an instruction's byte offset, through the line table
//! of its version: `co_lnotab` (3.6-3.9), `co_linetable` (3.10) and the location table
//! (3.11+). Each function follows the CPython function named in its doc, byte for byte, so
//! that a line here is the line CPython's own traceback prints; none reads past the table,
//! whatever its bytes (they come from the target's memory).

/// 3.8/3.9 `co_lnotab`, as `PyCode_Addr2Line` reads it (`Objects/codeobject.c`): pairs of
/// (address increment, signed line increment); `addr` is the byte offset (`f_lasti`).
pub(crate) fn lnotab_line(table: &[u8], first_line: i64, addr: u64) -> i64 {
    let mut line = first_line;
    let mut at: u64 = 0;
    for pair in table.chunks_exact(2) {
        at += u64::from(pair[0]);
        if at > addr {
            break;
        }
        line = line.saturating_add(i64::from(pair[1] as i8));
    }
    line
}

/// 3.10 `co_linetable`, as `_PyCode_CheckLineNumber` walks it forward from
/// `PyLineTable_InitAddressRange`: pairs of (byte delta, signed line delta), a line delta of
/// -128 meaning "no line" (answered as `None`, where CPython answers -1).
pub(crate) fn linetable_310_line(table: &[u8], first_line: i64, addr: u64) -> Option<i64> {
    let mut pairs = table.chunks_exact(2);
    let (mut start, mut end): (i64, i64) = (-1, 0);
    let mut computed = first_line;
    let mut line = None;
    let addr = i64::try_from(addr).ok()?;
    let mut advance = |start: &mut i64, end: &mut i64, line: &mut Option<i64>| -> bool {
        let Some(pair) = pairs.next() else {
            return false;
        };
        *start = *end;
        *end += i64::from(pair[0]);
        let delta = pair[1] as i8;
        if delta == -128 {
            *line = None;
        } else {
            computed = computed.saturating_add(i64::from(delta));
            *line = Some(computed);
        }
        true
    };
    while end <= addr {
        if !advance(&mut start, &mut end, &mut line) {
            return None;
        }
        while start == end {
            if !advance(&mut start, &mut end, &mut line) {
                return None;
            }
        }
    }
    line
}

/// 3.11+ location table (`Objects/locations.md`), as `_PyCode_CheckLineNumber` walks it
/// forward: entries of a first byte with the high bit set (code in bits 3-6, length in code
/// units in bits 0-2, minus one) and varint operands. `None` for "no location".
pub(crate) fn location_table_line(table: &[u8], first_line: i64, addr: u64) -> Option<i64> {
    let addr = i64::try_from(addr).ok()?;
    let mut at = 0usize;
    let mut computed = first_line;
    let mut end: i64 = 0;
    let mut line = None;
    while end <= addr {
        let first = *table.get(at)?;
        computed = computed.saturating_add(location_line_delta(table, at));
        line = ((first >> 3) != 0x1f).then_some(computed);
        end += (i64::from(first & 7) + 1) * 2;
        at += 1;
        while table.get(at).is_some_and(|byte| byte & 0x80 == 0) {
            at += 1;
        }
    }
    line
}

/// `get_line_delta` of `Objects/codeobject.c`: the line change an entry makes.
fn location_line_delta(table: &[u8], at: usize) -> i64 {
    let Some(&first) = table.get(at) else {
        return 0;
    };
    match (first >> 3) & 15 {
        // PY_CODE_LOCATION_INFO_NO_COLUMNS, PY_CODE_LOCATION_INFO_LONG
        13 | 14 => signed_varint(table, at + 1),
        // PY_CODE_LOCATION_INFO_ONE_LINE1, _ONE_LINE2
        11 => 1,
        12 => 2,
        // NONE, ONE_LINE0 and the short forms stay on the line.
        _ => 0,
    }
}

/// `scan_signed_varint`: 6-bit groups, least significant first, bit 6 set on all but the
/// last; the lowest bit of the value is the sign. At most 10 groups are read (a longer
/// run is garbage: its value is cut, never a panic).
fn signed_varint(table: &[u8], mut at: usize) -> i64 {
    let mut value: u64 = 0;
    for shift in (0..60).step_by(6) {
        let Some(&byte) = table.get(at) else {
            break;
        };
        value |= u64::from(byte & 63) << shift;
        at += 1;
        if byte & 64 == 0 {
            break;
        }
    }
    let magnitude = i64::try_from(value >> 1).unwrap_or(i64::MAX);
    if value & 1 == 1 {
        -magnitude
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lnotab_adds_line_increments_up_to_the_offset() {
        // Bytes 0-5 on line 10, 6-9 on 12, 10.. on 11.
        let table = [6, 2, 4, (-1i8) as u8];
        assert_eq!(lnotab_line(&table, 10, 0), 10);
        assert_eq!(lnotab_line(&table, 10, 5), 10);
        assert_eq!(lnotab_line(&table, 10, 6), 12);
        assert_eq!(lnotab_line(&table, 10, 12), 11);
        assert_eq!(lnotab_line(&[7], 3, 100), 3, "an odd byte is ignored");
    }

    #[test]
    fn linetable_310_ranges_and_no_line() {
        // 0..4 line 1+1, 4..8 no line, 8..10 line 2+3.
        let table = [4, 1, 4, 0x80, 2, 3];
        assert_eq!(linetable_310_line(&table, 1, 0), Some(2));
        assert_eq!(linetable_310_line(&table, 1, 3), Some(2));
        assert_eq!(linetable_310_line(&table, 1, 4), None);
        assert_eq!(linetable_310_line(&table, 1, 9), Some(5));
        assert_eq!(linetable_310_line(&table, 1, 10), None, "past the table");
    }

    #[test]
    fn location_table_entries() {
        // Entry 1: code 13 (no columns), 1 unit, line delta +2 (varint 4).
        // Entry 2: code 11 (one line, +1), 2 units, two column bytes.
        // Entry 3: code 15 (none), 1 unit.
        // Entry 4: code 14 (long), 1 unit, line delta -3 (varint 7), end line, cols.
        let table = [
            0x80 | (13 << 3),
            4,
            0x80 | (11 << 3) | 1,
            5,
            9,
            0x80 | (15 << 3),
            0x80 | (14 << 3),
            7,
            0,
            1,
            2,
        ];
        assert_eq!(location_table_line(&table, 10, 0), Some(12));
        assert_eq!(location_table_line(&table, 10, 2), Some(13));
        assert_eq!(location_table_line(&table, 10, 5), Some(13));
        assert_eq!(location_table_line(&table, 10, 6), None);
        assert_eq!(location_table_line(&table, 10, 8), Some(10));
        assert_eq!(location_table_line(&table, 10, 10), None, "past the table");
    }

    #[test]
    fn hostile_tables_end_cleanly() {
        let ones = [0xffu8; 64];
        let _ = location_table_line(&ones, i64::MAX, u64::MAX);
        let _ = location_table_line(&[0x80 | (14 << 3), 0x7f, 0x7f], 0, 100);
        let _ = linetable_310_line(&ones, i64::MIN, u64::MAX);
        let _ = lnotab_line(&ones, 0, u64::MAX);
    }
}
